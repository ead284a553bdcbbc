// qkv_prep — after the q/k/v projections, per row and head: RMSNorm of each query head (q_norm) then RoPE;
// of each key head (k_norm) then RoPE, stored bf16 for the cache; weightless RMSNorm of each value head,
// stored bf16. One warp per (row, head); RoPE pairs (i, i + D/2) rotate by pos * inv_freq[i] (zeros: the
// proportional RoPE's untouched channels).
#include "common.cuh"
#include "kernels.h"

#define MAX_D 512

__global__ void qkv_prep_kernel(float *__restrict__ q, const float *__restrict__ k_raw, const float *__restrict__ v_raw,
                                const float *__restrict__ q_norm, const float *__restrict__ k_norm,
                                const float *__restrict__ inv_freq, const struct kern_row *__restrict__ meta, float eps,
                                int n_heads, int n_kv, int D, uint16_t *__restrict__ k_out, uint16_t *__restrict__ v_out)
{
    __shared__ float buf[MAX_D];
    int r = blockIdx.x, h = blockIdx.y, lane = threadIdx.x, kind, head;
    const float *src, *w;
    float ss = 0.0f, scale;
    if (h < n_heads) {
        kind = 0, head = h, src = q + ((size_t)r * n_heads + head) * D, w = q_norm;
    } else if (h < n_heads + n_kv) {
        kind = 1, head = h - n_heads, src = k_raw + ((size_t)r * n_kv + head) * D, w = k_norm;
    } else {
        kind = 2, head = h - n_heads - n_kv, src = v_raw + ((size_t)r * n_kv + head) * D, w = NULL;
    }
    for (int i = lane; i < D; i += 32) ss += src[i] * src[i];
    ss = warp_sum(ss);
    scale = 1.0f / sqrtf(ss / (float)D + eps);
    for (int i = lane; i < D; i += 32) buf[i] = w ? src[i] * scale * w[i] : src[i] * scale;
    __syncwarp();
    if (kind == 2) {
        for (int i = lane; i < D; i += 32) v_out[((size_t)r * n_kv + head) * D + i] = f32_to_bf16_bits(buf[i]);
        return;
    }
    float pos = (float)meta[r].pos;
    for (int i = lane; i < D / 2; i += 32) {
        float a = buf[i], b = buf[i + D / 2], c = 1.0f, sn = 0.0f;
        if (inv_freq[i] != 0.0f) sincosf(pos * inv_freq[i], &sn, &c);
        float x0 = inv_freq[i] != 0.0f ? a * c - b * sn : a, x1 = inv_freq[i] != 0.0f ? b * c + a * sn : b;
        if (kind == 0) {
            float *dst = q + ((size_t)r * n_heads + head) * D;
            dst[i] = x0;
            dst[i + D / 2] = x1;
        } else {
            uint16_t *dst = k_out + ((size_t)r * n_kv + head) * D;
            dst[i] = f32_to_bf16_bits(x0);
            dst[i + D / 2] = f32_to_bf16_bits(x1);
        }
    }
}

extern "C" void kern_qkv_prep(float *q, const float *k_raw, const float *v_raw, const float *q_norm,
                              const float *k_norm, const float *inv_freq, const struct kern_row *rows_meta, float eps,
                              int rows, int n_heads, int n_kv, int D, uint16_t *k_out, uint16_t *v_out, kern_stream s)
{
    dim3 grid(rows, n_heads + 2 * n_kv);
    if (rows == 0) return;
    if (D > MAX_D || D % 2) {
        fprintf(stderr, "g4: fatal: kern_qkv_prep: head dim %d unsupported (even, <= %d)\n", D, MAX_D);
        abort();
    }
    qkv_prep_kernel<<<grid, 32, 0, s>>>(q, k_raw, v_raw, q_norm, k_norm, inv_freq, rows_meta, eps, n_heads, n_kv, D,
                                        k_out, v_out);
    KERN_LAUNCHED();
}
