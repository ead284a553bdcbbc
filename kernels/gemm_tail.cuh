// gemm_tail.cuh — a decode product's tail (kernels.h, "product tails"): after a CTA has completed its column
// tile [n0, n0 + bn) of y (its own segment alone, or the segments' total by seg_finish), it arrives on the
// tail's counter; the last arrival runs the small kernel's work for the rows of the pass:
// - residual: one counter over all the product's column tiles; the last CTA updates each row with
//   nr_residual_row_block (norm_rows.cuh), the standalone residual kernel's order;
// - q/k/v preparation: a counter per head of columns (bn divides D); the CTA completing a head prepares it
//   for every row, one warp per (row, head) as the standalone kernel does (qp_run, qkv_prep.cuh): a key head
//   of a K = V layer (v_off == k_off) makes the value head from the same columns too.
// The arrival is seg_finish's pattern: every thread's writes of y fenced, one atomic per CTA, the last resets
// the counter for the next product, and fences again before reading the other CTAs' columns (through L2).
#pragma once

#include "common.cuh"
#include "kernels.h"
#include "norm_rows.cuh"
#include "qkv_prep.cuh"

// Every thread of the CTA calls it. free_smem: at least (blockDim.x / 32) * QP_MAX_D floats of shared memory
// the CTA no longer uses.
__device__ __forceinline__ void gemm_tail_run(const struct kern_tail &tl, const float *Y, int M, int N, int n0, int bn,
                                              float *free_smem)
{
    __shared__ int go;
    __shared__ float scratch[NR_WARPS];
    const bool resid = tl.kind == KERN_TAIL_RESIDUAL;
    const int head = resid ? 0 : n0 / tl.D, arrivals = resid ? (int)gridDim.x : tl.D / bn;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        go = atomicAdd(&tl.counters[head], 1) == arrivals - 1;
        if (go) tl.counters[head] = 0;
    }
    __syncthreads();
    if (!go) return;
    __threadfence();
    if (resid) {
        for (int r = 0; r < M; r++)
            nr_residual_row_block(tl.x + (size_t)r * N, Y + (size_t)r * N, tl.w, tl.eps, tl.scalar, tl.w_next,
                                  tl.w_next ? tl.xn16 + (size_t)r * N : NULL, N, scratch);
        return;
    }
    // the prep heads these columns make: head h of the column layout (queries, keys, then values unless K = V)
    const int both = head >= tl.n_heads && head < tl.n_heads + tl.n_kv && tl.v_off == tl.k_off, per = both ? 2 : 1;
    const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int task = warp; task < M * per; task += nw) {
        int r = task / per, h = head + (task % per) * tl.n_kv;
        const struct qp_head hd = qp_head_of(Y, N, tl.k_off, tl.v_off, tl.q_norm, tl.k_norm, tl.n_heads, tl.n_kv, tl.D,
                                             tl.q_out, tl.k_out, tl.v_out, r, h);
        qp_run(hd, tl.inv_freq, tl.meta, r, tl.eps, tl.D, free_smem + warp * QP_MAX_D, NULL);
    }
}
