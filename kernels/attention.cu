// attention — every row of a step over its own stream's keys (spec §2.6, §4.6), on tensor cores: keys of the
// row's item come from the step's new k/v, older ones from the layer's cache (ring slot pos % cap).
//
// The arithmetic of one (row, query head), identical in a decode step, a draft window and a prompt chunk:
// keys are cut into fixed blocks of KB positions (by absolute position); partial w (of NP) takes the blocks
// whose index is w mod NP, in increasing order, with an online softmax: per block, scores s = q·k by mma
// (bf16 q and k, fp32 accumulation over the head dimension in chunks of 16), the block's row maximum, the
// rescale of the running sum and output, p = exp(s - max) (fp32 for the sum, bf16 for the product with v by
// mma). The block's sum of p adds, per lane, its keys' tiles in order, then the lanes (xor 1, 2), then the
// key halves or quarters of the warps sharing the slots (head dims over 128), in order. kern_attention_merge
// then combines the NP partials in partial order. The cut, the visiting order and the merge order depend only
// on positions, never on which other rows share the launch.
//
// Work: a block of 8 warps (4 in decode passes, so two blocks share an SM) takes one tile (consecutive rows of
// one item), one kv head and one or more partials. Its "slots" are (row, query head of the group) pairs, 16 per
// warp group; for head dims over 128 the warps of a group (2 for 256, 4 for 512) split the block's keys for
// the scores, meet (named barrier) to share maxima, sums and bf16 weights, and each take 128 of the output
// dimensions of p · v. The next block's keys load while this block's weights and products run, its values
// while its scores run, each key or value row by one bulk copy (one per row and block, where 16-byte copies
// cost every thread tens of instructions of addressing). A block visits the union of its rows'
// visible key blocks; a block that a row cannot see leaves that row's state exactly unchanged (max with -inf,
// rescale by exp(0) = 1, zero weights).
//
// Masks: full layers see k <= p (and, with mask_all, their own image block); sliding layers see
// k > p - W and (k <= p or same block) — or, with mask_all, (k > p - W and k <= p) or same block.
#include "attention.cuh"
#include "kv_store.cuh"
#define AW_PROMPT 8 // warps per block in prompt passes
#define AW_DECODE 4 // in decode passes: a decode row fills few slots, and two smaller CTAs per SM keep two key
                    // blocks in flight where one 8-warp CTA kept one

template <int D, int W> struct attn_shape {
    static constexpr int DP = D > 128 ? 128 : D;   // output dimensions per warp
    static constexpr int PARTS = D / DP;           // warps sharing 16 slots (each computes their scores)
    static constexpr int NSLOT = 16 * (W / PARTS); // slots per block
    static constexpr int LDS = D + 8;              // padded shared row (halves)
    static constexpr int KW = KB / PARTS;          // keys per warp in the scores
    static constexpr int NT = KW / 8;              // ... in tiles of 8
    static constexpr int XG = PARTS > 1 ? W / PARTS : 1; // groups exchanging maxima, sums and weights
};

// The PARTS warps of warp group grp meet (named barrier 1 + grp; 0 is __syncthreads).
template <int PARTS> __device__ __forceinline__ void group_sync(int grp)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + grp), "r"(32 * PARTS) : "memory");
}

// One (row, head)'s output: its NP partials (ml: NP (max, sum) pairs, acc: NP rows of D) folded in partial
// order by fold_scales, out[i] = bf16(acc / sum), dimensions first, first + step, ... of the caller's threads.
// The merge kernel runs it; loads through L2 (the partials come from other CTAs). Every partial's values are
// loaded before the fold that reads them, so the loads go out together; and the factors are the values
// fold_scales gives partial after partial (the same bits), taken from the running maxima (a chain of fmaxf)
// all at once rather than each after the last one's exponentials. A one-stream merge under ncu (version 13.2)
// took 12.5 µs, 20k cycles, with the loads inside the fold; 11.0 with them before it, one warp a scheduler
// running ~860 dependent instructions at 14 cycles each, most of them the fold's chain.
__device__ __forceinline__ void merge_slot(const float *ml, const float *acc, int D, uint16_t *out, int first, int step)
{
    float pm[NP], pl[NP], before[NP], fa[NP], fb[NP], v[NP], m = -INFINITY, l = 0.0f;
    int used[NP];
#pragma unroll
    for (int w = 0; w < NP; w++) pm[w] = __ldcg(ml + 2 * w), pl[w] = __ldcg(ml + 2 * w + 1);
    // the first dimension's values go out with the (max, sum) pairs, whatever a partial saw: one of a partial
    // that saw no key was never written and is loaded only to be left out of the fold
    if (first < D)
#pragma unroll
        for (int w = 0; w < NP; w++) v[w] = __ldcg(acc + (size_t)w * D + first);
#pragma unroll
    for (int w = 0; w < NP; w++) before[w] = m, m = fmaxf(m, pm[w]); // a partial with no key (-inf) keeps m
#pragma unroll
    for (int w = 0; w < NP; w++) {
        used[w] = pm[w] != -INFINITY;
        fa[w] = fb[w] = 0.0f;
        if (used[w]) fold_factors(before[w], pm[w], &fa[w], &fb[w]);
    }
#pragma unroll
    for (int w = 0; w < NP; w++)
        if (used[w]) l = fold_add(l, fa[w], pl[w], fb[w]);
    for (int i = first; i < D; i += step) {
        float a = 0.0f;
        if (i != first)
#pragma unroll
            for (int w = 0; w < NP; w++) v[w] = __ldcg(acc + (size_t)w * D + i);
#pragma unroll
        for (int w = 0; w < NP; w++)
            if (used[w]) a = fold_add(a, fa[w], v[w], fb[w]);
        out[i] = f32_to_bf16_bits(a / l);
    }
}

// Keys (or values) of block b into rows[KB][LDS], by every thread of the block; rows outside [lo, hi] are
// written with zeros (their scores are masked and their values weighted 0, and 0 times stale bits could be
// NaN). One bulk copy per position, counted on bar, which thread 0 arms with their bytes. A warp's copies
// issue one lane at a time, so each warp takes KB / warps rows (warp 0 alone took 64: the rest of the block
// waited at the next barrier). The fence orders the thread's zeros, and the block's reads of the buffer before
// the caller's __syncthreads, before the new copies; copies that land before the arming only run the count
// below zero for a moment, and the phase needs the arming's arrival. (16-byte cp.async pieces from every
// thread, version 13.2, were slower in every decode shape: 64 streams 207 -> 335 µs a sliding layer.)
//
// part: LOAD_ALL, or the block in two calls (early loads, kernels.h): LOAD_CACHE arms the barrier with every
// row's bytes, writes the zeros and copies the rows from the cache, which no kernel of the pass before the
// attention writes (so it may run before kern_dep_wait); LOAD_FRESH, after the wait, copies the rows of the
// step's new keys. The phase completes when both parts' bytes have come.
template <int D>
__device__ __forceinline__ void load_block(uint16_t (*rows)[D + 8], const uint16_t *fresh, const uint16_t *cache,
                                           const struct kern_row &m0, int b, int lo, int hi, int kvh, int cap, int kvd,
                                           uint64_t *bar, int part = LOAD_ALL)
{
    const int kb0 = b * KB;
    const int per = KB / (blockDim.x >> 5), lane = threadIdx.x & 31, j = (threadIdx.x >> 5) * per + lane;
    if (part & LOAD_CACHE) {
        fence_proxy_async();
        if (threadIdx.x == 0) {
            int a = lo > kb0 ? lo : kb0, z = hi < kb0 + KB - 1 ? hi : kb0 + KB - 1;
            mbar_arrive_expect(bar, (unsigned)(z >= a ? z - a + 1 : 0) * D * 2);
        }
    }
    if (lane >= per) return;
    const int kp = kb0 + j;
    if (kp >= lo && kp <= hi) {
        const bool is_fresh = kp >= m0.pos0;
        if (!(part & (is_fresh ? LOAD_FRESH : LOAD_CACHE))) return;
        size_t off = is_fresh ? (size_t)(m0.base + kp - m0.pos0) * kvd : ((size_t)m0.stream * cap + kp % cap) * kvd;
        bulk_copy_g2s(&rows[j][0], (is_fresh ? fresh : cache) + off + (size_t)kvh * D, D * 2, bar);
    } else if (part & LOAD_CACHE) {
        for (int c = 0; c < D; c += 8) *(uint4 *)&rows[j][c] = make_uint4(0, 0, 0, 0);
    }
}

// The key (or value) buffer in prompt passes with boxes (G4_CUDA_ATTN_PROMPT_BOXES): D / 64 column chunks of
// KB rows x 128 bytes, each row's 16-byte pieces swizzled as a 128-byte-swizzle tensor copy leaves them
// (tma_swizzled), at a 1024-aligned base; the address of (row, col) as the mma fragments read it. Without
// boxes, the rows of D + 8 halves that load_block fills.
template <int D, bool BOX> __device__ __forceinline__ const void *kv_at(const unsigned char *buf, int row, int col)
{
    if constexpr (BOX) return buf + (col >> 6) * (KB * 128) + tma_swizzled(row, (col & 63) >> 3);
    else return buf + ((size_t)row * (D + 8) + col) * 2;
}

// One key and one value buffer: two blocks of 8 warps per multiprocessor (128 registers, spilling) and two
// pairs in flight (prompt passes, version 13.1), or two pairs in 4-warp decode blocks (version 13.2: 64 streams
// 207 -> 315 µs a sliding layer, one block per multiprocessor) gained nothing.
template <int D, int W, bool BOX>
__global__ void __launch_bounds__(32 * W, 1) attention_kernel(
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k_new, const uint16_t *__restrict__ v_new,
    const uint16_t *__restrict__ cache_k, const uint16_t *__restrict__ cache_v, const struct kern_row *__restrict__ meta,
    const struct kern_tile *__restrict__ tiles, const int *__restrict__ n_tiles, int n_heads, int n_kv, int cap,
    int is_full, int window, int mask_all, float *__restrict__ part_acc, float *__restrict__ part_ml,
    uint16_t *__restrict__ out, int early, const struct attn_maps maps)
{
    kern_dep_launch();
    // a graph's grid covers every tile its rows could form; blocks past the pass's own return before waiting
    // (n_tiles, like the tiles and the row table, is copied in before the pass's first kernel, and no kernel
    // writes it). With early loads (kernels.h) the tile's facts and key range are read before the wait too,
    // while q|k|v's preparation finishes; only the queries, the new keys and the caches wait for it.
    // Prompt passes take the (tile, kv head) pairs, in launch order (x fastest, then y), last tile first, every
    // kv head of a tile before the next: in a causal prompt the last tiles see the most keys, and the greedy
    // schedule then ends evenly (a long tile is not left to start last; version 13.2: a 1,000-token first token
    // 51.8 -> 49.4 ms with the last layer on the logits rows, 8k prefill +2 %). Decode tiles are one row each.
    int ti = blockIdx.x, kvh = blockIdx.y;
    if (W == AW_PROMPT) {
        const int lin = (int)(blockIdx.y * gridDim.x + blockIdx.x);
        ti = *n_tiles - 1 - lin / n_kv, kvh = lin % n_kv;
    }
    if (ti < 0 || ti >= *n_tiles) return;
    if (early != 1) kern_dep_wait(); // 2: the early order with everything after the wait (a diagnostic)
    typedef attn_shape<D, W> S;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    uint16_t(*qs)[S::LDS] = reinterpret_cast<uint16_t(*)[S::LDS]>(smem_raw);
    // the keys after the queries (1024-aligned with boxes), the values after the keys
    unsigned char *kbuf = smem_raw + sizeof(uint16_t) * S::NSLOT * S::LDS;
    if constexpr (BOX) kbuf += (1024 - (smem_u32(kbuf) & 1023)) & 1023;
    unsigned char *vbuf = kbuf + (BOX ? KB * D * 2 : KB * S::LDS * 2);
    uint16_t(*ks)[S::LDS] = reinterpret_cast<uint16_t(*)[S::LDS]>(kbuf);
    uint16_t(*vs)[S::LDS] = reinterpret_cast<uint16_t(*)[S::LDS]>(vbuf);
    __shared__ int range_lo, range_hi;
    __shared__ uint64_t bars[2]; // the key block's and the value block's arrivals (load_block)
    __shared__ float red_max[S::XG][S::PARTS][16], red_sum[S::XG][S::PARTS][16];
    __shared__ __align__(16) uint16_t pw[S::XG][16][KB + 8]; // the group's bf16 weights of one block
    constexpr int NT = S::NT;

    const struct kern_tile tile = tiles[ti];
    const int G = n_heads / n_kv, kvd = n_kv * D, WZ = gridDim.z;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int grp = warp / S::PARTS, dpart = warp % S::PARTS, kw0 = dpart * S::KW;
    const struct kern_row m0 = meta[tile.row0];
    // block b's keys (k) or values into their buffer, by rows or by boxes
    auto load = [&](bool k, int b, int lo_, int hi_, int part) {
        if constexpr (BOX)
            load_block_box<D>(k ? kbuf : vbuf, 0, D / 64, k ? maps.k_new : maps.v_new, k ? maps.cache_k : maps.cache_v,
                              k ? k_new : v_new, k ? cache_k : cache_v, m0, b, lo_, hi_, kvh, cap, kvd,
                              &bars[k ? 0 : 1], part);
        else
            load_block<D>(k ? ks : vs, k ? k_new : v_new, k ? cache_k : cache_v, m0, b, lo_, hi_, kvh, cap, kvd,
                          &bars[k ? 0 : 1], part);
    };
    const int n_slots = tile.nrows * G;
    const bool live = grp * 16 < n_slots;

    if (threadIdx.x == 0) {
        mbar_init(&bars[0], 1);
        mbar_init(&bars[1], 1);
        mbar_init_fence();
    }
    tile_range(meta, tile, is_full, window, mask_all, &range_lo, &range_hi);
    // the two slots this thread holds scores for: rows g and g + 8 of its warp's 16
    struct slot_info sl[2];
    size_t sidx[2]; // their (row, head) indices
    int svalid[2];
    slots_of(meta, tile, grp * 16 + g, G, n_heads, kvh, sl, sidx, svalid);
    // This CTA's partials are blockIdx.z, + WZ, ... (WZ = gridDim.z, the host's choice); each runs exactly as
    // if alone. The (partial, block) pairs form one sequence, and the next pair's keys load while this pair's
    // weights and products run, its values while the scores run (kpar and vpar: the parities of the buffers'
    // next phases), across partial boundaries too.
    // A partial with no visible block is written empty.
    if (early) early_first_pair(load, &range_lo, &range_hi, WZ, early); // the first pair before the wait
    // queries of the block's slots: slot s = (row s / G of the tile, head kvh * G + s % G)
    for (int i = threadIdx.x; i < S::NSLOT * (D / 8); i += blockDim.x) {
        int s = i / (D / 8), c = (i % (D / 8)) * 8;
        bool ok = s < n_slots;
        const uint16_t *src = q + ((size_t)(tile.row0 + (ok ? s / G : 0)) * n_heads + kvh * G + (ok ? s % G : 0)) * D + c;
        cp_async16(&qs[s][c], src, ok);
    }
    cp_async_commit();
    __syncthreads();
    const int lo = range_lo, hi = range_hi;
    const int b_first = lo / KB, b_last = hi / KB;
    struct pair_cursor next = first_loads(load, lo, hi, WZ, early); // the next pair to load
    unsigned kpar = 0, vpar = 0;
    cp_async_wait<0>(); // the queries (visible to all after the loop's first __syncthreads)
    // with one CTA per tile (WZ = 1) the partials fold here, in order, by the merge kernel's rule
    float rm[2] = {-INFINITY, -INFINITY}, rl[2] = {0.0f, 0.0f}, ro[S::DP / 8][4];
#pragma unroll
    for (int j = 0; j < S::DP / 8; j++) ro[j][0] = ro[j][1] = ro[j][2] = ro[j][3] = 0.0f;
    for (int w = blockIdx.z; w < NP; w += WZ) {
        float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
        float o[S::DP / 8][4];
#pragma unroll
        for (int j = 0; j < S::DP / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
        for (int b = partial_first(b_first, w); b <= b_last; b += NP) {
            const int kb0 = b * KB;
            // (w, b) is in the buffers; next, the next pair to load, goes into them once they are read
            const bool more = next.more();
            mbar_wait(&bars[0], kpar);
            kpar ^= 1u;
            __syncthreads();

            // scores: 16 slots x this warp's KW keys (KB / PARTS: the group's warps split the block's keys), tiles
            // of 8 keys (a warp group whose slots all lie past the tile's skips its products: never stored)
            float sc[NT][4];
#pragma unroll
            for (int j = 0; j < NT; j++) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
#pragma unroll 4
            for (int kc = 0; kc < (live ? D / 16 : 0); kc++) {
                uint32_t a[4];
                ldmatrix_x4(a, &qs[grp * 16 + (lane & 15)][kc * 16 + (lane >> 4) * 8]);
#pragma unroll
                for (int nj = 0; nj < NT / 2; nj++) {
                    uint32_t r[4];
                    ldmatrix_x4(r, kv_at<D, BOX>(kbuf, kw0 + nj * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                 kc * 16 + ((lane >> 3) & 1) * 8));
                    uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                    mma_bf16_16816(sc[2 * nj], a, b0);
                    mma_bf16_16816(sc[2 * nj + 1], a, b1);
                }
            }
            __syncthreads(); // every warp has its scores: the key buffer is free
            if (more) load(true, next.lb, lo, hi, LOAD_ALL);
            // the mask and the block maximum of each of the two slots over the group's warps (any order)
            float bm[2];
            slots_block_max<NT>(sc, sl, meta, m0, kb0, kw0, t, is_full, window, mask_all, bm);
            if constexpr (S::PARTS > 1) {
                if (t == 0) red_max[grp][dpart][g] = bm[0], red_max[grp][dpart][g + 8] = bm[1];
                group_sync<S::PARTS>(grp);
#pragma unroll
                for (int d = 0; d < S::PARTS; d++)
                    bm[0] = fmaxf(bm[0], red_max[grp][d][g]), bm[1] = fmaxf(bm[1], red_max[grp][d][g + 8]);
            }
            // p = exp(s - max): fp32 into the sum (this warp's keys in tile order, then the group's warps in
            // order), bf16 into the product with v
            float corr[2], ps[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float mn = fmaxf(mx[h], bm[h]);
                corr[h] = mn == -INFINITY ? 1.0f : attn_exp(mx[h] - mn);
                block_weights<NT, 1>(sc, h, mn, &ps[h]);
                mx[h] = mn;
            }
            if constexpr (S::PARTS > 1) {
                if (t == 0) red_sum[grp][dpart][g] = ps[0], red_sum[grp][dpart][g + 8] = ps[1];
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    *(uint32_t *)&pw[grp][g][kw0 + j * 8 + 2 * t] = pack_bf16x2(sc[j][0], sc[j][1]);
                    *(uint32_t *)&pw[grp][g + 8][kw0 + j * 8 + 2 * t] = pack_bf16x2(sc[j][2], sc[j][3]);
                }
                group_sync<S::PARTS>(grp);
                ps[0] = ps[1] = 0.0f;
#pragma unroll
                for (int d = 0; d < S::PARTS; d++) ps[0] += red_sum[grp][d][g], ps[1] += red_sum[grp][d][g + 8];
            }
#pragma unroll
            for (int h = 0; h < 2; h++) l[h] = __fmaf_rn(l[h], corr[h], ps[h]);
#pragma unroll
            for (int j = 0; j < S::DP / 8; j++) {
                o[j][0] *= corr[0];
                o[j][1] *= corr[0];
                o[j][2] *= corr[1];
                o[j][3] *= corr[1];
            }
            mbar_wait(&bars[1], vpar);
            vpar ^= 1u;
            __syncthreads();
            // o += p · v over the block's 4 chunks of 16 keys (the weights from registers when one warp holds
            // them all, else from the group's shared rows)
#pragma unroll
            for (int kc = 0; kc < (live ? 4 : 0); kc++) {
                uint32_t a[4];
                if constexpr (S::PARTS == 1) {
                    a[0] = pack_bf16x2(sc[2 * kc][0], sc[2 * kc][1]), a[1] = pack_bf16x2(sc[2 * kc][2], sc[2 * kc][3]);
                    a[2] = pack_bf16x2(sc[2 * kc + 1][0], sc[2 * kc + 1][1]);
                    a[3] = pack_bf16x2(sc[2 * kc + 1][2], sc[2 * kc + 1][3]);
                } else {
                    ldmatrix_x4(a, &pw[grp][lane & 15][kc * 16 + (lane >> 4) * 8]);
                }
#pragma unroll
                for (int dj = 0; dj < S::DP / 16; dj++) {
                    uint32_t r[4];
                    ldmatrix_x4_trans(r, kv_at<D, BOX>(vbuf, kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                       dpart * S::DP + dj * 16 + (lane >> 4) * 8));
                    uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                    mma_bf16_16816(o[2 * dj], a, b0);
                    mma_bf16_16816(o[2 * dj + 1], a, b1);
                }
            }
            __syncthreads(); // the value buffer is free
            if (more) load(false, next.lb, lo, hi, LOAD_ALL);
            next.advance();
        }

        if (WZ == 1) partial_fold<S::DP / 8>(rm, rl, ro, mx, l, o);
        else partial_store<S::DP / 8>(part_acc, part_ml, sidx, svalid, w, D, dpart * S::DP, t, dpart == 0 && t == 0,
                                      mx, l, o);
    }
    if (WZ == 1) tile_out<S::DP / 8>(out, sidx, svalid, D, dpart * S::DP, t, rl, ro); // the tile's final outputs
}

// out (rows, heads, D) bf16 = the NP partials folded in partial order (fold_scales); with store, the (row,
// head) blocks of a row also copy its new key and value to the caches, 1 / heads of the pieces each. The
// row's cache slot comes from the row table, which no kernel writes, so with early loads (kernels.h) it is
// read before the wait; after it, a thread's piece of the new key and value (where each thread has at most
// one) loads with the partials and is stored after the fold: a one-stream merge is a chain of L2 round trips
// (meta, the new key, the partials' pairs, their values), and these make it one. Everything the previous
// kernels wrote is read through L2 (__ldcg), never the non-coherent path: the early merge of version 11
// (04ec403), which loaded the partials by ld.global.nc, read stale values under programmatic launch (exact
// without), most likely lines of the previous layer's merge left in that cache.
__global__ void attention_merge_kernel(const float *__restrict__ part_acc, const float *__restrict__ part_ml,
                                       int n_heads, int D, uint16_t *__restrict__ out, int store, struct kern_kv_new kv,
                                       int early)
{
    kern_dep_launch();
    const int r = blockIdx.x, piece = blockIdx.y * blockDim.x + threadIdx.x, pieces = n_heads * blockDim.x;
    long long dst = -1;
    if (store && early) dst = kv_slot(kv, kv.meta[r]);
    kern_dep_wait();
    if (store && !early) dst = kv_slot(kv, kv.meta[r]);
    const bool one = dst >= 0 && kv.kvd % 8 == 0 && kv.kvd / 8 <= pieces, mine = one && piece < kv.kvd / 8;
    const size_t src = (size_t)r * kv.kvd;
    uint4 kp, vp;
    if (mine) {
        kp = __ldcg(reinterpret_cast<const uint4 *>(kv.k_new + src) + piece);
        vp = __ldcg(reinterpret_cast<const uint4 *>(kv.v_new + src) + piece);
    }
    size_t idx = (size_t)r * n_heads + blockIdx.y;
    merge_slot(part_ml + idx * NP * 2, part_acc + idx * NP * D, D, out + idx * D, threadIdx.x, blockDim.x);
    if (mine) {
        reinterpret_cast<uint4 *>(kv.cache_k + dst)[piece] = kp;
        reinterpret_cast<uint4 *>(kv.cache_v + dst)[piece] = vp;
    } else if (dst >= 0 && !one) {
        kv_store_row(kv, r, piece, pieces);
    }
}

// How many CTAs share a (tile, kv head)'s NP partials: all NP (one partial each) when tiles are few (decode),
// fewer when there are many, so that each CTA loads its queries once and streams many key blocks, down to
// one, which folds its partials itself and leaves no scratch to merge. The grid keeps `per_sm` or more CTAs
// per multiprocessor: 2 in decode passes (short, latency-bound: many CTAs), 0.5 in prompt passes (where one
// CTA per tile saves the merge's traffic). G4_CUDA_ATTN_PER_SM_DECODE and G4_CUDA_ATTN_PER_SM set them: tuning
// knobs, as any value gives the same bits. A function of the launch's shape, never of a row.
static int forced_groups = 0; // kern_attention_force_partial_groups

extern "C" void kern_attention_force_partial_groups(int groups)
{
    if (groups < 0 || groups > NP || (groups & (groups - 1))) {
        fprintf(stderr, "g4: fatal: kern_attention_force_partial_groups(%d): 0 or a power of 2 up to %d\n", groups, NP);
        abort();
    }
    forced_groups = groups;
}

double attn_env_positive(const char *name, double fallback)
{
    const char *v = getenv(name);
    return v && atof(v) > 0 ? atof(v) : fallback;
}

static int partial_groups(int units, int decode)
{
    static int sms = 0;
    static double per_sm[2];
    if (forced_groups) return forced_groups;
    if (!sms) {
        per_sm[0] = attn_env_positive("G4_CUDA_ATTN_PER_SM", 0.5);
        per_sm[1] = attn_env_positive("G4_CUDA_ATTN_PER_SM_DECODE", 2.0);
        int dev = 0;
        KERN_CHECK(cudaGetDevice(&dev));
        KERN_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    int wz = NP;
    while (wz > 1 && units * (wz / 2) >= per_sm[decode != 0] * sms) wz /= 2;
    return wz;
}

// Whether a pass of this mode runs attention_wg.cu's kernel at head dim D.
static int use_wg(int D, int mode) { return mode == KERN_ATTN_PROMPT && attn_wg_split(D) && kern_attention_wg(); }

extern "C" int kern_attention_groups(int tiles, int n_kv, int D, int mode)
{
    return use_wg(D, mode) ? partial_groups(tiles * n_kv * attn_wg_split(D), 0)
                           : partial_groups(tiles * n_kv, mode == KERN_ATTN_NARROW);
}

// The tensor maps of prompt launches with boxes, one per (tensor, row width), made on first use and kept for
// the process: a table in device memory (the kernels take pointers into it) filled from a pinned mirror by a
// copy on the launch's stream, so a pass captured in a graph after its eager first run finds its maps made.
// A map's row count is a bound no box reaches, since a cache's rows (streams x cap) are not known here. A map
// depends only on (pointer, row width), so an address that comes back from cudaMalloc reuses its entry; 4,096
// entries (512 KB) leave room for the tests' many engines.
#define ATTN_MAPS 4096
const CUtensorMap *attn_box_map(const uint16_t *p, int kvd, kern_stream s)
{
    static CUtensorMap *host = NULL, *dev = NULL;
    static const uint16_t *key_p[ATTN_MAPS];
    static int key_kvd[ATTN_MAPS], n = 0;
    for (int i = 0; i < n; i++)
        if (key_p[i] == p && key_kvd[i] == kvd) return dev + i;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    KERN_CHECK(cudaStreamIsCapturing(s, &capturing));
    if (n == ATTN_MAPS || capturing != cudaStreamCaptureStatusNone) {
        fprintf(stderr, "g4: fatal: attention tensor maps: %d of %d made, a new one %s\n", n, ATTN_MAPS,
                capturing != cudaStreamCaptureStatusNone ? "asked for in a graph capture" : "past the table");
        abort();
    }
    if (!host) {
        KERN_CHECK(cudaMallocHost((void **)&host, sizeof(CUtensorMap) * ATTN_MAPS));
        KERN_CHECK(cudaMalloc((void **)&dev, sizeof(CUtensorMap) * ATTN_MAPS));
    }
    host[n] = tma_map_rows(p, 1 << 24, kvd, KB, "kern_attention");
    KERN_CHECK(cudaMemcpyAsync(dev + n, host + n, sizeof(CUtensorMap), cudaMemcpyHostToDevice, s));
    key_p[n] = p, key_kvd[n] = kvd;
    return dev + n++;
}

struct attn_maps attn_maps_of(const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                              const uint16_t *cache_v, int kvd, kern_stream s)
{
    return {attn_box_map(k_new, kvd, s), attn_box_map(v_new, kvd, s), attn_box_map(cache_k, kvd, s),
            attn_box_map(cache_v, kvd, s)};
}

int attn_early_mode(void)
{
    return kern_early_loads(KERN_EARLY_ATTENTION) ? (kern_early_loads(KERN_EARLY_ATTN_AFTER_WAIT) ? 2 : 1) : 0;
}

// Whether the 8-warp kernel loads keys and values by tensor boxes (load_block_box) at head dims of 64 or more:
// G4_CUDA_ATTN_PROMPT_BOXES=1, default 0, or kern_set_attention_prompt_boxes. A tuning knob: the same bytes
// land either way.
static int prompt_boxes = -1;

static int attn_prompt_boxes(void)
{
    if (prompt_boxes < 0) prompt_boxes = attn_env_positive("G4_CUDA_ATTN_PROMPT_BOXES", 0) > 0;
    return prompt_boxes;
}

extern "C" void kern_set_attention_prompt_boxes(int on) { prompt_boxes = on != 0; }

template <int D, int W, bool BOX>
static void launch(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                   const uint16_t *cache_v, const struct kern_row *meta, const struct kern_tile *tiles,
                   const int *n_tiles, int max_tiles, int n_heads, int n_kv, int cap, int is_full, int window,
                   int mask_all, int wz, float *part_acc, float *part_ml, uint16_t *out, kern_stream s)
{
    typedef attn_shape<D, W> S;
    static bool configured = false;
    int smem = (int)(sizeof(uint16_t) * S::NSLOT * S::LDS + (BOX ? 1024 + 2 * KB * D * 2 : 2 * KB * S::LDS * 2));
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(attention_kernel<D, W, BOX>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        configured = true;
    }
    const struct attn_maps maps =
        BOX ? attn_maps_of(k_new, v_new, cache_k, cache_v, n_kv * D, s) : attn_maps{NULL, NULL, NULL, NULL};
    kern_launch(attention_kernel<D, W, BOX>, dim3(max_tiles, n_kv, wz), dim3(32 * W), smem, s, q, k_new, v_new, cache_k,
                cache_v, meta, tiles, n_tiles, n_heads, n_kv, cap, is_full, window, mask_all, part_acc, part_ml, out,
                attn_early_mode(),
                maps);
    KERN_LAUNCHED();
}

extern "C" int kern_attention_tile_rows(int D, int group, int mode)
{
    if (D != 16 && D != 32 && D != 64 && D != 128 && D != 256 && D != 512) return 0;
    int nslot = use_wg(D, mode) ? 64 : 16 * ((mode == KERN_ATTN_NARROW ? AW_DECODE : AW_PROMPT) / (D > 128 ? D / 128 : 1));
    return group <= nslot ? nslot / group : 0;
}

extern "C" int kern_attention(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new,
                              const uint16_t *cache_k, const uint16_t *cache_v, const struct kern_row *rows_meta,
                              const struct kern_tile *tiles, const int *n_tiles, int max_tiles, int split_tiles,
                              int rows, int n_heads, int n_kv, int D, int cap, int is_full, int window, int mask_all,
                              int mode, float *part_acc, float *part_ml, uint16_t *out, kern_stream s)
{
    const int decode = mode == KERN_ATTN_NARROW;
    if (rows == 0 || max_tiles == 0) return 0;
    if (split_tiles < 1 || split_tiles > max_tiles) {
        fprintf(stderr, "g4: fatal: kern_attention: split by %d tiles of at most %d\n", split_tiles, max_tiles);
        abort();
    }
    if (n_heads % n_kv || kern_attention_tile_rows(D, n_heads / n_kv, mode) == 0) {
        fprintf(stderr, "g4: fatal: kern_attention: %d query heads over %d kv heads at head dim %d\n", n_heads, n_kv, D);
        abort();
    }
    const int wz = kern_attention_groups(split_tiles, n_kv, D, mode);
    if (use_wg(D, mode)) {
        attn_wg_launch(q, k_new, v_new, cache_k, cache_v, rows_meta, tiles, n_tiles, max_tiles, n_heads, n_kv, D, cap,
                       is_full, window, mask_all, wz, part_acc, part_ml, out, s);
        return wz > 1;
    }
#define CASE(d)                                                                                                    \
    case d:                                                                                                        \
        if (decode)                                                                                                \
            launch<d, AW_DECODE, false>(q, k_new, v_new, cache_k, cache_v, rows_meta, tiles, n_tiles, max_tiles,   \
                                        n_heads, n_kv, cap, is_full, window, mask_all, wz, part_acc, part_ml, out, s); \
        else if (d >= 64 && attn_prompt_boxes())                                                                   \
            launch<d, AW_PROMPT, (d >= 64)>(q, k_new, v_new, cache_k, cache_v, rows_meta, tiles, n_tiles, max_tiles, \
                                           n_heads, n_kv, cap, is_full, window, mask_all, wz, part_acc, part_ml, out, s); \
        else                                                                                                       \
            launch<d, AW_PROMPT, false>(q, k_new, v_new, cache_k, cache_v, rows_meta, tiles, n_tiles, max_tiles,   \
                                        n_heads, n_kv, cap, is_full, window, mask_all, wz, part_acc, part_ml, out, s); \
        break
    switch (D) {
        CASE(16);
        CASE(32);
        CASE(64);
        CASE(128);
        CASE(256);
        CASE(512);
    default:
        fprintf(stderr, "g4: fatal: kern_attention: head dim %d (16, 32, 64, 128, 256 or 512)\n", D);
        abort();
    }
#undef CASE
    return wz > 1;
}

// Threads of a merge block: 128, each folding D / 128 dimensions one after another, or with the wide merge
// (kern_merge_wide: few rows) one dimension each (D threads where D is over 128): the fold's chain runs once a
// thread instead of D / 128 times (a one-stream merge is latency: ncu, version 13.3).
static int merge_threads(int D, int rows) { return kern_merge_wide(rows) && D > 128 ? D : 128; }

extern "C" void kern_attention_merge(const float *part_acc, const float *part_ml, int rows, int n_heads, int D,
                                     uint16_t *out, const struct kern_kv_new *kv, kern_stream s)
{
    struct kern_kv_new none = {NULL, NULL, NULL, 0, 0, NULL, NULL};
    if (rows == 0) return;
    kern_launch(attention_merge_kernel, dim3(rows, n_heads), dim3(merge_threads(D, rows)), 0, s, part_acc, part_ml, n_heads,
                D, out, kv ? 1 : 0, kv ? *kv : none, kern_early_loads(KERN_EARLY_ATTENTION));
    KERN_LAUNCHED();
}
