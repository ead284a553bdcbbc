// topk — the sampler's candidate selection on the device (sampler.h, steps 1-4): per logits row, the k best
// candidates in rank order (logit descending, then id ascending; suppressed ids, -inf and NaN are never
// candidates), so that only k (logit, id) pairs cross the bus instead of the whole vocabulary, and the host
// finishes the draw with samp_pick_sorted — the same tokens as samp_sample on the full row.
//
// How: every candidate gets a unique 64-bit key (the sampler's descending rank key of its logit, then its
// id), so "the k best" is "the k smallest keys", and a non-candidate is the largest key (NONE). A row is cut
// into chunks of KERN_TOPK_CHUNK; one CTA per (chunk, row) sorts its chunk's keys in shared memory (bitonic)
// and keeps the first kmax. The k best of the row are among the k best of its chunks, so the kept lists are
// cut into chunks again, level by level, until one chunk holds them all; its sort gives the answer. Only
// comparisons of unique keys: the result is exactly the CPU sampler's list, and it does not depend on the
// chunking. Every level spreads a row over many CTAs (64 for a 262,144-token vocabulary), where one CTA per
// row took ~470 µs of a 9 ms decode step.
#include "common.cuh"
#include "engine/sampler_core.h"
#include "kernels.h"

#define CH KERN_TOPK_CHUNK
#define THREADS 1024
#define NONE 0xffffffffffffffffull

static_assert(KERN_TOPK_MAX * 4 <= CH, "a level must shrink the list: kmax <= chunk / 4");

// The rank key of element i, or NONE when it is not a candidate.
__device__ __forceinline__ unsigned long long cand_key(const float *row, int i, const int *supp, int n_supp)
{
    float x = row[i];
    if (!(x > -INFINITY)) return NONE; // -inf and NaN
    for (int j = 0; j < n_supp; j++)
        if (supp[j] == i) return NONE;
    return ((unsigned long long)samp_core_desc_key(x) << 32) | (unsigned)i;
}

// One step of a bitonic network over keys[0, n): pairs (i, i + stride) within blocks of 2 stride, ascending
// where i & size is 0, else descending.
__device__ __forceinline__ void bitonic_step(unsigned long long *keys, int n, int size, int stride)
{
    for (int p = threadIdx.x; p < n / 2; p += THREADS) {
        int i = 2 * stride * (p / stride) + p % stride, j = i + stride;
        unsigned long long a = keys[i], b = keys[j];
        if ((a > b) == ((i & size) == 0)) keys[i] = b, keys[j] = a;
    }
    __syncthreads();
}

// The kmax smallest of the CH keys, ascending, to keys[0, kmax) (bitonic top-k): runs of P (the power of 2
// >= kmax) are sorted, alternately ascending and descending; then, round by round, each pair of runs (one
// ascending, one descending) becomes one run of their P smallest — the elementwise minimum of the two, a
// bitonic sequence — merged into order (again alternating), until one ascending run is left. Comparisons of
// unique keys only (NONE ties are interchangeable), so the result is the full sort's first kmax, with a
// third of its work.
__device__ void smallest_first(unsigned long long *keys, int kmax)
{
    int P = 1;
    while (P < kmax) P <<= 1;
    for (int size = 2; size <= P; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) bitonic_step(keys, CH, size, stride);
    for (int n = CH; n > P; n >>= 1) {
        unsigned long long m[CH / 2 / THREADS > 0 ? CH / 2 / THREADS : 1];
        int q = 0;
        for (int i = threadIdx.x; i < n / 2; i += THREADS, q++) { // run r of the new list from runs 2r, 2r + 1
            int r = i / P, o = i % P;
            unsigned long long a = keys[2 * r * P + o], b = keys[(2 * r + 1) * P + o];
            m[q] = a < b ? a : b;
        }
        __syncthreads();
        q = 0;
        for (int i = threadIdx.x; i < n / 2; i += THREADS, q++) keys[i] = m[q];
        __syncthreads();
        for (int stride = P >> 1; stride > 0; stride >>= 1) bitonic_step(keys, n / 2, P, stride);
    }
}

// The fast form for kmax <= 64 (the draw's default top_k is 64), with the same result: the 64 smallest keys
// ascending, whose first kmax are the kmax smallest. smallest_first meets at a block-wide barrier after each
// of its ~70 steps; here each warp holds 128 keys in registers, 4 consecutive a lane, and every step within a
// run of 64 is a shuffle (strides of 4 and more) or a swap in the lane (strides 1 and 2), so the barriers are
// one per round of 32 runs -> 16 -> ... -> 1. A 12B step's two levels under ncu: 41.6 + 38.3 µs -> 20.1 +
// 17.8 (H100, docs/perf.md, version 13.4); test_cuda_kernels checks both forms against the CPU sampler.
#define FAST_P 64
#define FAST_WARP_KEYS 128 // 4 a lane
static_assert(THREADS / 32 * FAST_WARP_KEYS == CH, "the fast form: 32 warps of 128 keys cover a chunk");

// Compare-exchange of this lane's key x at list index i with its partner's y (index i ^ stride): the lower
// index keeps the smaller where asc, the larger otherwise.
__device__ __forceinline__ unsigned long long cx(unsigned long long x, unsigned long long y, int i, int stride, bool asc)
{
    bool keep_min = ((i & stride) == 0) == asc;
    return keep_min ? (x < y ? x : y) : (x > y ? x : y);
}

// One step of stride `stride` over the warp's keys v[4] (list index 4 * lane + e, plus the warp's base, which
// is a multiple of 128): asc(i) gives each pair's direction.
template <typename Asc>
__device__ __forceinline__ void warp_step(unsigned long long v[4], int lane, int stride, Asc asc)
{
    if (stride >= 4) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int i = 4 * lane + e;
            unsigned long long y = __shfl_xor_sync(0xffffffffu, v[e], stride / 4);
            v[e] = cx(v[e], y, i, stride, asc(i));
        }
        return;
    }
    unsigned long long w[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        int i = 4 * lane + e;
        w[e] = cx(v[e], v[e ^ stride], i, stride, asc(i));
    }
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = w[e];
}

// The 64 keys of run pair (lanes 0-15: one run ascending, lanes 16-31: the other descending, 4 a lane) become
// one run of their 64 smallest, in the direction asc, in lanes 0-15 (lanes 16-31 hold the same): the
// elementwise minimum (a bitonic sequence), then its bitonic merge.
__device__ __forceinline__ void warp_merge_pair(unsigned long long v[4], int lane, bool asc)
{
#pragma unroll
    for (int e = 0; e < 4; e++) {
        unsigned long long y = __shfl_xor_sync(0xffffffffu, v[e], 16);
        v[e] = v[e] < y ? v[e] : y;
    }
    const int l16 = lane & 15; // the index within the run: lanes 16-31 mirror lanes 0-15
#pragma unroll
    for (int stride = FAST_P / 2; stride > 0; stride >>= 1) warp_step(v, l16, stride, [=](int) { return asc; });
}

// keys: the CTA's CH keys, read (key(i) gives key i of the chunk) and left with the 64 smallest ascending in
// keys[0, 64): each warp sorts its 128 as two runs of 64 (ascending, descending) and merges them into one
// (ascending in even warps, descending in odd), to keys[64 w, + 64); then round by round, warp u merges runs
// 2u and 2u + 1 of the last round (in the other half of keys) into run u, ascending where u is even.
template <typename Key>
__device__ void smallest_64(unsigned long long *keys, Key key)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, base = warp * FAST_WARP_KEYS;
    unsigned long long v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = key(base + 4 * lane + e);
    for (int size = 2; size <= FAST_P; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1)
            warp_step(v, lane, stride, [=](int i) { return (i & size) == 0; });
    warp_merge_pair(v, lane, (warp & 1) == 0);
    constexpr int HALF = CH / 2;
    unsigned long long *from = keys, *to = keys + HALF;
    if (lane < 16)
#pragma unroll
        for (int e = 0; e < 4; e++) from[warp * FAST_P + 4 * lane + e] = v[e];
    __syncthreads();
    for (int runs = CH / FAST_WARP_KEYS; runs > 1; runs >>= 1) {
        if (warp < runs / 2) {
            const unsigned long long *src = from + (2 * warp + (lane >> 4)) * FAST_P + 4 * (lane & 15);
#pragma unroll
            for (int e = 0; e < 4; e++) v[e] = src[e];
            warp_merge_pair(v, lane, (warp & 1) == 0);
            if (lane < 16)
#pragma unroll
                for (int e = 0; e < 4; e++) to[warp * FAST_P + 4 * lane + e] = v[e];
        }
        __syncthreads();
        unsigned long long *t = from;
        from = to, to = t;
    }
    if (from != keys) { // the last round's run to keys[0, 64)
        if (threadIdx.x < FAST_P) keys[threadIdx.x] = from[threadIdx.x];
        __syncthreads();
    }
}

// One (chunk, row): keys [chunk * CH, + CH) of the row's n — from its logits (FROM_LOGITS) or from the previous
// level's list src (n per row) — sorted ascending; the first kmax go to dst (gridDim.x * kmax per row), or,
// with dst NULL (the last level: one chunk), the row's first k candidates go out.
template <int FROM_LOGITS>
__global__ void __launch_bounds__(THREADS) topk_level_kernel(const float *__restrict__ logits, int V,
                                                             const unsigned long long *__restrict__ src, int n,
                                                             const struct kern_select_row *__restrict__ rows,
                                                             int kmax, unsigned long long *__restrict__ dst,
                                                             int32_t *__restrict__ out_ids,
                                                             float *__restrict__ out_logits, int32_t *__restrict__ out_n)
{
    kern_dep_launch();
    kern_dep_wait();
    __shared__ int supp[KERN_SELECT_MAX_SUPPRESS];
    __shared__ unsigned long long keys[CH];
    const int r = blockIdx.y, c = blockIdx.x, tid = threadIdx.x, k = rows[r].k;
    const int n_supp = FROM_LOGITS ? rows[r].n_supp : 0;
    if (k <= 0) return;
    for (int j = tid; j < n_supp; j += THREADS) supp[j] = rows[r].supp[j];
    __syncthreads();
    auto key = [&](int i) {
        int at = c * CH + i;
        return at >= n ? NONE : FROM_LOGITS ? cand_key(logits + (size_t)r * V, at, supp, n_supp) : src[(size_t)r * n + at];
    };
    if (kmax <= FAST_P) {
        smallest_64(keys, key);
    } else {
        for (int i = tid; i < CH; i += THREADS) keys[i] = key(i);
        __syncthreads();
        smallest_first(keys, kmax);
    }
    if (dst) {
        for (int j = tid; j < kmax; j += THREADS) dst[((size_t)r * gridDim.x + c) * kmax + j] = keys[j];
        return;
    }
    for (int j = tid; j < k; j += THREADS) {
        unsigned long long key = keys[j];
        if (key == NONE) {
            if (j == 0) out_n[r] = 0;
            continue;
        }
        out_ids[(size_t)r * KERN_TOPK_MAX + j] = (int32_t)(key & 0xffffffffu);
        out_logits[(size_t)r * KERN_TOPK_MAX + j] = samp_core_key_logit((uint32_t)(key >> 32));
        if (j == k - 1 || keys[j + 1] == NONE) out_n[r] = j + 1;
    }
}

// One batch of rows, every level.
static void topk_batch(const float *logits, int V, const struct kern_select_row *rows, int n_rows, int kmax,
                       uint64_t *ws, size_t half, int32_t *out_ids, float *out_logits, int32_t *out_n, kern_stream s)
{
    unsigned long long *lists[2] = {(unsigned long long *)ws, (unsigned long long *)ws + half};
    int n = V, level = 0;
    const unsigned long long *src = NULL;
    while (1) {
        int chunks = (n + CH - 1) / CH;
        unsigned long long *dst = chunks > 1 ? lists[level % 2] : NULL;
        if (level == 0)
            kern_launch(topk_level_kernel<1>, dim3(chunks, n_rows), dim3(THREADS), 0, s, logits, V, src, n, rows,
                        kmax, dst, out_ids, out_logits, out_n);
        else
            kern_launch(topk_level_kernel<0>, dim3(chunks, n_rows), dim3(THREADS), 0, s, logits, V, src, n, rows,
                        kmax, dst, out_ids, out_logits, out_n);
        KERN_LAUNCHED();
        if (!dst) return;
        src = dst, n = chunks * kmax, level++;
    }
}

extern "C" void kern_topk(const float *logits, int V, const struct kern_select_row *rows, int n_rows, int kmax,
                          uint64_t *ws, size_t ws_keys, int32_t *out_ids, float *out_logits, int32_t *out_n,
                          kern_stream s)
{
    size_t per_row = kern_topk_ws_keys(V, 1, kmax);
    if (kmax < 1 || kmax > KERN_TOPK_MAX || (per_row && (!ws || ws_keys < per_row))) {
        fprintf(stderr, "g4: fatal: kern_topk: kmax %d (1 .. %d), scratch of %zu keys for rows of %zu\n", kmax,
                KERN_TOPK_MAX, ws_keys, per_row);
        abort();
    }
    int batch = per_row ? (int)(ws_keys / per_row) : n_rows;
    for (int first = 0; first < n_rows; first += batch) {
        int b = n_rows - first < batch ? n_rows - first : batch;
        topk_batch(logits + (size_t)first * V, V, rows + first, b, kmax, ws, (size_t)b * (per_row / 2),
                   out_ids + (size_t)first * KERN_TOPK_MAX, out_logits + (size_t)first * KERN_TOPK_MAX, out_n + first,
                   s);
    }
}
