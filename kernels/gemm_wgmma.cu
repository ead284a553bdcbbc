// gemm_wgmma — an experimental Hopper prompt kernel: y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias),
// the contract of kern_gemm_bf16 (gemm_bf16.cu) on wgmma instead of mma.sync. The mma.sync kernel reaches
// 130-220 TFLOP/s on an H200 where cuBLAS reaches ~790; wgmma is the instruction that can close that gap.
// It may replace the prompt kernel because a wgmma m64nNk16 step rounds exactly as the mma.sync m16n8k16 step
// does (tests/unit/test_cuda_wgmma.c, on an H200); kern_gemm runs it for more than 64 rows.
//
// Shape: 128x256 (or 128x128) CTA tiles, 256 threads = 2 warpgroups of 64 rows each, K in stages of 64 through a
// 4-stage (variant 3: 6-stage) cp.async pipeline (every thread copies, no TMA), wgmma.m64n256k16 with both operands read from
// shared memory through matrix descriptors, K-major, no swizzle, fp32 accumulators in registers.
//
// Exactness (kernels.h, "the reduction rule"): per output element, the chunks of 16 of each K segment run in
// increasing order through one accumulator that starts at zero (registers zeroed, scale-d = 1 on every
// step, so each step is acc = acc + a·b over 16, as with mma.sync); segments run in CTAs of their own
// (grid z) and the CTA that completes a tile adds them in order to 0.0f, then the bias (segments.cuh, the
// epilogue of every product kernel). The grid runs M fastest, so CTAs that share a weight tile run together.
//
// Limits: each segment's length K / nseg must be a multiple of 64 (the stage); when it is not (K = 48, say),
// kern_gemm_wgmma calls kern_gemm_bf16 instead, which gives the same bits by the rule.
//
// Variants, each proven exact on an H200 (test_cuda_wgmma, 2026-12-03): 0, unswizzled 8x8 core matrices
// (leading offset = 128 bytes, the next 8 k; stride offset = 1024 bytes, the next 8 rows) — exact but slow,
// 110-215 TFLOP/s; 1, the 128-byte swizzle (each 128-byte row of a stage's 64 k holds its 16-byte chunks at
// chunk ^ (row % 8); stride offset 1024 bytes per 8 rows), 128x256 tiles — 550-610 TFLOP/s on gate|up;
// 2, the same 128 wide (m64n128k16), for products with fewer outputs (q|k|v, o, down: N < 16384), where 256-wide
// tiles leave too few CTAs. The first run also showed that wgmma's k16 steps give mma.sync's bits exactly.
// 3, 128 wide with 6 stages, where one CTA runs all its tile's segments in order: at a segment's end it waits
// for the segment's last wgmma, adds the accumulators to a running total (registers, from 0.0f) and zeroes
// them — the rule's order without scratch or a second pass (a 256-wide tile would need 256 registers).
// 4 and 5: variants 1 and 3 with stages filled by tensor copies from a producer warp (gemm_tma.cu), exact on
// an H100 (2026-12-06) and faster: the default (4 for N >= 16384, 5 below). G4_CUDA_WGMMA=0..5 forces one
// variant everywhere, so a benchmark can compare them; G4_CUDA_WGMMA=mma runs 1 and 3 where the default runs
// 4 and 5.
#include <string.h>

#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"
#include "wgmma.cuh"

#define WG_BM 128
#define WG_BN 256 // the widest tile (variants 0, 1); variants 2 and 3 are 128 wide
#define WG_BK 64
#define WG_THREADS 256
#define WG_A_BYTES (WG_BM * WG_BK * 2) // 16 KiB per stage
#define WG_B_BYTES(bn) ((bn) * WG_BK * 2) // 32 KiB per stage at 256 wide
#define WG_STAGE_BYTES(bn) (WG_A_BYTES + WG_B_BYTES(bn))
#define WG_TILE_N(variant) ((variant) >= 2 ? 128 : 256)
#define WG_STAGES(variant) ((variant) == 3 ? 6 : 4)
// + 1024: the base is rounded up to 1024 bytes
#define WG_SMEM(variant) (WG_STAGES(variant) * WG_STAGE_BYTES(WG_TILE_N(variant)) + 1024)

// One stage: (128 x 64) of x and (256 x 64) of w into the core-matrix layout, zeros past M and N. Piece
// p = threadIdx.x + 256 j lands at byte 16 p, so 8 consecutive threads fill one core matrix (conflict-free
// stores); this thread's rows are row0 + 32 j at the 16-byte column (threadIdx.x / 8) % 8.
// Variant 1: piece p = threadIdx.x + 256 j is row p / 8, chunk p % 8 (8 threads read one row's 128 bytes),
// stored at row * 128 + ((chunk ^ row % 8) * 16).
template <int BN>
__device__ __forceinline__ void load_stage_swizzled(unsigned char *st, const uint16_t *X, const uint16_t *W, int M,
                                                    int N, int K, int m0, int n0, int k0)
{
    int tid = threadIdx.x, row0 = tid >> 3, chunk = tid & 7, col = k0 + chunk * 8;
#pragma unroll
    for (int j = 0; j < WG_BM / 32; j++) {
        int rr = row0 + 32 * j, r = m0 + rr;
        bool ok = r < M;
        cp_async16(st + rr * 128 + ((chunk ^ (rr & 7)) * 16), X + (size_t)(ok ? r : 0) * K + (ok ? col : 0), ok);
    }
#pragma unroll
    for (int j = 0; j < BN / 32; j++) {
        int rr = row0 + 32 * j, r = n0 + rr;
        bool ok = r < N;
        cp_async16(st + WG_A_BYTES + rr * 128 + ((chunk ^ (rr & 7)) * 16), W + (size_t)(ok ? r : 0) * K + (ok ? col : 0),
                   ok);
    }
}

__device__ __forceinline__ void load_stage(unsigned char *st, const uint16_t *X, const uint16_t *W, int M, int N,
                                           int K, int m0, int n0, int k0)
{
    int tid = threadIdx.x, row0 = (tid >> 6) * 8 + (tid & 7), col = k0 + ((tid >> 3) & 7) * 8;
#pragma unroll
    for (int j = 0; j < WG_BM / 32; j++) {
        int r = m0 + row0 + 32 * j;
        bool ok = r < M;
        cp_async16(st + (tid + WG_THREADS * j) * 16, X + (size_t)(ok ? r : 0) * K + (ok ? col : 0), ok);
    }
#pragma unroll
    for (int j = 0; j < WG_BN / 32; j++) {
        int r = n0 + row0 + 32 * j;
        bool ok = r < N;
        cp_async16(st + WG_A_BYTES + (tid + WG_THREADS * j) * 16, W + (size_t)(ok ? r : 0) * K + (ok ? col : 0), ok);
    }
}

// One CTA: a 128x256 tile of y over one K segment. Pipeline, per stage kt (slot kt % 4):
//   wait for this thread's copies of stage kt, fence them to the async proxy (wgmma reads through it),
//   barrier; refill slot (kt + 2) % 4 with stage kt + 2; issue stage kt's 4 wgmmas, commit, wait until at
//   most 1 group is in flight.
// Why the refill is safe with 1 group in flight: slot (kt + 2) % 4 = (kt - 2) % 4 was last read by group
// kt - 2, and every warpgroup finished that group before the barrier (its wait<1> at stage kt - 1 left only
// group kt - 1 running). The slots of groups kt - 1 and kt and of the copy of stage kt + 1 are the other
// three. The price is a prefetch distance of 2 stages instead of 3.
template <int VARIANT>
__global__ void __launch_bounds__(WG_THREADS, 1) gemm_wgmma_kernel(const uint16_t *__restrict__ X,
                                                                  const uint16_t *__restrict__ W,
                                                                  const float *__restrict__ bias, float *__restrict__ Y,
                                                                  uint16_t *__restrict__ H,
                                                                  int M, int N, int K, int nseg, float *partial,
                                                                  int *counters)
{
    kern_dep_launch();
    kern_dep_wait();
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ int last;
    uint32_t base = (uint32_t)__cvta_generic_to_shared(smem_raw), pad = (1024 - (base & 1023)) & 1023;
    unsigned char *sm = smem_raw + pad;
    // variant 0: core matrices along K every 128 bytes, along rows every 1024; variant 1: 128-byte swizzle
    // (the leading offset unused within the atom, rows of 8 every 1024 bytes), k16 steps 32 bytes apart
    const uint32_t lbo = VARIANT == 0 ? CM_K_STEP : 16, sbo = CM_MN_STEP, kstep = VARIANT == 0 ? 2 * CM_K_STEP : 32;
    const uint64_t swz = VARIANT == 0 ? 0 : 1;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    constexpr int BN = WG_TILE_N(VARIANT), NV = BN / 2, STAGES = WG_STAGES(VARIANT); // accumulators per thread
    constexpr bool SEQ = VARIANT == 3; // this CTA runs every segment of its tile, one after another
    int m0 = blockIdx.x * WG_BM, n0 = blockIdx.y * BN, seg = SEQ ? 0 : blockIdx.z, L = K / nseg;
    int k_begin = seg * L, KT = (SEQ ? K : L) / WG_BK, seg_stages = L / WG_BK;
    float acc[NV], total[SEQ ? NV : 1]; // total: the segments so far, added in order to 0.0f
    base += pad;
#pragma unroll
    for (int i = 0; i < NV; i++) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < (SEQ ? NV : 1); i++) total[i] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < KT) {
            if (VARIANT == 0) load_stage(sm + s * WG_STAGE_BYTES(BN), X, W, M, N, K, m0, n0, k_begin + s * WG_BK);
            else load_stage_swizzled<BN>(sm + s * WG_STAGE_BYTES(BN), X, W, M, N, K, m0, n0, k_begin + s * WG_BK);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        int st = kt % STAGES;
        cp_async_wait<STAGES - 3>(); // committed: stages 0 .. kt + 1; stage kt has landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        {
            int next = kt + STAGES - 2;
            if (next < KT) {
                unsigned char *dst = sm + (next % STAGES) * WG_STAGE_BYTES(BN);
                if (VARIANT == 0) load_stage(dst, X, W, M, N, K, m0, n0, k_begin + next * WG_BK);
                else load_stage_swizzled<BN>(dst, X, W, M, N, K, m0, n0, k_begin + next * WG_BK);
            }
            cp_async_commit();
        }
        uint32_t a = base + st * WG_STAGE_BYTES(BN) + wg * (64 / 8) * CM_MN_STEP, b = base + st * WG_STAGE_BYTES(BN) + WG_A_BYTES;
        fence_operands<NV>(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < WG_BK / 16; kk++) // k16 chunks in increasing order: 2 core matrices along K each
            wgmma_tile<BN>(acc, smem_desc(a + kk * kstep, lbo, sbo, swz), smem_desc(b + kk * kstep, lbo, sbo, swz));
        wgmma_commit();
        if (SEQ && (kt + 1) % seg_stages == 0) { // a segment ends: its chain is whole, add it, start the next
            wgmma_wait<0>();
            fence_operands<NV>(acc);
#pragma unroll
            for (int i = 0; i < NV; i++) total[SEQ ? i : 0] += acc[i], acc[i] = 0.0f;
        } else wgmma_wait<1>();
        fence_operands<NV>(acc);
    }
    wgmma_wait<0>();
    fence_operands<NV>(acc);
    cp_async_wait<0>();

    // SEQ: the total is already the segments' sum from 0.0f (never -0.0f), so the one-segment epilogue's
    // (0.0f + total) + bias is total + bias, as the rule has it
    int g = lane >> 2, t = lane & 3, rbase = m0 + wg * 64 + (warp & 3) * 16 + g;
    if (H && (SEQ || nseg == 1)) { // h of one segment: through the idle stage memory, whole rows out
        static_assert(SEG_HS_BYTES(WG_BM, BN) <= WG_STAGES(VARIANT) * WG_STAGE_BYTES(BN), "h tile in the stages");
        uint16_t *hs = (uint16_t *)sm;
        __syncthreads(); // both warpgroups' last wgmma have read their stages
        if constexpr (SEQ) seg_geglu_stage<BN>(hs, bias, N, n0, rbase - m0, t, total);
        else seg_geglu_stage<BN>(hs, bias, N, n0, rbase - m0, t, acc);
        __syncthreads();
        seg_geglu_flush<WG_BM, BN>(H, hs, M, N, m0, n0, threadIdx.x, WG_THREADS);
        return;
    }
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int i = 4 * j + 2 * h;
            if (SEQ) seg_store2(Y, H, NULL, bias, M, N, 1, 0, rbase + 8 * h, n0 + 8 * j + 2 * t, total[SEQ ? i : 0],
                                total[SEQ ? i + 1 : 0]);
            else seg_store2(Y, H, partial, bias, M, N, nseg, seg, rbase + 8 * h, n0 + 8 * j + 2 * t, acc[i],
                            acc[i + 1]);
        }
    if (!SEQ && nseg > 1)
        seg_finish(Y, H, partial, bias, M, N, nseg, m0, n0, WG_BM, BN, &counters[blockIdx.x * gridDim.y + blockIdx.y],
                   &last);
}

template <int VARIANT>
static void wgmma_launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                         int K, int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_wgmma_kernel<VARIANT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        WG_SMEM(VARIANT)));
        configured = true;
    }
    bool seq = VARIANT == 3, scratch = nseg > 1 && !seq;
    dim3 grid((M + WG_BM - 1) / WG_BM, (N + WG_TILE_N(VARIANT) - 1) / WG_TILE_N(VARIANT), seq ? 1 : nseg);
    kern_launch(gemm_wgmma_kernel<VARIANT>, grid, dim3(WG_THREADS), WG_SMEM(VARIANT), s, x, w, bias, y, h, M, N, K,
                nseg, scratch ? ws->partial : NULL, scratch ? ws->counters : NULL);
    KERN_LAUNCHED();
}

// The product with descriptor variant 0 or 1 (head comment); for the test, which declares it itself.
extern "C" void kern_gemm_wgmma_variant(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                                        uint16_t *h, int M, int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    int nseg = kern_gemm_segments(N, K);
    if (K % 16 != 0 || variant < 0 || variant > 5 || (nseg > 1 && (!ws || !ws->partial || !ws->counters))) {
        fprintf(stderr, "g4: fatal: kern_gemm_wgmma: K = %d (multiple of 16), variant %d (0 .. 5), %d segments%s\n", K,
                variant, nseg, nseg > 1 && (!ws || !ws->partial) ? " without scratch" : "");
        abort();
    }
    seg_check_h("kern_gemm_wgmma", h, N);
    if (M == 0 || N == 0) return;
    if ((K / nseg) % WG_BK != 0) { // segments not in whole stages: the mma.sync kernel, same bits by the rule
        kern_gemm_bf16(x, w, bias, y, h, M, N, K, ws, s);
        return;
    }
    if ((N + 127) / 128 > 65535) {
        fprintf(stderr, "g4: fatal: kern_gemm_wgmma: N = %d over the grid limit\n", N);
        abort();
    }
    if (variant >= 4) kern_gemm_tma(variant, x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (variant == 0) wgmma_launch<0>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (variant == 1) wgmma_launch<1>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (variant == 2) wgmma_launch<2>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else wgmma_launch<3>(x, w, bias, y, h, M, N, K, nseg, ws, s);
}

extern "C" void kern_gemm_wgmma(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M,
                                int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    // Stages filled by tensor copies from a producer warp: 256-wide tiles for many outputs (variant 4; gate|up
    // 604-696 TFLOP/s on an H100 against 514-578 for variant 1's hand-swizzled stages), else 128-wide with the
    // segments in one CTA (variant 5; q|k|v, o, down 429-539 against 364-463 for variant 3; test_cuda_wgmma,
    // docs/perf.md, version 11). G4_CUDA_WGMMA=0..5 forces one variant, to compare them in one run; "mma" takes
    // the pair whose stages every thread fills by cp.async (1 and 3).
    static int forced = -2, mma = 0;
    if (forced == -2) {
        const char *v = getenv("G4_CUDA_WGMMA");
        forced = v && v[0] >= '0' && v[0] <= '5' && !v[1] ? v[0] - '0' : -1;
        mma = v && !strcmp(v, "mma");
    }
    int wide = N >= 16384;
    kern_gemm_wgmma_variant(forced >= 0 ? forced : mma ? (wide ? 1 : 3) : wide ? 4 : 5, x, w, bias, y, h, M, N, K, ws, s);
}
