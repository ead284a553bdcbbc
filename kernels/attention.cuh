// attention.cuh — what the attention kernels share (attention.cu: the mma.sync kernels and the merge;
// attention_wg.cu: the prompt kernel on warpgroup instructions): the arithmetic every one of them must do the
// same way (attention.cu's head comment: e^x, the fold of partial states, a row's key range), the block loads
// by tensor boxes, and the tile's key range and partial order. One copy, so that "the same bits in every
// kernel" is a fact of the source.
#pragma once

#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "tma_map.cuh"

#define KB KERN_ATTN_KEY_BLOCK
#define NP KERN_ATTN_PARTIALS

struct slot_info {
    int pos, block, valid;
};

// e^x as every attention kernel computes it (the weights, the rescales, the merge): 2^(x log2 e) by the
// hardware's approximation, two instructions where expf is a range-reduced polynomial of about twenty (a
// 16-stream sliding layer 88.3 -> 83.1 µs, bench_cuda_attention); its error (~2^-22 relative, plus the
// rounding of x log2 e) is far under the bf16 rounding of the weights. exp(-inf) = 0.
__device__ __forceinline__ float attn_exp(float x) { return ex2_approx(x * 1.44269504088896341f); }

// a * fa + b * fb with one rounding order wherever it is written (no contraction left to the compiler)
__device__ __forceinline__ float fold_add(float a, float fa, float b, float fb)
{
    return __fmaf_rn(a, fa, __fmul_rn(b, fb));
}

// The merge rule: a running state (m, l, acc) takes partial (pm, pl, pacc), partials in order 0 .. NP-1. A
// partial that saw no key (pm = -inf) changes nothing; an empty running state becomes the partial exactly;
// otherwise both are rescaled to the larger maximum. fold_scales gives the two factors (fa for the running
// state, fb for the partial) and updates m and l; the caller scales the outputs. Returns 0 for "unchanged".
// (fold_factors: the two factors for a running maximum m and a partial's maximum pm > -inf. From the empty
// state, m = -inf, they are 0 and 1, so the state becomes the partial exactly: l is 0 there, and
// fold_add(0, 0, pl, 1) = pl.)
__device__ __forceinline__ void fold_factors(float m, float pm, float *fa, float *fb)
{
    if (m == -INFINITY) {
        *fa = 0.0f, *fb = 1.0f;
        return;
    }
    float mn = fmaxf(m, pm);
    *fa = attn_exp(m - mn), *fb = attn_exp(pm - mn);
}

__device__ __forceinline__ int fold_scales(float *m, float *l, float pm, float pl, float *fa, float *fb)
{
    if (pm == -INFINITY) return 0;
    fold_factors(*m, pm, fa, fb);
    *l = fold_add(*l, *fa, pl, *fb), *m = fmaxf(*m, pm);
    return 1;
}

// The key range [lo, hi] row m may see (before the per-key mask).
__device__ __forceinline__ void row_range(const struct kern_row &m, int is_full, int window, int mask_all, int *lo,
                                          int *hi)
{
    int in_block = m.block >= 0, last = m.pos0 + (m.item_end - m.base) - 1;
    *lo = is_full ? 0 : m.pos - window + 1;
    *hi = m.pos;
    if (in_block && (!is_full || mask_all)) *hi = last;
    if (in_block && mask_all && *lo > m.pos0) *lo = m.pos0;
    if (*lo < 0) *lo = 0;
}

// A block's scores for two slots (h = 0, 1: rows g and g + 8 of a 16-slot fragment), in mma's C fragment of
// NT tiles of 8 keys from key kb0 + k0 (this lane's keys k0 + 8j + 2t + e): masked to -inf where the slot may
// not see the key (not needed where it sees the whole block: the image block rule only adds keys); returns the
// maximum over the lane's elements of slot h (the caller shuffles it over the slot's 4 lanes).
template <int NT>
__device__ __forceinline__ float block_mask_max(float (*sc)[4], int h, const struct slot_info &sl,
                                                const struct kern_row *meta, const struct kern_row &m0, int kb0,
                                                int k0, int t, int is_full, int window, int mask_all)
{
    const int p = sl.pos, in_block = sl.block >= 0;
    const bool whole = sl.valid && kb0 + KB - 1 <= p && (is_full || kb0 > p - window);
    float bm = -INFINITY;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float x = sc[j][2 * h + e];
            if (!whole) {
                int kp = kb0 + k0 + j * 8 + 2 * t + e;
                int same = in_block && kp >= m0.pos0 && kp < m0.pos0 + (m0.item_end - m0.base) &&
                           meta[m0.base + kp - m0.pos0].block == sl.block;
                int vis = is_full ? (kp <= p || (same && mask_all))
                                  : (mask_all ? ((kp > p - window && kp <= p) || same)
                                              : (kp > p - window && (kp <= p || same)));
                vis = vis && sl.valid && kp >= 0;
                x = vis ? x : -INFINITY;
                sc[j][2 * h + e] = x;
            }
            bm = fmaxf(bm, x);
        }
    return bm;
}

// block_mask_max for both of a thread's slots, each then over the slot's 4 lanes (xor 1, 2) into bm[h]; the
// callers take the maximum over the warps that share the slots (a maximum: any order).
template <int NT>
__device__ __forceinline__ void slots_block_max(float (*sc)[4], const struct slot_info *sl, const struct kern_row *meta,
                                                const struct kern_row &m0, int kb0, int k0, int t, int is_full,
                                                int window, int mask_all, float *bm)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        bm[h] = block_mask_max<NT>(sc, h, sl[h], meta, m0, kb0, k0, t, is_full, window, mask_all);
        bm[h] = fmaxf(bm[h], __shfl_xor_sync(0xffffffffu, bm[h], 1));
        bm[h] = fmaxf(bm[h], __shfl_xor_sync(0xffffffffu, bm[h], 2));
    }
}

// The queries of a warpgroup kernel's 64 slots (slot s: row s / G of the tile, query head kvh * G + s % G; zeros
// past the tile's n_slots) into D / 64 swizzled chunks of 64 slots x 128 bytes, the scores' A operand: 16-byte
// cp.async pieces from every thread, committed as one group (the caller waits, then fences for wgmma).
template <int D>
__device__ __forceinline__ void load_queries_wg(unsigned char *qbuf, const uint16_t *q, const struct kern_tile &tile,
                                                int G, int n_heads, int kvh, int n_slots)
{
    for (int i = threadIdx.x; i < 64 * (D / 8); i += blockDim.x) {
        const int s = i / (D / 8), u = i % (D / 8);
        const bool ok = s < n_slots;
        const uint16_t *src = q + ((size_t)(tile.row0 + (ok ? s / G : 0)) * n_heads + kvh * G + (ok ? s % G : 0)) * D + u * 8;
        cp_async16(qbuf + (u >> 3) * (64 * 128) + tma_swizzled(s, u & 7), src, ok);
    }
    cp_async_commit();
}

// p = exp(s - mn) in place for slot h's elements (mn: the running maximum with this block's) and their sums:
// the lane's tiles in order, in SUB runs of NT / SUB tiles (a run is one warp's keys in attention.cu's order of
// parts), each run's sum then over the slot's 4 lanes (xor 1, 2).
template <int NT, int SUB>
__device__ __forceinline__ void block_weights(float (*sc)[4], int h, float mn, float *ps)
{
#pragma unroll
    for (int q = 0; q < SUB; q++) ps[q] = 0.0f;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float x = sc[j][2 * h + e], pe = (mn == -INFINITY || x == -INFINITY) ? 0.0f : attn_exp(x - mn);
            sc[j][2 * h + e] = pe;
            ps[j / (NT / SUB)] += pe;
        }
#pragma unroll
    for (int q = 0; q < SUB; q++) {
        ps[q] += __shfl_xor_sync(0xffffffffu, ps[q], 1);
        ps[q] += __shfl_xor_sync(0xffffffffu, ps[q], 2);
    }
}

// The end of partial w for the two slots of a thread (s[h]: the slot, valid[h]), NJ tiles of 8 output
// dimensions from dimension d0 (this lane's d0 + 8j + 2t + e): with one CTA for all partials, the fold into
// the running state (rm, rl, ro) by the merge's rule; else the partial's state to the scratch the merge reads
// ((max, sum) by the lanes that write_ml names, the outputs unless the partial saw no key).
template <int NJ>
__device__ __forceinline__ void partial_fold(float *rm, float *rl, float (*ro)[4], const float *mx, const float *l,
                                             float (*o)[4])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float fa, fb;
        if (!fold_scales(&rm[h], &rl[h], mx[h], l[h], &fa, &fb)) continue;
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) ro[j][2 * h + e] = fold_add(ro[j][2 * h + e], fa, o[j][2 * h + e], fb);
    }
}

template <int NJ>
__device__ __forceinline__ void partial_store(float *part_acc, float *part_ml, const size_t *idx, const int *valid,
                                              int w, int D, int d0, int t, bool write_ml, const float *mx,
                                              const float *l, float (*o)[4])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        if (!valid[h]) continue;
        const size_t i = idx[h] * NP + w;
        if (write_ml) {
            part_ml[2 * i] = mx[h];
            part_ml[2 * i + 1] = l[h];
        }
        if (mx[h] == -INFINITY) continue; // the merge reads no output of a partial that saw no key
        float *dst = part_acc + i * D + d0;
#pragma unroll
        for (int j = 0; j < NJ; j++) *(float2 *)&dst[j * 8 + 2 * t] = make_float2(o[j][2 * h], o[j][2 * h + 1]);
    }
}

// The tile's final outputs of the two slots (idx[h]: the (row, head) index) from the fold, bf16(ro / rl).
template <int NJ>
__device__ __forceinline__ void tile_out(uint16_t *out, const size_t *idx, const int *valid, int D, int d0, int t,
                                         const float *rl, float (*ro)[4])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        if (!valid[h]) continue;
        uint16_t *dst = out + idx[h] * D + d0;
#pragma unroll
        for (int j = 0; j < NJ; j++)
            *(uint32_t *)&dst[j * 8 + 2 * t] = pack_bf16x2(ro[j][2 * h] / rl[h], ro[j][2 * h + 1] / rl[h]);
    }
}

// Which of a block's rows a load takes (load_block, load_block_box): LOAD_ALL, or the block in two calls
// (early loads, kernels.h): LOAD_CACHE arms the barrier, writes the zeros and copies the rows from the cache,
// which no kernel of the pass before the attention writes (so it may run before kern_dep_wait); LOAD_FRESH,
// after the wait, copies the rows of the step's new keys.
#define LOAD_CACHE 1
#define LOAD_FRESH 2
#define LOAD_ALL 3

// The tensor maps of a prompt launch with boxes: the step's new keys and values and the layer's caches, each
// as rows of kvd halves in boxes of 64 x KB (attn_box_map).
struct attn_maps {
    const CUtensorMap *k_new, *v_new, *cache_k, *cache_v;
};

// Block b into a box buffer, the head's column chunks (of 64) c0 .. c0 + nc - 1 of it: a block whose KB
// positions all lie in [lo, hi] and all in the step's new rows or all in one unwrapped run of the ring comes
// by nc tensor copies from thread 0 (16 copies a key and value block at D 512, where load_block issues 128 row
// copies, one lane at a time); any other block (a range's edge, the ring's wrap, a block holding old and new
// rows) is copied by every thread, 16 bytes at a time, through registers into the same swizzled places, zeros
// outside [lo, hi]. The bytes are the same either way. The barrier is armed with the tensor copies' bytes
// (none for a copied block): the threads' own stores are seen by the block after the __syncthreads that
// follows the wait (and by the asynchronous proxy, wgmma, after each thread's fence_proxy_async before it).
// part: as load_block.
template <int D>
__device__ __forceinline__ void load_block_box(unsigned char *buf, int c0, int nc, const CUtensorMap *map_new,
                                               const CUtensorMap *map_cache,
                                               const uint16_t *fresh, const uint16_t *cache, const struct kern_row &m0,
                                               int b, int lo, int hi, int kvh, int cap, int kvd, uint64_t *bar,
                                               int part = LOAD_ALL)
{
    const int kb0 = b * KB;
    const bool in_all = kb0 >= lo && kb0 + KB - 1 <= hi, all_new = kb0 >= m0.pos0;
    const bool whole = in_all && (all_new || (kb0 + KB - 1 < m0.pos0 && kb0 % cap + KB <= cap));
    if (part & LOAD_CACHE) {
        fence_proxy_async();
        if (threadIdx.x == 0) mbar_arrive_expect(bar, whole ? (unsigned)KB * nc * 128 : 0u);
    }
    if (whole) {
        if (threadIdx.x == 0 && (part & (all_new ? LOAD_FRESH : LOAD_CACHE))) {
            const int row0 = all_new ? m0.base + kb0 - m0.pos0 : m0.stream * cap + kb0 % cap;
#pragma unroll
            for (int c = 0; c < nc; c++)
                tma_load_2d(buf + c * (KB * 128), all_new ? map_new : map_cache, kvh * D + (c0 + c) * 64, row0, bar);
        }
        return;
    }
    for (int i = threadIdx.x; i < KB * nc * 8; i += blockDim.x) {
        const int j = i / (nc * 8), u = i % (nc * 8), kp = kb0 + j;
        const bool in = kp >= lo && kp <= hi, is_new = in && kp >= m0.pos0;
        if (!(part & (in ? (is_new ? LOAD_FRESH : LOAD_CACHE) : LOAD_CACHE))) continue;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (in) {
            size_t off = is_new ? (size_t)(m0.base + kp - m0.pos0) * kvd : ((size_t)m0.stream * cap + kp % cap) * kvd;
            v = __ldcg(reinterpret_cast<const uint4 *>((is_new ? fresh : cache) + off + (size_t)kvh * D + c0 * 64) + u);
        }
        *reinterpret_cast<uint4 *>(buf + (u >> 3) * (KB * 128) + tma_swizzled(j, u & 7)) = v;
    }
}

// The union of a tile's rows' key ranges, by warp 0 into *range_lo, *range_hi (the caller's __syncthreads
// publishes them).
__device__ __forceinline__ void tile_range(const struct kern_row *meta, const struct kern_tile &tile, int is_full,
                                           int window, int mask_all, int *range_lo, int *range_hi)
{
    if (threadIdx.x >= 32) return;
    const int lane = threadIdx.x;
    int lo = 1 << 30, hi = -1;
    for (int i = lane; i < tile.nrows; i += 32) {
        int a, b;
        row_range(meta[tile.row0 + i], is_full, window, mask_all, &a, &b);
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
#pragma unroll
    for (int d = 16; d; d >>= 1) {
        lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, d));
        hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, d));
    }
    if (lane == 0) *range_lo = lo, *range_hi = hi;
}

// Partial w's first block at or after block b_first (partial w takes the blocks b with b mod NP = w).
__device__ __forceinline__ int partial_first(int b_first, int w) { return b_first + ((w - b_first % NP) % NP + NP) % NP; }

// The first (partial, block) pair a CTA loads: its first partial (blockIdx.z, then + wz) with a block in
// [lo / KB, hi / KB]; *lw = NP where none has one.
__device__ __forceinline__ void partial_first_pair(int lo, int hi, int wz, int *lw, int *lb)
{
    *lw = blockIdx.z, *lb = partial_first(lo / KB, *lw);
    while (*lw < NP && *lb > hi / KB) *lw += wz, *lb = partial_first(lo / KB, *lw);
}

// The CTA's (partial, block) pairs to load, in order: its partials blockIdx.z, + wz, ..., each's blocks b with
// b mod NP = w in [lo / KB, hi / KB]; lb is the next pair's block, none left once lw reaches NP.
struct pair_cursor {
    int lw, lb, b_first, b_last, wz;
    __device__ __forceinline__ void start(int lo, int hi, int wz_)
    {
        b_first = lo / KB, b_last = hi / KB, wz = wz_;
        partial_first_pair(lo, hi, wz, &lw, &lb);
    }
    __device__ __forceinline__ bool more() const { return lw < NP; }
    __device__ __forceinline__ void advance() // b + NP in this partial, else the next partial's first
    {
        lb += NP;
        while (lw < NP && lb > b_last) lw += wz, lb = partial_first(b_first, lw);
    }
};

// With early loads (kernels.h) the first pair's cached rows load before kern_dep_wait (when early is 1) and its
// new rows after it, by load(is_keys, block, lo, hi, part); the tile's range is read from shared memory after
// the __syncthreads that publishes it (and the barriers).
template <class Load>
__device__ __forceinline__ void early_first_pair(Load load, const int *range_lo, const int *range_hi, int wz, int early)
{
    struct pair_cursor first;
    __syncthreads();
    first.start(*range_lo, *range_hi, wz);
    if (first.more()) {
        load(true, first.lb, *range_lo, *range_hi, LOAD_CACHE);
        load(false, first.lb, *range_lo, *range_hi, LOAD_CACHE);
    }
    if (early == 1) kern_dep_wait();
    if (first.more()) {
        load(true, first.lb, *range_lo, *range_hi, LOAD_FRESH);
        load(false, first.lb, *range_lo, *range_hi, LOAD_FRESH);
    }
}

// The cursor past the first pair, which loads here unless early loads took it (early_first_pair).
template <class Load> __device__ __forceinline__ struct pair_cursor first_loads(Load load, int lo, int hi, int wz, int early)
{
    struct pair_cursor next;
    next.start(lo, hi, wz);
    if (!early && next.more()) {
        load(true, next.lb, lo, hi, LOAD_ALL);
        load(false, next.lb, lo, hi, LOAD_ALL);
    }
    next.advance();
    return next;
}

// A thread's two slots s0 and s0 + 8 of a tile (slot s: row s / G of the tile, query head kvh * G + s % G):
// their row facts, whether they lie in the tile, and their (row, head) indices.
__device__ __forceinline__ void slots_of(const struct kern_row *meta, const struct kern_tile &tile, int s0, int G,
                                         int n_heads, int kvh, struct slot_info *sl, size_t *sidx, int *svalid)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int s = s0 + 8 * h;
        sl[h].valid = svalid[h] = s < tile.nrows * G;
        sidx[h] = (size_t)(tile.row0 + s / G) * n_heads + kvh * G + s % G;
        const struct kern_row mr = meta[tile.row0 + (sl[h].valid ? s / G : 0)];
        sl[h].pos = mr.pos;
        sl[h].block = mr.block;
    }
}

// Host side. The tensor map of rows of kvd halves at p, in boxes of 64 x KB, made on first use into a device
// table (attention.cu; a new map asked for during a graph capture aborts). The value of environment variable
// name when positive, else fallback.
const CUtensorMap *attn_box_map(const uint16_t *p, int kvd, kern_stream s);
double attn_env_positive(const char *name, double fallback);
// The four maps of a launch with boxes (the step's new keys and values, the layer's caches), and the `early`
// argument every attention kernel takes (kernels.h, early loads: 0 none, 1 before the wait, 2 after it).
struct attn_maps attn_maps_of(const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                              const uint16_t *cache_v, int kvd, kern_stream s);
int attn_early_mode(void);

// attention_wg.cu: the CTAs its kernel gives a (tile, kv head) at head dim D (1 or 2), 0 where it has none;
// and its launch, kern_attention's arguments (wz: CTAs sharing a tile's partials, as partial_groups chose for
// max_tiles x n_kv x split units).
int attn_wg_split(int D);
void attn_wg_launch(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                    const uint16_t *cache_v, const struct kern_row *meta, const struct kern_tile *tiles,
                    const int *n_tiles, int max_tiles, int n_heads, int n_kv, int D, int cap, int is_full, int window,
                    int mask_all, int wz, float *part_acc, float *part_ml, uint16_t *out, kern_stream s);
