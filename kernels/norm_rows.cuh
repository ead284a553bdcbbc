// norm_rows.cuh — the arithmetic of a row's RMSNorm and of the residual update (x = (x + RMSNorm(t; w)) *
// scalar, then the next block's input norm), shared by the standalone kernels (rmsnorm.cu, one block of
// NR_THREADS per row) and the decode product's tail (gemm_tail.cuh, the CTA that completes a product's last
// tile, of any size), so both give the same bits.
//
// The order, fixed: the row's float4 pieces q = v + NR_THREADS j belong to "virtual thread" v (0 ..
// NR_THREADS - 1) in j order; each virtual thread sums its pieces' squares (sq4) from 0.0f; the 32 virtual
// threads of a virtual warp add by the xor tree of warp_sum; the NR_THREADS / 32 warp sums add by one more
// warp_sum (block_sum's order, common.cuh). A block of NR_THREADS threads plays each virtual thread by its own
// thread; a smaller block plays virtual warp vw by real warp vw mod (its warps), lane for lane. Every product
// and sum is written with explicit roundings (no contraction left to the compiler), so the two forms cannot
// drift apart by how each was compiled.
#pragma once

#include "common.cuh"

#define NR_THREADS 512
#define NR_VEC_MAX 4 // float4 pieces per virtual thread: rows up to 8192
#define NR_WARPS (NR_THREADS / 32)

__device__ __forceinline__ float4 nr_ld4(const float *p, int i) { return reinterpret_cast<const float4 *>(p)[i]; }

// a load of a row another CTA of the same kernel wrote (through L2, not this SM's L1)
__device__ __forceinline__ float4 nr_ldcg4(const float *p, int i) { return __ldcg(reinterpret_cast<const float4 *>(p) + i); }

__device__ __forceinline__ float nr_sq4(float4 v)
{
    return __fmaf_rn(v.w, v.w, __fmaf_rn(v.z, v.z, __fmaf_rn(v.y, v.y, __fmul_rn(v.x, v.x))));
}

// the float4 path's rows: a multiple of 4 that the virtual threads' pieces cover
__device__ __host__ __forceinline__ bool nr_vec_ok(int n) { return n % 4 == 0 && n / 4 <= NR_THREADS * NR_VEC_MAX; }

// 1 / RMS from a row's sum of squares
__device__ __forceinline__ float nr_scale(float ss, int n, float eps) { return 1.0f / sqrtf(ss / (float)n + eps); }

// a * scale * w
__device__ __forceinline__ float4 nr_norm4(float4 a, float scale, float4 w)
{
    return make_float4(__fmul_rn(__fmul_rn(a.x, scale), w.x), __fmul_rn(__fmul_rn(a.y, scale), w.y),
                       __fmul_rn(__fmul_rn(a.z, scale), w.z), __fmul_rn(__fmul_rn(a.w, scale), w.w));
}

// (x + t * scale * w) * scalar
__device__ __forceinline__ float4 nr_resid4(float4 x, float4 t, float scale, float4 w, float scalar)
{
    return make_float4(__fmul_rn(__fmaf_rn(__fmul_rn(t.x, scale), w.x, x.x), scalar),
                       __fmul_rn(__fmaf_rn(__fmul_rn(t.y, scale), w.y, x.y), scalar),
                       __fmul_rn(__fmaf_rn(__fmul_rn(t.z, scale), w.z, x.z), scalar),
                       __fmul_rn(__fmaf_rn(__fmul_rn(t.w, scale), w.w, x.w), scalar));
}

__device__ __forceinline__ void nr_store_bf16x4(uint16_t *y16, int q, float4 o)
{
    reinterpret_cast<uint2 *>(y16)[q] = make_uint2(
        (uint32_t)f32_to_bf16_bits(o.x) | ((uint32_t)f32_to_bf16_bits(o.y) << 16),
        (uint32_t)f32_to_bf16_bits(o.z) | ((uint32_t)f32_to_bf16_bits(o.w) << 16));
}

// The last step of the order: the virtual warps' sums (scratch[0 .. NR_WARPS - 1]) added by one warp_sum; every
// thread gets the total. The caller has made scratch visible (a barrier).
__device__ __forceinline__ float nr_total(const float *scratch)
{
    int lane = threadIdx.x & 31;
    return warp_sum(lane < NR_WARPS ? scratch[lane] : 0.0f);
}

// The residual update of one row of n (nr_vec_ok) by a whole block of any multiple of 32 threads up to
// NR_THREADS, in the order above: x = (x + RMSNorm(t; w)) * scalar, then, with w_next, xn16 =
// bf16(RMSNorm(x; w_next)). t may have been written by other CTAs of this kernel (read through L2). scratch:
// NR_WARPS floats of shared memory, free again on return. Every thread of the block must call it.
__device__ __forceinline__ void nr_residual_row_block(float *x, const float *t, const float *w, float eps, float scalar,
                                                      const float *w_next, uint16_t *xn16, int n, float *scratch)
{
    const int nv = n / 4, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    // the sum of squares of t
    for (int vw = warp; vw < NR_WARPS; vw += nw) {
        float4 tv[NR_VEC_MAX];
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < NR_VEC_MAX; j++) {
            int q = 32 * vw + lane + NR_THREADS * j;
            if (q < nv) tv[j] = nr_ldcg4(t, q);
        }
#pragma unroll
        for (int j = 0; j < NR_VEC_MAX; j++)
            if (32 * vw + lane + NR_THREADS * j < nv) ss = __fadd_rn(ss, nr_sq4(tv[j]));
        ss = warp_sum(ss);
        if (lane == 0) scratch[vw] = ss;
    }
    __syncthreads();
    const float scale = nr_scale(nr_total(scratch), n, eps);
    __syncthreads(); // every thread has read scratch
    // the new x, and its sum of squares
    for (int vw = warp; vw < NR_WARPS; vw += nw) {
        float4 tv[NR_VEC_MAX], xv[NR_VEC_MAX], wv[NR_VEC_MAX];
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < NR_VEC_MAX; j++) {
            int q = 32 * vw + lane + NR_THREADS * j;
            if (q >= nv) continue;
            tv[j] = nr_ldcg4(t, q);
            xv[j] = nr_ldcg4(x, q);
            wv[j] = nr_ld4(w, q);
        }
#pragma unroll
        for (int j = 0; j < NR_VEC_MAX; j++) {
            int q = 32 * vw + lane + NR_THREADS * j;
            if (q >= nv) continue;
            float4 b = nr_resid4(xv[j], tv[j], scale, wv[j], scalar);
            reinterpret_cast<float4 *>(x)[q] = b;
            ss = __fadd_rn(ss, nr_sq4(b));
        }
        ss = warp_sum(ss);
        if (lane == 0) scratch[vw] = ss;
    }
    __syncthreads();
    if (!w_next) return;
    const float scale2 = nr_scale(nr_total(scratch), n, eps);
    __syncthreads(); // scratch is free for the caller's next row
    for (int vw = warp; vw < NR_WARPS; vw += nw) {
#pragma unroll
        for (int j = 0; j < NR_VEC_MAX; j++) {
            int q = 32 * vw + lane + NR_THREADS * j; // this thread wrote x's piece q above
            if (q < nv) nr_store_bf16x4(xn16, q, nr_norm4(nr_ld4(x, q), scale2, nr_ld4(w_next, q)));
        }
    }
}
