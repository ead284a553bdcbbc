// rmsnorm — Gemma's RMSNorm (weight used directly, not 1 + w) over rows (also over a gathered list of rows,
// for the logits), and the residual update that follows every attention and MLP block: x = (x + RMSNorm(t))
// * scalar, fused with the next block's input norm.
//
// One block of NR_THREADS (512) threads per row. A decode step runs these on one row, where a loop of dependent
// loads would cost a memory latency per element: each thread loads its (at most NR_VEC_MAX) float4 pieces of
// the row at once, keeps them in registers, and the row is read once and written once. The arithmetic and
// the order of the sums are norm_rows.cuh's, which the decode product's tail shares (gemm_tail.cuh), so a
// row's result is the same in any launch and in either form. Rows whose length is not a multiple of 4 or is
// too long take the scalar loop (never the tail).
#include "common.cuh"
#include "kernels.h"
#include "norm_rows.cuh"

#define THREADS NR_THREADS
#define VEC_MAX NR_VEC_MAX

// y = x * scale * w (w may be NULL) for this thread's pieces, to fp32 and/or bf16; wpre: w's pieces already
// loaded (early loads), or NULL.
__device__ __forceinline__ void store_normed(const float4 *v, int nv, const float *w, const float4 *wpre, float scale,
                                             float *y32, uint16_t *y16)
{
#pragma unroll
    for (int j = 0; j < VEC_MAX; j++) {
        int q = threadIdx.x + j * THREADS;
        if (q >= nv) break;
        float4 ww = !w ? make_float4(1.0f, 1.0f, 1.0f, 1.0f) : wpre ? wpre[j] : nr_ld4(w, q);
        float4 o = nr_norm4(v[j], scale, ww);
        if (y32) reinterpret_cast<float4 *>(y32)[q] = o;
        if (y16) nr_store_bf16x4(y16, q, o);
    }
}

// The row's RMSNorm from its pieces in registers.
__device__ __forceinline__ float rms_scale(const float4 *v, int nv, int n, float eps, float *scratch)
{
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < VEC_MAX; j++)
        if (threadIdx.x + j * THREADS < nv) ss = __fadd_rn(ss, nr_sq4(v[j]));
    return nr_scale(block_sum(ss, scratch), n, eps);
}

__device__ void norm_row(const float *row, const float *w, float eps, int n, float *y32, uint16_t *y16)
{
    __shared__ float scratch[32];
    if (nr_vec_ok(n)) {
        float4 v[VEC_MAX];
        int nv = n / 4;
#pragma unroll
        for (int j = 0; j < VEC_MAX; j++) {
            int q = threadIdx.x + j * THREADS;
            v[j] = q < nv ? nr_ld4(row, q) : make_float4(0, 0, 0, 0);
        }
        store_normed(v, nv, w, NULL, rms_scale(v, nv, n, eps, scratch), y32, y16);
        return;
    }
    float ss = 0.0f, scale;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
    ss = block_sum(ss, scratch);
    scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = row[i] * scale * (w ? w[i] : 1.0f);
        if (y32) y32[i] = v;
        if (y16) y16[i] = f32_to_bf16_bits(v);
    }
}

__global__ void __launch_bounds__(THREADS) rmsnorm_kernel(const float *__restrict__ x, const float *__restrict__ w,
                                                          float eps, int n, float *__restrict__ y32,
                                                          uint16_t *__restrict__ y16)
{
    kern_dep_launch();
    kern_dep_wait();
    size_t r = blockIdx.x;
    norm_row(x + r * n, w, eps, n, y32 ? y32 + r * n : NULL, y16 ? y16 + r * n : NULL);
}

__global__ void __launch_bounds__(THREADS) rmsnorm_gather_kernel(const float *__restrict__ x,
                                                                 const int32_t *__restrict__ index,
                                                                 const float *__restrict__ w, float eps, int n,
                                                                 uint16_t *__restrict__ y16)
{
    kern_dep_launch();
    kern_dep_wait();
    norm_row(x + (size_t)index[blockIdx.x] * n, w, eps, n, NULL, y16 + (size_t)blockIdx.x * n);
}

// x = (x + RMSNorm(t; w)) * scalar; then, with w_next, the next block's input norm of the new x.
__global__ void __launch_bounds__(THREADS) residual_norm_add_kernel(float *__restrict__ x, const float *__restrict__ t,
                                                                    const float *__restrict__ w, float eps, float scalar,
                                                                    const float *__restrict__ w_next,
                                                                    uint16_t *__restrict__ xn16, int n, int early)
{
    kern_dep_launch();
    if (!early || !nr_vec_ok(n)) kern_dep_wait();
    __shared__ float scratch[32];
    const float *tr = t + (size_t)blockIdx.x * n;
    float *xr = x + (size_t)blockIdx.x * n;
    if (nr_vec_ok(n)) {
        // early loads (kernels.h): both norms' weights (the pass's constants) are asked for before the wait
        // for the product, not after each block sum
        float4 tv[VEC_MAX], xv[VEC_MAX], wv[VEC_MAX], wn[VEC_MAX];
        int nv = n / 4;
        if (early) {
#pragma unroll
            for (int j = 0; j < VEC_MAX; j++) {
                int q = threadIdx.x + j * THREADS;
                if (q >= nv) break;
                wv[j] = nr_ld4(w, q);
                if (w_next) wn[j] = nr_ld4(w_next, q);
            }
            kern_dep_wait();
        }
#pragma unroll
        for (int j = 0; j < VEC_MAX; j++) {
            int q = threadIdx.x + j * THREADS;
            tv[j] = q < nv ? nr_ld4(tr, q) : make_float4(0, 0, 0, 0);
            xv[j] = q < nv ? nr_ld4(xr, q) : make_float4(0, 0, 0, 0);
        }
        float scale = rms_scale(tv, nv, n, eps, scratch);
#pragma unroll
        for (int j = 0; j < VEC_MAX; j++) {
            int q = threadIdx.x + j * THREADS;
            if (q >= nv) break;
            float4 b = nr_resid4(xv[j], tv[j], scale, early ? wv[j] : nr_ld4(w, q), scalar);
            xv[j] = b;
            reinterpret_cast<float4 *>(xr)[q] = b;
        }
        if (w_next)
            store_normed(xv, nv, w_next, early ? wn : NULL, rms_scale(xv, nv, n, eps, scratch), NULL,
                         xn16 + (size_t)blockIdx.x * n);
        return;
    }
    float ss = 0.0f, scale;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += tr[i] * tr[i];
    ss = block_sum(ss, scratch);
    scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) xr[i] = (xr[i] + tr[i] * scale * w[i]) * scalar;
    if (!w_next) return;
    __syncthreads();
    norm_row(xr, w_next, eps, n, NULL, xn16 + (size_t)blockIdx.x * n);
}

extern "C" void kern_rmsnorm(const float *x, const float *w, float eps, int rows, int n, float *y32, uint16_t *y16,
                             kern_stream s)
{
    if (rows == 0) return;
    kern_launch(rmsnorm_kernel, dim3(rows), dim3(THREADS), 0, s, x, w, eps, n, y32, y16);
    KERN_LAUNCHED();
}

extern "C" void kern_rmsnorm_gather(const float *x, const int32_t *index, const float *w, float eps, int rows, int n,
                                    uint16_t *y16, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(rmsnorm_gather_kernel, dim3(rows), dim3(THREADS), 0, s, x, index, w, eps, n, y16);
    KERN_LAUNCHED();
}

extern "C" void kern_residual_norm_add(float *x, const float *t, const float *w, float eps, float scalar,
                                       const float *w_next, uint16_t *xn16, int rows, int n, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(residual_norm_add_kernel, dim3(rows), dim3(THREADS), 0, s, x, t, w, eps, scalar, w_next, xn16, n,
                kern_early_loads(KERN_EARLY_RESIDUAL));
    KERN_LAUNCHED();
}
