// segments.cuh — the end of the reduction rule (kernels.h), shared by the three product kernels
// (gemm_skinny.cu, gemm_bf16.cu, gemm_wgmma.cu): how an element's segment chains become y.
//
// A product of one segment writes (0.0f + chain) + bias. A product of several writes each segment's chain
// to scratch; the CTA that completes a tile (an arrival counter per tile) adds the segments in segment order
// to 0.0f, then the bias. One copy of these lines is what makes "the same bits whichever kernel ran" a fact
// of the source rather than three hand-kept copies.
#pragma once

#include <stdint.h>

// This thread's two adjacent outputs (row r, columns c and c + 1; c even) of segment seg: the finished
// values when nseg == 1, else the segment's chains into partial (nseg slices of M x N). Rows past M and
// columns past N are not written.
__device__ __forceinline__ void seg_store2(float *Y, float *partial, const float *bias, int M, int N, int nseg, int seg,
                                           int r, int c, float a0, float a1)
{
    if (r >= M) return;
    float v[2] = {a0, a1};
    if (nseg == 1)
#pragma unroll
        for (int e = 0; e < 2; e++) v[e] = (0.0f + v[e]) + (bias && c + e < N ? bias[c + e] : 0.0f);
    float *dst = (nseg == 1 ? Y : partial + (size_t)seg * M * N) + (size_t)r * N + c;
    if (c + 1 < N && (N % 2) == 0) *(float2 *)dst = make_float2(v[0], v[1]);
    else
#pragma unroll
        for (int e = 0; e < 2; e++)
            if (c + e < N) dst[e] = v[e];
}

// Called by every thread of a CTA after its seg_store2 calls (nseg > 1): the CTA that completes the tile
// of rows [m0, m0 + rows) and columns [n0, n0 + cols) adds its segments in order and writes y; the others
// return. counter: the tile's arrival counter, reset to zero by the last arrival; last: a shared flag.
__device__ __forceinline__ void seg_finish(float *Y, const float *partial, const float *bias, int M, int N, int nseg,
                                           int m0, int n0, int rows, int cols, int *counter, int *last)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        *last = atomicAdd(counter, 1) == nseg - 1;
        if (*last) *counter = 0;
    }
    __syncthreads();
    if (!*last) return;
    __threadfence();
    for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
        int r = m0 + i / cols, c = n0 + i % cols;
        if (r >= M || c >= N) continue;
        float total = 0.0f;
        for (int q = 0; q < nseg; q++) total += __ldcg(&partial[((size_t)q * M + r) * N + c]);
        Y[(size_t)r * N + c] = total + (bias ? bias[c] : 0.0f);
    }
}
