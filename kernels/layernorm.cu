// layernorm — torch's LayerNorm (biased variance, eps 1e-5 in the image embedder) over rows, fp32 math,
// two passes over the row in a fixed order; writes fp32 and/or bf16.
#include "common.cuh"
#include "kernels.h"

__global__ void layernorm_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ b,
                                 float eps, int n, float *__restrict__ y32, uint16_t *__restrict__ y16)
{
    kern_dep_launch();
    kern_dep_wait();
    __shared__ float scratch[32];
    const float *row = x + (size_t)blockIdx.x * n;
    float s = 0.0f, mean, var = 0.0f, inv;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
    mean = block_sum(s, scratch) / (float)n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) var += (row[i] - mean) * (row[i] - mean);
    var = block_sum(var, scratch) / (float)n;
    inv = 1.0f / sqrtf(var + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ((row[i] - mean) * inv) * w[i] + b[i];
        if (y32) y32[(size_t)blockIdx.x * n + i] = v;
        if (y16) y16[(size_t)blockIdx.x * n + i] = f32_to_bf16_bits(v);
    }
}

extern "C" void kern_layernorm(const float *x, const float *w, const float *b, float eps, int rows, int n, float *y32,
                               uint16_t *y16, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(layernorm_kernel, dim3(rows), dim3(256), 0, s, x, w, b, eps, n, y32, y16);
    KERN_LAUNCHED();
}
