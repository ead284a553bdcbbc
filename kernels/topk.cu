// topk — the sampler's candidate selection on the device (sampler.h, steps 1-4): per logits row, the k best
// candidates in rank order (logit descending, then id ascending; suppressed ids, -inf and NaN are never
// candidates), so that only k (logit, id) pairs cross the bus instead of the whole vocabulary, and the host
// finishes the draw with samp_pick_sorted — the same tokens as samp_sample on the full row.
//
// How: every candidate gets a unique 64-bit key (the sampler's descending rank key of its logit, then its
// id), so "the k best" is "the k smallest keys". A radix select over the key's bytes, most significant
// first (a block histogram per pass), finds the k-th smallest key's prefix; the candidates at or under it
// are gathered into shared memory and sorted (bitonic). k = 1 (greedy) is one block-wide minimum. Only
// comparisons: the result is exactly the CPU sampler's list.
#include "common.cuh"
#include "engine/sampler_core.h"
#include "kernels.h"

#define THREADS 1024
#define NONE 0xffffffffffffffffull

// The rank key of element i, or NONE when it is not a candidate.
__device__ __forceinline__ unsigned long long cand_key(const float *row, int i, const int *supp, int n_supp)
{
    float x = row[i];
    if (!(x > -INFINITY)) return NONE; // -inf and NaN
    for (int j = 0; j < n_supp; j++)
        if (supp[j] == i) return NONE;
    return ((unsigned long long)samp_core_desc_key(x) << 32) | (unsigned)i;
}

__device__ __forceinline__ unsigned long long warp_min64(unsigned long long v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}

__global__ void __launch_bounds__(THREADS) topk_kernel(const float *__restrict__ logits, int V,
                                                       const struct kern_select_row *__restrict__ rows,
                                                       int32_t *__restrict__ out_ids, float *__restrict__ out_logits,
                                                       int32_t *__restrict__ out_n)
{
    kern_dep_launch();
    kern_dep_wait();
    __shared__ int supp[KERN_SELECT_MAX_SUPPRESS];
    __shared__ unsigned hist[256];
    __shared__ unsigned long long cand[KERN_TOPK_MAX], wmin[THREADS / 32];
    __shared__ unsigned long long prefix_s;
    __shared__ int shift_s, krem_s, done_s, all_s;
    __shared__ unsigned count;
    const int r = blockIdx.x, tid = threadIdx.x, k = rows[r].k, n_supp = rows[r].n_supp;
    const float *row = logits + (size_t)r * V;
    if (k <= 0) return;
    for (int j = tid; j < n_supp; j += THREADS) supp[j] = rows[r].supp[j];
    __syncthreads();

    if (k == 1) { // greedy: the smallest key
        unsigned long long best = NONE;
        for (int i = tid; i < V; i += THREADS) {
            unsigned long long key = cand_key(row, i, supp, n_supp);
            best = key < best ? key : best;
        }
        best = warp_min64(best);
        if ((tid & 31) == 0) wmin[tid >> 5] = best;
        __syncthreads();
        if (tid < 32) {
            best = warp_min64(wmin[tid]);
            if (tid == 0) {
                out_n[r] = best == NONE ? 0 : 1;
                out_ids[(size_t)r * KERN_TOPK_MAX] = (int32_t)(best & 0xffffffffu);
                out_logits[(size_t)r * KERN_TOPK_MAX] = samp_core_key_logit((uint32_t)(best >> 32));
            }
        }
        return;
    }

    if (tid == 0) {
        prefix_s = 0;
        krem_s = k;
        done_s = 0;
        all_s = 0;
        shift_s = 64;
        count = 0;
    }
    __syncthreads();
    for (int pass = 0; pass < 8; pass++) {
        const int shift = 56 - 8 * pass;
        const unsigned long long prefix = prefix_s;
        for (int j = tid; j < 256; j += THREADS) hist[j] = 0;
        __syncthreads();
        for (int i = tid; i < V; i += THREADS) {
            unsigned long long key = cand_key(row, i, supp, n_supp);
            if (key == NONE) continue;
            if (pass > 0 && (key >> (shift + 8)) != (prefix >> (shift + 8))) continue;
            atomicAdd(&hist[(key >> shift) & 255], 1u);
        }
        __syncthreads();
        if (tid == 0) {
            unsigned cum = 0, total = 0;
            int d = 0;
            for (int j = 0; j < 256; j++) total += hist[j];
            if (pass == 0 && total <= (unsigned)krem_s) { // fewer candidates than k: all of them
                all_s = 1;
                done_s = 1;
            } else {
                while (cum + hist[d] < (unsigned)krem_s) cum += hist[d++];
                krem_s -= (int)cum;
                prefix_s = prefix | ((unsigned long long)d << shift);
                shift_s = shift;
                if (hist[d] == (unsigned)krem_s) done_s = 1; // every key under this prefix is in
            }
        }
        __syncthreads();
        if (done_s) break;
    }
    {
        const unsigned long long lim = all_s ? 0 : prefix_s >> shift_s;
        const int sh = shift_s;
        for (int i = tid; i < V; i += THREADS) {
            unsigned long long key = cand_key(row, i, supp, n_supp);
            if (key == NONE || (!all_s && (key >> sh) > lim)) continue;
            unsigned at = atomicAdd(&count, 1u);
            if (at < KERN_TOPK_MAX) cand[at] = key;
        }
    }
    __syncthreads();
    const unsigned n = count < KERN_TOPK_MAX ? count : KERN_TOPK_MAX;
    for (unsigned j = n + tid; j < KERN_TOPK_MAX; j += THREADS) cand[j] = NONE;
    __syncthreads();
    // bitonic sort of KERN_TOPK_MAX keys, ascending
    for (int size = 2; size <= KERN_TOPK_MAX; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = tid; i < KERN_TOPK_MAX; i += THREADS) {
                int j = i ^ stride;
                if (j > i) {
                    unsigned long long a = cand[i], b = cand[j];
                    bool up = (i & size) == 0;
                    if ((a > b) == up) {
                        cand[i] = b;
                        cand[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    for (unsigned j = tid; j < n; j += THREADS) {
        out_ids[(size_t)r * KERN_TOPK_MAX + j] = (int32_t)(cand[j] & 0xffffffffu);
        out_logits[(size_t)r * KERN_TOPK_MAX + j] = samp_core_key_logit((uint32_t)(cand[j] >> 32));
    }
    if (tid == 0) out_n[r] = (int32_t)n;
}

extern "C" void kern_topk(const float *logits, int V, const struct kern_select_row *rows, int n_rows, int32_t *out_ids,
                          float *out_logits, int32_t *out_n, kern_stream s)
{
    if (n_rows == 0) return;
    kern_launch(topk_kernel, dim3(n_rows), dim3(THREADS), 0, s, logits, V, rows, out_ids, out_logits, out_n);
    KERN_LAUNCHED();
}
