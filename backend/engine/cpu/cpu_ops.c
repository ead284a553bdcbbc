/* cpu_ops — fp32 kernels for the CPU reference engine (see cpu_ops.h). Plain C the compiler can vectorize;
 * no intrinsics, so the same code runs anywhere the build machine does. */
#include "engine/cpu/cpu_ops.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

static inline float sum8(const float a[8])
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

float cpu_dot_bf16(const float *x, const uint16_t *w, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) {
            union { uint32_t u; float f; } v = {.u = (uint32_t)w[i + k] << 16};
            acc[k] += x[i + k] * v.f;
        }
    for (int k = 0; i < n; i++, k++) acc[k] += x[i] * bf16_to_f32(w[i]);
    return sum8(acc);
}

float cpu_dot_f32(const float *a, const float *b, int n)
{
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += a[i] * b[i];
    return sum8(acc);
}

struct matmul_job {
    const float *x;
    int T, I, O;
    const uint16_t *w;
    const float *bias;
    float *y;
};

/* Outputs [begin, end) for every row: one weight row stays hot while the rows stream past it. */
static void matmul_range(void *ctx, int begin, int end)
{
    const struct matmul_job *j = ctx;
    for (int o = begin; o < end; o++) {
        const uint16_t *wr = j->w + (size_t)o * j->I;
        float b = j->bias ? j->bias[o] : 0.0f;
        for (int t = 0; t < j->T; t++) j->y[(size_t)t * j->O + o] = cpu_dot_bf16(j->x + (size_t)t * j->I, wr, j->I) + b;
    }
}

void cpu_matmul_bf16(struct pool *p, const float *x, int T, int I, const uint16_t *w, int O, const float *bias,
                     float *y)
{
    struct matmul_job j = {x, T, I, O, w, bias, y};
    pool_run(p, matmul_range, &j, O);
}

void cpu_rmsnorm(const float *x, int n, const float *w, float eps, float *y)
{
    double ss = 0;
    float scale;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    scale = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) y[i] = w ? x[i] * scale * w[i] : x[i] * scale;
}

void cpu_layernorm(const float *x, int n, const float *w, const float *b, float eps, float *y)
{
    double mean = 0, var = 0;
    float inv;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += ((double)x[i] - mean) * ((double)x[i] - mean);
    inv = (float)(1.0 / sqrt(var / n + eps));
    for (int i = 0; i < n; i++) y[i] = ((float)(x[i] - mean) * inv) * w[i] + b[i];
}

void cpu_rope(float *x, int d, const float *inv_freq, int pos)
{
    int h = d / 2;
    for (int i = 0; i < h; i++) {
        float ang, c, s, a, b;
        if (inv_freq[i] == 0.0f) continue;
        ang = (float)pos * inv_freq[i];
        c = cosf(ang);
        s = sinf(ang);
        a = x[i];
        b = x[i + h];
        x[i] = a * c - b * s;
        x[i + h] = b * c + a * s;
    }
}

void cpu_round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = bf16_to_f32(f32_to_bf16(x[i]));
}

float cpu_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void cpu_rope_inv_freq(float *inv_freq, int d, double theta, int rotary_pairs)
{
    G4_CHECK(rotary_pairs >= 0 && rotary_pairs <= d / 2, "rotary pairs %d for head dim %d", rotary_pairs, d);
    for (int i = 0; i < d / 2; i++) {
        if (i < rotary_pairs) {
            float e = (float)(2 * i) / (float)d;
            inv_freq[i] = 1.0f / powf((float)theta, e);
        } else {
            inv_freq[i] = 0.0f;
        }
    }
}
