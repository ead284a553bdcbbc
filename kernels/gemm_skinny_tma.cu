// gemm_skinny_tma — the decode product (M <= 64 rows) with its weights streamed by tensor copies: variants 6
// (4 consumer warps of 8 columns), 7 (8 of 8), 8 (4 of 16) and 9 (4 of 32) of kern_gemm_skinny_variant.
// y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias), or h = GeGLU of it, the contract of gemm_skinny.cu.
//
// Why: decode is bound by reading the weights once per step, and gemm_skinny.cu's blocks stream them by
// 16-byte cp.async from every thread (each thread addresses several copies a stage), wait for their own
// copies and meet at a barrier before each stage: the stages in flight per block are few (3 of 128 k), and the
// issue and the barrier sit on the path. Here one lane of an extra warp asks the Tensor Memory Accelerator
// for each stage's two boxes (x: 64 k x 16 MT rows, or 8 rows for M <= 8; w: 64 k x 8 NC columns per warp,
// both with the 128-byte swizzle), up to STAGES stages ahead; each consumer warp waits only for its stage's
// "full" mbarrier, runs its mma steps and hands the stage back by one arrival on the "empty" mbarrier. There
// is no block-wide barrier in the loop.
//
// Columns per warp (8 NC): at 64 rows a stage of 8 columns a warp holds twice the activation bytes of weight
// bytes, every warp reads all of them from shared memory for 4 mma steps a load (and every column tile reads
// them from L2), so the 64-row products ran at 47-71 % of the copy rate against 75-99 % at one row (version
// 13.2); with 4 column tiles a warp each activation fragment serves 4 mma steps. At one row the weight stages
// asked for before the wait are what counts (0.1-0.2 ms a step a pair, version 13.5): 8-row activation boxes
// make room for two more.
//
// Exactness: each warp owns 8 NC output columns of one K segment and runs their chain as gemm_skinny.cu does —
// mma.sync m16n8k16 over chunks of 16 in increasing k order within the segment (chunks from the segment's end
// on are skipped, never added as zeros) from a zero accumulator, then the rule's epilogue (segments.cuh). The
// fragments are the same ldmatrix reads at swizzled addresses (tma_swizzled). Rows past M arrive as zeros
// (the copy's out-of-bounds fill), or, past an 8-row box, as whatever the stage holds next; they are never
// stored, and an mma output row depends on its own activation row alone. So every variant gives the same bits
// (test_cuda_kernels asserts it at every product shape and M).
#include <string.h>

#include "common.cuh"
#include "gemm_tail.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"
#include "tma_map.cuh"

#define ST_BK TMA_BOX_K

// MT m16 tiles of rows, NW consumer warps of 8 NC columns; stages: about 48 KiB a block, 4 to 8 of them.
// MT = 0: one m16 tile from a box of 8 activation rows (M <= 8): a stage of variant 6 takes 5 KiB, not 6, and
// 10 of them fit in 50 KiB (4 blocks an SM still), so 40 KiB of weights a block are in flight, 10 stages of them
// asked for before the wait (kern_early_weight_stages). The fragments of rows 8-15 read the next 1 KiB of the
// stage (weights): those rows' outputs are never stored, and an mma row depends only on its own A row.
template <int MT, int NW, int NC> struct st_shape {
    static constexpr int MTILES = MT ? MT : 1, ROWS = MT ? 16 * MT : 8, BN = 8 * NW * NC;
    static constexpr int A_BYTES = ROWS * 128, STAGE = A_BYTES + BN * 128, BUDGET = MT ? 49152 : 51200;
    static constexpr int MAX_STAGES = MT ? 8 : 10;
    static constexpr int STAGES = BUDGET / STAGE < 4 ? 4 : BUDGET / STAGE > MAX_STAGES ? MAX_STAGES : BUDGET / STAGE;
    static constexpr int SMEM = STAGES * STAGE + 1024; // + 1024: the base is rounded up to 1024 bytes
    static constexpr int THREADS = 32 * NW + 32;       // + the producer warp
};

// The producer (one lane): stage kt of the segment into slot kt % STAGES once its consumers have handed the
// slot back. The first `early` stages' weights (kern_early_weight_stages) are asked for before the previous
// kernel is done (no kernel writes weights; see kern_dep_wait), their activations after it.
template <int MT, int NW, int NC>
__device__ __forceinline__ void st_produce(const CUtensorMap *map_x, const CUtensorMap *map_w, unsigned char *sm,
                                           uint64_t *full, uint64_t *empty, int n0, int kbeg, int KT, int early)
{
    typedef st_shape<MT, NW, NC> S;
    const int first = KT < S::STAGES ? KT : S::STAGES, pre = early < first ? early : first;
    for (int kt = 0; kt < pre; kt++) {
        mbar_arrive_expect(&full[kt], S::STAGE);
        tma_load_2d(sm + kt * S::STAGE + S::A_BYTES, map_w, kbeg + kt * ST_BK, n0, &full[kt]);
    }
    kern_dep_wait();
    for (int kt = 0; kt < pre; kt++) tma_load_2d(sm + kt * S::STAGE, map_x, kbeg + kt * ST_BK, 0, &full[kt]);
    for (int kt = pre; kt < KT; kt++) { // past the ring's first round, each slot once its consumers hand it back
        int s = kt % S::STAGES;
        if (kt >= S::STAGES) mbar_wait(&empty[s], (unsigned)(kt / S::STAGES - 1) & 1u);
        mbar_arrive_expect(&full[s], S::STAGE);
        tma_load_2d(sm + s * S::STAGE, map_x, kbeg + kt * ST_BK, 0, &full[s]);
        tma_load_2d(sm + s * S::STAGE + S::A_BYTES, map_w, kbeg + kt * ST_BK, n0, &full[s]);
    }
}

template <int MT, int NW, int NC>
__global__ void __launch_bounds__(st_shape<MT, NW, NC>::THREADS)
    gemm_skinny_tma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                           const float *__restrict__ bias, float *__restrict__ Y, uint16_t *__restrict__ H, int M,
                           int N, int K, int nseg, float *partial, int *counters, const struct kern_tail tail,
                           int early)
{
    typedef st_shape<MT, NW, NC> S;
    kern_dep_launch();
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ uint64_t full[S::STAGES], empty[S::STAGES];
    __shared__ int last;
    unsigned char *sm = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n0 = blockIdx.x * S::BN, seg = blockIdx.y;
    const int L = K / nseg, kbeg = seg * L, kend = kbeg + L, KT = (L + ST_BK - 1) / ST_BK;
    tma_pipe_init(full, empty, S::STAGES, NW);
    __syncthreads();

    if (warp == NW) {
        if (lane == 0) {
            tma_prefetch_map(&map_x);
            tma_prefetch_map(&map_w);
            st_produce<MT, NW, NC>(&map_x, &map_w, sm, full, empty, n0, kbeg, KT, early);
        }
        __syncwarp();
        kern_dep_wait(); // the other lanes too, before seg_finish reads the scratch
    } else {
        kern_dep_wait();
        float acc[S::MTILES][NC][4];
#pragma unroll
        for (int i = 0; i < S::MTILES; i++)
#pragma unroll
            for (int j = 0; j < NC; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
        for (int kt = 0; kt < KT; kt++) {
            const int s = kt % S::STAGES, k0 = kbeg + kt * ST_BK;
            const unsigned char *a = sm + s * S::STAGE, *b = a + S::A_BYTES;
            mbar_wait(&full[s], (unsigned)(kt / S::STAGES) & 1u);
#pragma unroll
            for (int kk = 0; kk < ST_BK; kk += 32) {
                if (k0 + kk >= kend) break;
                bool second = k0 + kk + 16 < kend; // the segment's last 16 may end mid-step
                uint32_t bf[NC][4];
                // B: column tile nj of this warp's, k kk..kk+31: matrices (k+0..7, 8..15, 16..23, 24..31)
#pragma unroll
                for (int nj = 0; nj < NC; nj++)
                    ldmatrix_x4(bf[nj], b + tma_swizzled((warp * NC + nj) * 8 + (lane & 7), kk / 8 + (lane >> 3)));
#pragma unroll
                for (int mi = 0; mi < S::MTILES; mi++) {
                    uint32_t r0[4], r1[4];
                    ldmatrix_x4(r0, a + tma_swizzled(mi * 16 + (lane & 15), kk / 8 + (lane >> 4)));
#pragma unroll
                    for (int nj = 0; nj < NC; nj++) {
                        uint32_t b0[2] = {bf[nj][0], bf[nj][1]};
                        mma_bf16_16816(acc[mi][nj], r0, b0);
                    }
                    if (second) {
                        ldmatrix_x4(r1, a + tma_swizzled(mi * 16 + (lane & 15), (kk + 16) / 8 + (lane >> 4)));
#pragma unroll
                        for (int nj = 0; nj < NC; nj++) {
                            uint32_t b1[2] = {bf[nj][2], bf[nj][3]};
                            mma_bf16_16816(acc[mi][nj], r1, b1);
                        }
                    }
                }
            }
            __syncwarp(); // the warp's reads of the slot are done
            if (lane == 0) mbar_arrive(&empty[s]);
        }
        int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int mi = 0; mi < S::MTILES; mi++)
#pragma unroll
            for (int nj = 0; nj < NC; nj++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    seg_store2(Y, H, partial, bias, M, N, nseg, seg, mi * 16 + g + 8 * h,
                               n0 + (warp * NC + nj) * 8 + 2 * t, acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
    }
    if (nseg > 1) seg_finish(Y, H, partial, bias, M, N, nseg, 0, n0, M, S::BN, &counters[blockIdx.x], &last);
    // the CTA that completed this column tile: the tail's arrival (the stages' memory is free by then)
    if (tail.kind != KERN_TAIL_NONE && (nseg == 1 || last))
        gemm_tail_run(tail, Y, M, N, n0, S::BN, reinterpret_cast<float *>(sm));
}

template <int MT, int NW, int NC>
static void st_launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                      int K, int nseg, const struct kern_gemm_ws *ws, const struct kern_tail *tail, kern_stream s)
{
    typedef st_shape<MT, NW, NC> S;
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_skinny_tma_kernel<MT, NW, NC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        S::SMEM));
        configured = true;
    }
    CUtensorMap mx = tma_map_rows(x, M, K, S::ROWS, "kern_gemm_skinny_tma");
    CUtensorMap mw = tma_map_rows(w, N, K, S::BN, "kern_gemm_skinny_tma");
    dim3 grid((N + S::BN - 1) / S::BN, nseg);
    struct kern_tail none;
    memset(&none, 0, sizeof none);
    kern_launch(gemm_skinny_tma_kernel<MT, NW, NC>, grid, dim3(S::THREADS), S::SMEM, s, mx, mw, bias, y, h, M, N, K, nseg,
                nseg > 1 ? ws->partial : NULL, nseg > 1 ? ws->counters : NULL, tail ? *tail : none,
                kern_early_weight_stages());
    KERN_LAUNCHED();
}

template <int NW, int NC>
static void st_rows(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                    int K, int nseg, const struct kern_gemm_ws *ws, const struct kern_tail *tail, kern_stream s)
{
    if (M <= 8 && kern_skinny_rows8()) st_launch<0, NW, NC>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s);
    else if (M <= 16) st_launch<1, NW, NC>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s);
    else if (M <= 32) st_launch<2, NW, NC>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s);
    else st_launch<4, NW, NC>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s);
}

// Columns per block of each variant (6..9).
extern "C" int kern_gemm_skinny_tma_cols(int variant)
{
    static const int cols[4] = {32, 64, 64, 128};
    return variant >= 6 && variant <= 9 ? cols[variant - 6] : 0;
}

// Called by kern_gemm_skinny_variant (gemm_skinny.cu) with its arguments checked, M in 1..64, N > 0.
extern "C" void kern_gemm_skinny_tma(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                                     uint16_t *h, int M, int N, int K, int nseg, const struct kern_gemm_ws *ws,
                                     const struct kern_tail *tail, kern_stream s)
{
    switch (variant) {
    case 6: st_rows<4, 1>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s); break;
    case 7: st_rows<8, 1>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s); break;
    case 8: st_rows<4, 2>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s); break;
    case 9: st_rows<4, 4>(x, w, bias, y, h, M, N, K, nseg, ws, tail, s); break;
    default: fprintf(stderr, "g4: fatal: kern_gemm_skinny_tma: variant %d (6..9)\n", variant); abort();
    }
}
