// gemm_tma — the prompt product with shared memory filled by tensor copies from one producer warp: y (M, N)
// fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias), or h = GeGLU of it, the contract of kern_gemm_bf16, on the
// same wgmma steps as gemm_wgmma.cu (wgmma.cuh).
//
// Why: gemm_wgmma.cu's kernels copy every stage with 16-byte cp.async from all 256 threads (12 copies and
// their addressing per thread and stage at 256 wide), wait for their own copies, then meet at a barrier, so
// the tensor cores idle while the warps issue copies, and the prefetch distance is 2 stages. Here one lane
// of a ninth warp asks the Tensor Memory Accelerator for each stage's two boxes (x: 64 k x 128 rows, w: 64 k
// x BN rows, the 128-byte swizzle written by the copy engine itself), and the two consumer warpgroups only
// wait on the stage's "full" mbarrier and run wgmma; each consumer warp hands a stage back by one arrival on
// its "empty" mbarrier once the wgmma group that read it has completed. Every stage but the ones being read
// is in flight.
//
// Exactness: the shared layout is the one gemm_wgmma.cu's variant 1 writes by hand (row r's 16-byte chunk c
// at r * 128 + ((c ^ r % 8) * 16): the TMA's 128-byte swizzle on 1024-aligned stages), read through the same
// descriptors by the same k16 steps in increasing k order into accumulators that start at zero; rows and
// columns past M and N are zeros (the copy's out-of-bounds fill). Variant 4 (256-wide tiles) runs each K
// segment in a CTA of its own and ends with the rule's epilogue (segments.cuh); variant 5 (128 wide) runs a
// tile's segments in order in one CTA, adding each to a running total from 0.0f, as variant 3 does. So both
// give kern_gemm_bf16's bits (test_cuda_wgmma asserts it for every variant).
//
// Warps: 0-7 are the consumers (warpgroup 0 rows 0-63 of the tile, warpgroup 1 rows 64-127), warp 8 the
// producer. 288 threads leave the consumers up to 224 registers (128 accumulators at 256 wide; 64 and a
// 64-value total at 128 wide).
#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"
#include "tma_map.cuh"
#include "wgmma.cuh"

#define TM_BM 128
#define TM_BK TMA_BOX_K
#define TM_CONSUMER_WARPS 8
#define TM_THREADS (32 * TM_CONSUMER_WARPS + 32) // + the producer warp
#define TM_A_BYTES (TM_BM * TM_BK * 2)           // 16 KiB of x per stage

template <int VARIANT> struct tma_shape {
    static constexpr int BN = VARIANT == 4 ? 256 : 128;
    static constexpr bool SEQ = VARIANT == 5;          // a tile's segments in order in one CTA
    static constexpr int STAGES = VARIANT == 4 ? 4 : 6; // 192 KiB either way
    static constexpr int STAGE = TM_A_BYTES + BN * TM_BK * 2;
    static constexpr int SMEM = STAGES * STAGE + 1024; // + 1024: the base is rounded up to 1024 bytes
    static constexpr int NV = BN / 2;                  // accumulators per consumer thread
};

// The producer (one lane): stage kt of the CTA's K range into slot kt % STAGES once the consumers have
// handed the slot back. The first STAGES stages' weights are asked for before the previous kernel is done
// (no kernel writes weights; see kern_dep_wait), their activations after it.
template <int VARIANT>
__device__ __forceinline__ void produce(const CUtensorMap *map_x, const CUtensorMap *map_w, unsigned char *sm,
                                        uint64_t *full, uint64_t *empty, int m0, int n0, int k_begin, int KT)
{
    typedef tma_shape<VARIANT> S;
    const int first = KT < S::STAGES ? KT : S::STAGES;
    for (int kt = 0; kt < first; kt++) {
        mbar_arrive_expect(&full[kt], S::STAGE);
        tma_load_2d(sm + kt * S::STAGE + TM_A_BYTES, map_w, k_begin + kt * TM_BK, n0, &full[kt]);
    }
    kern_dep_wait();
    for (int kt = 0; kt < first; kt++) tma_load_2d(sm + kt * S::STAGE, map_x, k_begin + kt * TM_BK, m0, &full[kt]);
    for (int kt = first; kt < KT; kt++) {
        int s = kt % S::STAGES;
        unsigned char *st = sm + s * S::STAGE;
        mbar_wait(&empty[s], (unsigned)(kt / S::STAGES - 1) & 1u); // the slot's previous use handed back
        mbar_arrive_expect(&full[s], S::STAGE);
        tma_load_2d(st, map_x, k_begin + kt * TM_BK, m0, &full[s]);
        tma_load_2d(st + TM_A_BYTES, map_w, k_begin + kt * TM_BK, n0, &full[s]);
    }
}

template <int VARIANT>
__global__ void __launch_bounds__(TM_THREADS, 1)
    gemm_tma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                    const float *__restrict__ bias, float *__restrict__ Y, uint16_t *__restrict__ H, int M, int N,
                    int K, int nseg, float *partial, int *counters)
{
    typedef tma_shape<VARIANT> S;
    kern_dep_launch();
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ uint64_t full[S::STAGES], empty[S::STAGES];
    __shared__ int last;
    uint32_t base = smem_u32(smem_raw), pad = (1024 - (base & 1023)) & 1023;
    unsigned char *sm = smem_raw + pad;
    base += pad;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int m0 = blockIdx.x * TM_BM, n0 = blockIdx.y * S::BN, seg = S::SEQ ? 0 : blockIdx.z, L = K / nseg;
    const int k_begin = seg * L, KT = (S::SEQ ? K : L) / TM_BK, seg_stages = L / TM_BK;
    tma_pipe_init(full, empty, S::STAGES, TM_CONSUMER_WARPS);
    __syncthreads();

    if (warp == TM_CONSUMER_WARPS) {
        if (lane == 0) {
            tma_prefetch_map(&map_x);
            tma_prefetch_map(&map_w);
            produce<VARIANT>(&map_x, &map_w, sm, full, empty, m0, n0, k_begin, KT);
        }
        __syncwarp();
        kern_dep_wait(); // the other lanes too, before seg_finish reads the scratch
    } else {
        kern_dep_wait();
        const int wg = warp >> 2;
        float acc[S::NV], total[S::SEQ ? S::NV : 1]; // total: the segments so far, added in order to 0.0f
#pragma unroll
        for (int i = 0; i < S::NV; i++) acc[i] = 0.0f;
#pragma unroll
        for (int i = 0; i < (S::SEQ ? S::NV : 1); i++) total[i] = 0.0f;
        int held = -1; // the slot whose wgmma group may still run (handed back once it has completed)
        for (int kt = 0; kt < KT; kt++) {
            const int s = kt % S::STAGES;
            mbar_wait(&full[s], (unsigned)(kt / S::STAGES) & 1u);
            // this warpgroup's 64 rows of x start 8 groups of 8 rows in; descriptors as variant 1's (the 128-byte
            // swizzle: leading offset unused, groups of 8 rows CM_MN_STEP apart)
            uint32_t a = base + s * S::STAGE + wg * (64 / 8) * CM_MN_STEP, b = base + s * S::STAGE + TM_A_BYTES;
            fence_operands<S::NV>(acc);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < TM_BK / 16; kk++) // k16 chunks in increasing order, 32 bytes apart in a row
                wgmma_tile<S::BN>(acc, smem_desc(a + kk * 32, 16, CM_MN_STEP, 1),
                                  smem_desc(b + kk * 32, 16, CM_MN_STEP, 1));
            wgmma_commit();
            if (S::SEQ && (kt + 1) % seg_stages == 0) { // a segment ends: its chain is whole, add it
                wgmma_wait<0>();
                fence_operands<S::NV>(acc);
                if (lane == 0) {
                    if (held >= 0) mbar_arrive(&empty[held]);
                    mbar_arrive(&empty[s]);
                }
                held = -1;
#pragma unroll
                for (int i = 0; i < S::NV; i++) total[S::SEQ ? i : 0] += acc[i], acc[i] = 0.0f;
            } else {
                wgmma_wait<1>(); // the previous group has completed: its slot is free
                fence_operands<S::NV>(acc);
                if (lane == 0 && held >= 0) mbar_arrive(&empty[held]);
                held = s;
            }
        }
        wgmma_wait<0>();
        fence_operands<S::NV>(acc);

        // SEQ: the total is already the segments' sum from 0.0f (never -0.0f), so the one-segment epilogue's
        // (0.0f + total) + bias is total + bias, as the rule has it
        int g = lane >> 2, t = lane & 3, rbase = m0 + wg * 64 + (warp & 3) * 16 + g;
        if (H && (S::SEQ || nseg == 1)) { // h of one segment: through the idle stages (gemm_wgmma.cu's epilogue)
            static_assert(SEG_HS_BYTES(TM_BM, S::BN) <= S::STAGES * S::STAGE, "h tile in the stages");
            const int consumers = 32 * TM_CONSUMER_WARPS;
            uint16_t *hs = (uint16_t *)sm;
            named_barrier(1, consumers); // every consumer's last wgmma has read its stage; every copy has landed
            if constexpr (S::SEQ) seg_geglu_stage<S::BN>(hs, bias, N, n0, rbase - m0, t, total);
            else seg_geglu_stage<S::BN>(hs, bias, N, n0, rbase - m0, t, acc);
            named_barrier(1, consumers);
            seg_geglu_flush<TM_BM, S::BN>(H, hs, M, N, m0, n0, threadIdx.x, consumers);
            return;
        }
#pragma unroll
        for (int j = 0; j < S::BN / 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int i = 4 * j + 2 * h;
                if (S::SEQ)
                    seg_store2(Y, H, NULL, bias, M, N, 1, 0, rbase + 8 * h, n0 + 8 * j + 2 * t, total[S::SEQ ? i : 0],
                               total[S::SEQ ? i + 1 : 0]);
                else
                    seg_store2(Y, H, partial, bias, M, N, nseg, seg, rbase + 8 * h, n0 + 8 * j + 2 * t, acc[i],
                               acc[i + 1]);
            }
    }
    if (!S::SEQ && nseg > 1)
        seg_finish(Y, H, partial, bias, M, N, nseg, m0, n0, TM_BM, S::BN,
                   &counters[blockIdx.x * gridDim.y + blockIdx.y], &last);
}

template <int VARIANT>
static void tma_launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                       int K, int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    typedef tma_shape<VARIANT> S;
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_tma_kernel<VARIANT>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM));
        configured = true;
    }
    if ((N + S::BN - 1) / S::BN > 65535) {
        fprintf(stderr, "g4: fatal: kern_gemm_tma: N = %d over the grid limit\n", N);
        abort();
    }
    bool scratch = nseg > 1 && !S::SEQ;
    CUtensorMap mx = tma_map_rows(x, M, K, TM_BM, "kern_gemm_tma"), mw = tma_map_rows(w, N, K, S::BN, "kern_gemm_tma");
    dim3 grid((M + TM_BM - 1) / TM_BM, (N + S::BN - 1) / S::BN, S::SEQ ? 1 : nseg);
    kern_launch(gemm_tma_kernel<VARIANT>, grid, dim3(TM_THREADS), S::SMEM, s, mx, mw, bias, y, h, M, N, K, nseg,
                scratch ? ws->partial : NULL, scratch ? ws->counters : NULL);
    KERN_LAUNCHED();
}

extern "C" void kern_gemm_tma(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                              uint16_t *h, int M, int N, int K, int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    if (variant == 4) tma_launch<4>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (variant == 5) tma_launch<5>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else {
        fprintf(stderr, "g4: fatal: kern_gemm_tma: variant %d (4 or 5)\n", variant);
        abort();
    }
}
