// qkv_prep — after the fused q|k|v projection, per row and head: RMSNorm of each query head (q_norm) then
// RoPE, stored bf16 for the attention's tensor cores; of each key head (k_norm) then RoPE, stored bf16 for
// the cache; weightless RMSNorm of each value head, stored bf16. One warp per (row, head), the head's values
// loaded at once (a decode step is latency-bound here); RoPE pairs (i, i + D/2) rotate by pos * inv_freq[i]
// (zeros: the proportional RoPE's untouched channels). A block holds QP_WARPS warps, the heads h0 .. h0 + 7 of
// one row: a 512-row prompt chunk of the 12B ran 16,384 one-warp blocks, 4 % of a pass (docs/perf.md,
// version 12), where 8-warp blocks keep more loads in flight per multiprocessor. Each warp's arithmetic is
// qkv_prep.cuh's, the same whichever block holds it; the decode q|k|v product's tail runs it too
// (gemm_tail.cuh).
#include "common.cuh"
#include "kernels.h"
#include "qkv_prep.cuh"

#define QP_WARPS 8

__global__ void qkv_prep_kernel(const float *__restrict__ qkv, int ld, int k_off, int v_off,
                                const float *__restrict__ q_norm, const float *__restrict__ k_norm,
                                const float *__restrict__ inv_freq, const struct kern_row *__restrict__ meta, float eps,
                                int n_heads, int n_kv, int D, uint16_t *__restrict__ q_out, uint16_t *__restrict__ k_out,
                                uint16_t *__restrict__ v_out, int early)
{
    kern_dep_launch();
    if (!early) kern_dep_wait();
    __shared__ float bufs[QP_WARPS][QP_MAX_D];
    int r = blockIdx.x, h = blockIdx.y * QP_WARPS + (threadIdx.x >> 5);
    if (h >= n_heads + 2 * n_kv) { // past the last head (a whole warp): it still waits, as every thread does
        kern_dep_wait();
        return;
    }
    const struct qp_head hd = qp_head_of(qkv, ld, k_off, v_off, q_norm, k_norm, n_heads, n_kv, D, q_out, k_out, v_out, r, h);
    // early loads (kernels.h): the norm weights, the position and the frequencies are the pass's constants (no
    // kernel writes them), so they are asked for before the wait for the product, rather than after the sum
    // and after the barrier
    struct qp_pre pre;
    if (early) {
        qp_preload(hd, inv_freq, meta, r, D, &pre);
        kern_dep_wait();
    }
    qp_run(hd, inv_freq, meta, r, eps, D, bufs[threadIdx.x >> 5], early ? &pre : NULL);
}

extern "C" void kern_qkv_prep(const float *qkv, int ld, int k_off, int v_off, const float *q_norm,
                              const float *k_norm, const float *inv_freq, const struct kern_row *rows_meta, float eps,
                              int rows, int n_heads, int n_kv, int D, uint16_t *q_out, uint16_t *k_out,
                              uint16_t *v_out, kern_stream s)
{
    dim3 grid(rows, (n_heads + 2 * n_kv + QP_WARPS - 1) / QP_WARPS);
    if (rows == 0) return;
    if (D > QP_MAX_D || D % 2) {
        fprintf(stderr, "g4: fatal: kern_qkv_prep: head dim %d unsupported (even, <= %d)\n", D, QP_MAX_D);
        abort();
    }
    kern_launch(qkv_prep_kernel, dim3(grid), dim3(32 * QP_WARPS), 0, s, qkv, ld, k_off, v_off, q_norm, k_norm, inv_freq,
                rows_meta, eps, n_heads, n_kv, D, q_out, k_out, v_out, kern_early_loads(KERN_EARLY_QKV_PREP));
    KERN_LAUNCHED();
}
