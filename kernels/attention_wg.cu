// attention_wg — prompt attention at head dims 256 and 512 on Hopper's warpgroup instructions (wgmma), with
// attention.cu's arithmetic to the bit (its head comment), for passes of more rows than a decode graph takes
// (kernels.h, KERN_ATTN_PROMPT; kern_attention_wg turns it off).
//
// Why: under ncu (docs/perf.md, version 13.6) the mma.sync prompt kernel ran at 72-84 TFLOP/s, latency-bound
// in one 8-warp block an SM: lane-serial row copies, then chains of ldmatrix and mma.sync from 2-4
// accumulators a warp. Here a CTA of two warpgroups takes 64 slots ((row, query head) pairs: a tile of 64 / G
// rows) of one kv head. The block's keys and values come by tensor boxes (load_block_box: 128-byte swizzled
// column chunks, the layout wgmma reads). Each warpgroup's scores for half the block's keys (32) are D / 16
// wgmma steps reading the queries and keys from shared memory, and its 128 output dimensions are 4 steps with
// the weights from registers and the values from shared memory. At head dim 512 two CTAs share a (tile, kv
// head), each computing the scores and 256 of the output dimensions, so that the outputs, the partials' running
// fold and the scores fit the registers of 256 threads.
//
// The same bits as attention.cu, element by element: a score is the same chain of k16 steps over the head
// dimension from 0 (a wgmma k16 step rounds as mma.sync's: test_cuda_wgmma); the block maximum is a maximum;
// the weights are the same expressions (attention.cuh); their sum keeps attention.cu's order, a lane's tiles
// in runs of one of its warps' keys (32 at D 256, 16 at D 512), each over the slot's 4 lanes, then the runs in
// key order; an output is the same rescale and chain of 4 k16 steps a block, and the partials fold by the same
// rule in the CTA, or in the merge when several CTAs share a tile's partials. The engine test compares prompt
// chunks with single rows (attention.cu's decode kernels) and this kernel with attention.cu's prompt kernel.
#include "attention.cuh"
#include "wgmma.cuh"

template <int D> struct wg_shape {
    static constexpr int SPLIT = D / 256;                      // CTAs of a (tile, kv head), 256 outputs each
    static constexpr int SUB = D / 256;                        // sum runs in a warpgroup's 32 keys
    static constexpr int Q_BYTES = 64 * D * 2;                 // the queries: D / 64 chunks of 64 slots x 128 bytes
    static constexpr int K_BYTES = KB * D * 2;                 // the keys: D / 64 chunks of KB rows x 128 bytes
    static constexpr int V_BYTES = KB * 256 * 2;               // this CTA's 4 chunks of values
    static constexpr int SMEM = 1024 + Q_BYTES + K_BYTES + V_BYTES; // 1024: the boxes' alignment
};

// PV_MMA: the outputs by mma.sync steps from the same swizzled values (ldmatrix, transposed), in place of the
// N-major wgmma steps: G4_CUDA_ATTN_WG_PV_MMA=1 or kern_set_attention_wg_pv_mma, a diagnostic (the same bits;
// the project's only N-major descriptor is the wgmma step's, so a first run that differs tells which half is
// wrong).
template <int D, bool PV_MMA>
__global__ void __launch_bounds__(256, 1) attention_wg_kernel(
    const uint16_t *__restrict__ q, const uint16_t *__restrict__ k_new, const uint16_t *__restrict__ v_new,
    const uint16_t *__restrict__ cache_k, const uint16_t *__restrict__ cache_v, const struct kern_row *__restrict__ meta,
    const struct kern_tile *__restrict__ tiles, const int *__restrict__ n_tiles, int n_heads, int n_kv, int cap,
    int is_full, int window, int mask_all, float *__restrict__ part_acc, float *__restrict__ part_ml,
    uint16_t *__restrict__ out, int early, const struct attn_maps maps)
{
    typedef wg_shape<D> S;
    kern_dep_launch();
    // (tile, kv head, output half) from the launch order, last tile first (attention.cu: longest first)
    const int units = n_kv * S::SPLIT, lin = (int)(blockIdx.y * gridDim.x + blockIdx.x);
    const int ti = *n_tiles - 1 - lin / units, kvh = lin % units / S::SPLIT, half = lin % S::SPLIT;
    if (ti < 0 || ti >= *n_tiles) return;
    if (early != 1) kern_dep_wait();
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char *qbuf = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    unsigned char *kbuf = qbuf + S::Q_BYTES, *vbuf = kbuf + S::K_BYTES;
    __shared__ int range_lo, range_hi;
    __shared__ uint64_t bars[2]; // the key block's and the value block's arrivals
    __shared__ float red_max[2][64], red_sum[D / 128][64];
    __shared__ __align__(16) uint16_t pw[64][KB + 8]; // the block's bf16 weights, both warpgroups' keys

    const struct kern_tile tile = tiles[ti];
    const int G = n_heads / n_kv, kvd = n_kv * D, WZ = gridDim.z;
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int s0 = 16 * ((threadIdx.x >> 5) & 3) + g; // this thread's slots: s0 and s0 + 8 (its warp's 16)
    const struct kern_row m0 = meta[tile.row0];
    const int n_slots = tile.nrows * G;
    // block b's keys (all D / 64 chunks) or values (this CTA's 4) into their buffer
    auto load = [&](bool k, int b, int lo_, int hi_, int part) {
        load_block_box<D>(k ? kbuf : vbuf, k ? 0 : 4 * half, k ? D / 64 : 4, k ? maps.k_new : maps.v_new,
                          k ? maps.cache_k : maps.cache_v, k ? k_new : v_new, k ? cache_k : cache_v, m0, b, lo_, hi_,
                          kvh, cap, kvd, &bars[k ? 0 : 1], part);
    };

    if (threadIdx.x == 0) {
        mbar_init(&bars[0], 1);
        mbar_init(&bars[1], 1);
        mbar_init_fence();
    }
    tile_range(meta, tile, is_full, window, mask_all, &range_lo, &range_hi);
    struct slot_info sl[2];
    size_t sidx[2]; // their (row, head) indices
    int svalid[2];
    slots_of(meta, tile, s0, G, n_heads, kvh, sl, sidx, svalid);
    // the (partial, block) pairs in attention.cu's order and pipeline: the next pair's keys load while this
    // pair's weights and products run, its values while the scores run
    if (early) early_first_pair(load, &range_lo, &range_hi, WZ, early); // the first pair before the wait
    // the queries of the 64 slots, the A operand of the scores
    load_queries_wg<D>(qbuf, q, tile, G, n_heads, kvh, n_slots);
    __syncthreads();
    const int lo = range_lo, hi = range_hi;
    const int b_first = lo / KB, b_last = hi / KB;
    struct pair_cursor next = first_loads(load, lo, hi, WZ, early); // the next pair to load
    unsigned kpar = 0, vpar = 0;
    cp_async_wait<0>();
    fence_proxy_async(); // this thread's query copies, for wgmma's reads after the loop's first __syncthreads

    // operand bases: the queries (all 64 slots), this warpgroup's 32 keys, its 128 output dimensions' values
    const uint32_t qa = smem_u32(qbuf), ka = smem_u32(kbuf) + wg * 32 * 128, va = smem_u32(vbuf) + wg * 2 * (KB * 128);
    float rm[2] = {-INFINITY, -INFINITY}, rl[2] = {0.0f, 0.0f}, ro[16][4];
#pragma unroll
    for (int j = 0; j < 16; j++) ro[j][0] = ro[j][1] = ro[j][2] = ro[j][3] = 0.0f;
    for (int w = blockIdx.z; w < NP; w += WZ) {
        float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, o[16][4];
#pragma unroll
        for (int j = 0; j < 16; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
        for (int b = partial_first(b_first, w); b <= b_last; b += NP) {
            const int kb0 = b * KB;
            const bool more = next.more();
            mbar_wait(&bars[0], kpar);
            kpar ^= 1u;
            fence_proxy_async(); // this thread's stores of a copied block, for wgmma's reads
            __syncthreads();

            // scores: 64 slots x this warpgroup's 32 keys, k16 steps over the head dimension in order
            float sc[4][4];
#pragma unroll
            for (int j = 0; j < 4; j++) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
            fence_operands<16>(&sc[0][0]);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                wgmma_m64n32k16(&sc[0][0], smem_desc(qa + (kk >> 2) * (64 * 128) + (kk & 3) * 32, 16, CM_MN_STEP, 1),
                                smem_desc(ka + (kk >> 2) * (KB * 128) + (kk & 3) * 32, 16, CM_MN_STEP, 1));
            wgmma_commit();
            wgmma_wait<0>();
            fence_operands<16>(&sc[0][0]);
            __syncthreads(); // both warpgroups have their scores: the key buffer is free
            if (more) load(true, next.lb, lo, hi, LOAD_ALL);
            // the mask and each slot's block maximum over both warpgroups (a maximum: any order)
            float bm[2];
            slots_block_max<4>(sc, sl, meta, m0, kb0, 32 * wg, t, is_full, window, mask_all, bm);
            if (t == 0) red_max[wg][s0] = bm[0], red_max[wg][s0 + 8] = bm[1];
            __syncthreads();
#pragma unroll
            for (int h = 0; h < 2; h++) bm[h] = fmaxf(bm[h], fmaxf(red_max[0][s0 + 8 * h], red_max[1][s0 + 8 * h]));
            // p = exp(s - max): fp32 into the sums (runs in key order, as attention.cu's warps), bf16 to pw
            float corr[2], ps[2][S::SUB];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float mn = fmaxf(mx[h], bm[h]);
                corr[h] = mn == -INFINITY ? 1.0f : attn_exp(mx[h] - mn);
                block_weights<4, S::SUB>(sc, h, mn, ps[h]);
                mx[h] = mn;
            }
            if (t == 0)
#pragma unroll
                for (int r = 0; r < S::SUB; r++)
                    red_sum[wg * S::SUB + r][s0] = ps[0][r], red_sum[wg * S::SUB + r][s0 + 8] = ps[1][r];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                *(uint32_t *)&pw[s0][32 * wg + j * 8 + 2 * t] = pack_bf16x2(sc[j][0], sc[j][1]);
                *(uint32_t *)&pw[s0 + 8][32 * wg + j * 8 + 2 * t] = pack_bf16x2(sc[j][2], sc[j][3]);
            }
            __syncthreads();
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float sum = 0.0f;
#pragma unroll
                for (int r = 0; r < D / 128; r++) sum += red_sum[r][s0 + 8 * h];
                l[h] = __fmaf_rn(l[h], corr[h], sum);
            }
#pragma unroll
            for (int j = 0; j < 16; j++) {
                o[j][0] *= corr[0];
                o[j][1] *= corr[0];
                o[j][2] *= corr[1];
                o[j][3] *= corr[1];
            }
            mbar_wait(&bars[1], vpar);
            vpar ^= 1u;
            fence_proxy_async();
            __syncthreads();
            // o += p · v over the block's 4 chunks of 16 keys, the weights from pw as mma's A fragments
            uint32_t a[4][4];
#pragma unroll
            for (int kc = 0; kc < 4; kc++) ldmatrix_x4(a[kc], &pw[s0 - g + (lane & 15)][kc * 16 + (lane >> 4) * 8]);
            if constexpr (PV_MMA) {
#pragma unroll
                for (int kc = 0; kc < 4; kc++)
#pragma unroll
                    for (int dj = 0; dj < 8; dj++) {
                        const int row = kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                        const int col = wg * 128 + dj * 16 + (lane >> 4) * 8;
                        uint32_t r[4];
                        ldmatrix_x4_trans(r, vbuf + (col >> 6) * (KB * 128) + tma_swizzled(row, (col & 63) >> 3));
                        uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                        mma_bf16_16816(o[2 * dj], a[kc], b0);
                        mma_bf16_16816(o[2 * dj + 1], a[kc], b1);
                    }
            } else {
                fence_operands<64>(&o[0][0]);
                wgmma_fence();
#pragma unroll
                for (int kc = 0; kc < 4; kc++)
                    wgmma_m64n128k16_rt(&o[0][0], a[kc], smem_desc(va + kc * 16 * 128, KB * 128, CM_MN_STEP, 1));
                wgmma_commit();
                wgmma_wait<0>();
                fence_operands<64>(&o[0][0]);
            }
            __syncthreads(); // the value buffer and pw are free
            if (more) load(false, next.lb, lo, hi, LOAD_ALL);
            next.advance();
        }
        if (WZ == 1) partial_fold<16>(rm, rl, ro, mx, l, o);
        else partial_store<16>(part_acc, part_ml, sidx, svalid, w, D, 256 * half + 128 * wg, t,
                               half == 0 && wg == 0 && t == 0, mx, l, o);
    }
    if (WZ == 1) tile_out<16>(out, sidx, svalid, D, 256 * half + 128 * wg, t, rl, ro);
}

template <int D, bool PV_MMA>
static void launch(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                   const uint16_t *cache_v, const struct kern_row *meta, const struct kern_tile *tiles,
                   const int *n_tiles, int max_tiles, int n_heads, int n_kv, int cap, int is_full, int window,
                   int mask_all, int wz, float *part_acc, float *part_ml, uint16_t *out, kern_stream s)
{
    typedef wg_shape<D> S;
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(attention_wg_kernel<D, PV_MMA>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        S::SMEM));
        configured = true;
    }
    kern_launch(attention_wg_kernel<D, PV_MMA>, dim3(max_tiles, n_kv * S::SPLIT, wz), dim3(256), S::SMEM, s, q, k_new, v_new,
                cache_k, cache_v, meta, tiles, n_tiles, n_heads, n_kv, cap, is_full, window, mask_all, part_acc,
                part_ml, out, attn_early_mode(), attn_maps_of(k_new, v_new, cache_k, cache_v, n_kv * D, s));
    KERN_LAUNCHED();
}

int attn_wg_split(int D) { return D == 256 || D == 512 ? D / 256 : 0; }

static int pv_mma = -1; // G4_CUDA_ATTN_WG_PV_MMA, read on the first launch; kern_set_attention_wg_pv_mma

extern "C" void kern_set_attention_wg_pv_mma(int on) { pv_mma = on != 0; }

void attn_wg_launch(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                    const uint16_t *cache_v, const struct kern_row *meta, const struct kern_tile *tiles,
                    const int *n_tiles, int max_tiles, int n_heads, int n_kv, int D, int cap, int is_full, int window,
                    int mask_all, int wz, float *part_acc, float *part_ml, uint16_t *out, kern_stream s)
{
    if (pv_mma < 0) pv_mma = attn_env_positive("G4_CUDA_ATTN_WG_PV_MMA", 0) > 0;
#define WG_LAUNCH(d, pv)                                                                                           \
    launch<d, pv>(q, k_new, v_new, cache_k, cache_v, meta, tiles, n_tiles, max_tiles, n_heads, n_kv, cap, is_full,   \
                  window, mask_all, wz, part_acc, part_ml, out, s)
    if (D == 256 && pv_mma) WG_LAUNCH(256, true);
    else if (D == 256) WG_LAUNCH(256, false);
    else if (D == 512 && pv_mma) WG_LAUNCH(512, true);
    else if (D == 512) WG_LAUNCH(512, false);
    else {
        fprintf(stderr, "g4: fatal: attention_wg: head dim %d (256 or 512)\n", D);
        abort();
    }
#undef WG_LAUNCH
}
