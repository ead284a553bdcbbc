// rmsnorm — Gemma's RMSNorm (weight used directly, not 1 + w) over rows, and the residual update that
// follows every attention and MLP block: x = (x + RMSNorm(t)) * scalar. One block per row; the sum of
// squares runs in a fixed order (thread-strided, then a fixed block tree), so it is the same for a row in
// any launch.
#include "common.cuh"
#include "kernels.h"

#define THREADS 256

__global__ void rmsnorm_kernel(const float *__restrict__ x, const float *__restrict__ w, float eps, int n,
                               float *__restrict__ y32, uint16_t *__restrict__ y16)
{
    __shared__ float scratch[32];
    const float *row = x + (size_t)blockIdx.x * n;
    float ss = 0.0f, scale;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
    ss = block_sum(ss, scratch);
    scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = row[i] * scale * (w ? w[i] : 1.0f);
        if (y32) y32[(size_t)blockIdx.x * n + i] = v;
        if (y16) y16[(size_t)blockIdx.x * n + i] = f32_to_bf16_bits(v);
    }
}

__global__ void residual_norm_add_kernel(float *__restrict__ x, const float *__restrict__ t, const float *__restrict__ w,
                                         float eps, float scalar, int n)
{
    __shared__ float scratch[32];
    const float *tr = t + (size_t)blockIdx.x * n;
    float *xr = x + (size_t)blockIdx.x * n;
    float ss = 0.0f, scale;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += tr[i] * tr[i];
    ss = block_sum(ss, scratch);
    scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) xr[i] = (xr[i] + tr[i] * scale * w[i]) * scalar;
}

extern "C" void kern_rmsnorm(const float *x, const float *w, float eps, int rows, int n, float *y32, uint16_t *y16,
                             kern_stream s)
{
    if (rows == 0) return;
    rmsnorm_kernel<<<rows, THREADS, 0, s>>>(x, w, eps, n, y32, y16);
    KERN_LAUNCHED();
}

extern "C" void kern_residual_norm_add(float *x, const float *t, const float *w, float eps, float scalar, int rows,
                                       int n, kern_stream s)
{
    if (rows == 0) return;
    residual_norm_add_kernel<<<rows, THREADS, 0, s>>>(x, t, w, eps, scalar, n);
    KERN_LAUNCHED();
}
