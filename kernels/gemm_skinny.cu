// gemm_skinny — the decode kernel (M <= 64 rows): y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias).
// Decode is bound by reading the weights once per step, so the kernel's job is to keep enough bytes in
// flight: blocks of 4 or 8 warps own 8 output columns per warp of one K segment (kernels.h, "the reduction
// rule"), and stream that slice of the weights through a cp.async pipeline of 128-wide K steps into padded
// shared rows, feeding the tensor cores by ldmatrix. Rows past M are zeros written once, never loaded; up to
// 8 rows the slim shapes give the activations 8 shared rows a stage and the mma's rows 8..15 are zero registers.
//
// The cp.async block shapes are chosen by M (skinny_variant, variant 0): every shape runs each output column's
// chain the same way (chunks of 16 in increasing order within its segment), so the choice changes speed,
// never bits. One row streams best from 4-warp blocks of 4 stages; from 2 rows up 8-warp blocks (64 columns)
// halve the re-reads of the activations. Since version 11 the engine's default is the tensor-copy kernel
// (gemm_skinny_tma.cu, variant 6), faster at nearly every shape and row count (kern_gemm_skinny below); these
// shapes stay as variants 0..5, for comparison on each new GPU.
//
// Products cut into segments (small N) write each segment's tile to a scratch array; the block that
// completes a tile (an arrival counter per tile) adds the segments in segment order to 0.0f, adds the bias
// and writes y (segments.cuh, shared with the prompt kernels). Each element is therefore the same chain as
// in the prompt kernel (gemm_bf16.cu): chunks of 16 in increasing order from a zero accumulator per segment,
// segments summed in order — bit-identical.
#include <string.h>

#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"

#define SK_BK 128         // K per stage
#define SK_LD (SK_BK + 8) // padded shared row: 272 bytes, conflict-free ldmatrix

// MT m16 tiles of rows (MT 0: one tile of which only rows 0..7 exist), W warps of 8 columns, S stages.
template <int MT> struct skinny_rows {
    static const int n = MT == 0 ? 8 : 16 * MT, tiles = MT == 0 ? 1 : MT;
};

template <int MT, int W, int S> struct skinny_smem {
    uint16_t a[S][skinny_rows<MT>::n][SK_LD];
    uint16_t b[S][8 * W][SK_LD];
    int last;
};

// Stage `stage` of rows [first, last) of the stacked (x rows, then w rows) operand: 0, M + 8 NW for both.
template <int MT, int NW, int S>
__device__ __forceinline__ void load_rows(skinny_smem<MT, NW, S> *sm, int stage, const uint16_t *X, const uint16_t *W,
                                          int M, int N, int K, int n0, int k0, int kend, int first, int last)
{
    const int pieces = SK_BK / 8;
    for (int i = first * pieces + threadIdx.x; i < last * pieces; i += blockDim.x) {
        int row = i / pieces, c = (i % pieces) * 8;
        bool is_a = row < M, ok;
        int r = is_a ? row : row - M;
        const uint16_t *src;
        if (is_a) {
            ok = k0 + c < kend;
            src = X + (size_t)r * K + (ok ? k0 + c : 0);
            cp_async16(&sm->a[stage][r][c], src, ok);
        } else {
            ok = n0 + r < N && k0 + c < kend;
            src = W + (size_t)(ok ? n0 + r : 0) * K + (ok ? k0 + c : 0);
            cp_async16(&sm->b[stage][r][c], src, ok);
        }
    }
}

// This warp's A fragment of m16 tile mi at k (row-major x in shared memory). MT 0: rows 8..15 do not exist
// and their registers are zero, which leaves rows 0..7 of the product as they are (rows are independent).
template <int MT, int NW, int S>
__device__ __forceinline__ void load_a(uint32_t r[4], const skinny_smem<MT, NW, S> *sm, int st, int mi, int k, int lane)
{
    if (MT == 0) {
        uint32_t q[4];
        ldmatrix_x4(q, &sm->a[st][lane & 7][k + ((lane >> 3) & 1) * 8]); // matrices 0, 1 = k 0..7, 8..15
        r[0] = q[0], r[1] = 0, r[2] = q[1], r[3] = 0;
    } else {
        ldmatrix_x4(r, &sm->a[st][mi * 16 + (lane & 15)][k + (lane >> 4) * 8]);
    }
}

template <int MT, int NW, int S>
__global__ void __launch_bounds__(32 * NW) gemm_skinny_kernel(const uint16_t *__restrict__ X,
                                                              const uint16_t *__restrict__ W,
                                                              const float *__restrict__ bias, float *__restrict__ Y,
                                                              uint16_t *__restrict__ H, int M, int N, int K, int nseg,
                                                              float *partial, int *counters)
{
    typedef skinny_smem<MT, NW, S> smem_t;
    const int BN = 8 * NW, ROWS = skinny_rows<MT>::n, TILES = skinny_rows<MT>::tiles;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    smem_t *sm = reinterpret_cast<smem_t *>(smem_raw);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n0 = blockIdx.x * BN, seg = blockIdx.y;
    int L = K / nseg, kbeg = seg * L, kend = kbeg + L, tiles = (L + SK_BK - 1) / SK_BK;
    float acc[TILES][4];
    kern_dep_launch();
#pragma unroll
    for (int i = 0; i < TILES; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    // rows M .. ROWS-1 of every stage: zeros, written once (the first barrier below orders them)
    for (int i = threadIdx.x; i < S * (ROWS - M) * (SK_LD / 8); i += blockDim.x) {
        int st = i / ((ROWS - M) * (SK_LD / 8)), rest = i % ((ROWS - M) * (SK_LD / 8));
        *(uint4 *)&sm->a[st][M + rest / (SK_LD / 8)][(rest % (SK_LD / 8)) * 8] = make_uint4(0, 0, 0, 0);
    }

    // the first stages' weights stream in before the previous kernel is done (no kernel writes them; see
    // kern_dep_wait), their activations after it: groups w0, w1, .., x0.., so the first step waits for all
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < tiles) load_rows(sm, s, X, W, M, N, K, n0, kbeg + s * SK_BK, kend, M, M + BN);
        cp_async_commit();
    }
    kern_dep_wait();
#pragma unroll
    for (int s = 0; s < S - 1; s++)
        if (s < tiles) load_rows(sm, s, X, W, M, N, K, n0, kbeg + s * SK_BK, kend, 0, M);
    cp_async_commit();
    for (int kt = 0; kt < tiles; kt++) {
        int st = kt % S, k0 = kbeg + kt * SK_BK;
        if (kt == 0) cp_async_wait<0>();
        else cp_async_wait<S - 2>();
        __syncthreads();
        {
            int next = kt + S - 1;
            if (next < tiles) load_rows(sm, next % S, X, W, M, N, K, n0, kbeg + next * SK_BK, kend, 0, M + BN);
            cp_async_commit();
        }
#pragma unroll
        for (int kk = 0; kk < SK_BK; kk += 32) {
            if (k0 + kk >= kend) break;
            uint32_t b[4];
            bool second = k0 + kk + 16 < kend; // the segment's last 16 may end mid-step
            // B: this warp's 8 columns, k kk..kk+31: matrices (k+0..7, 8..15, 16..23, 24..31)
            ldmatrix_x4(b, &sm->b[st][warp * 8 + (lane & 7)][kk + (lane >> 3) * 8]);
#pragma unroll
            for (int mi = 0; mi < TILES; mi++) {
                uint32_t r0[4], r1[4];
                uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
                load_a(r0, sm, st, mi, kk, lane);
                mma_bf16_16816(acc[mi], r0, b0);
                if (second) {
                    load_a(r1, sm, st, mi, kk + 16, lane);
                    mma_bf16_16816(acc[mi], r1, b1);
                }
            }
        }
    }
    cp_async_wait<0>();

    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < TILES; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            seg_store2(Y, H, partial, bias, M, N, nseg, seg, mi * 16 + g + 8 * h, n0 + warp * 8 + 2 * t, acc[mi][2 * h],
                       acc[mi][2 * h + 1]);
    if (nseg > 1) seg_finish(Y, H, partial, bias, M, N, nseg, 0, n0, M, BN, &counters[blockIdx.x], &sm->last);
}

// gemm_skinny_tma.cu: variants 6 to 9, the weights streamed by tensor copies from a producer warp into 4 or 8
// consumer warps of 8, 16 or 32 columns (kern_gemm_skinny_tma_cols: a block's columns), the same chains.
// A tail (kernels.h; NULL: none) is checked by kern_gemm_tail before it comes here.
extern "C" int kern_gemm_skinny_tma_cols(int variant);
extern "C" void kern_gemm_skinny_tma(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                                     uint16_t *h, int M, int N, int K, int nseg, const struct kern_gemm_ws *ws,
                                     const struct kern_tail *tail, kern_stream s);

// One shape's shared memory allowed (once), and how many of its blocks the GPU holds at a time.
template <int MT, int NW, int S> static int configure()
{
    static int resident = 0;
    if (!resident) {
        int dev = 0, sms = 0, per_sm = 0;
        size_t smem = sizeof(skinny_smem<MT, NW, S>);
        KERN_CHECK(cudaFuncSetAttribute(gemm_skinny_kernel<MT, NW, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        KERN_CHECK(cudaGetDevice(&dev));
        KERN_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        KERN_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_skinny_kernel<MT, NW, S>, 32 * NW, smem));
        resident = sms * per_sm > 0 ? sms * per_sm : 1;
    }
    return resident;
}

template <int MT, int NW, int S>
static void launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N, int K,
                   int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    size_t smem = sizeof(skinny_smem<MT, NW, S>);
    configure<MT, NW, S>();
    dim3 grid((N + 8 * NW - 1) / (8 * NW), nseg);
    kern_launch(gemm_skinny_kernel<MT, NW, S>, grid, dim3(32 * NW), smem, s, x, w, bias, y, h, M, N, K, nseg,
                nseg > 1 ? ws->partial : NULL, nseg > 1 ? ws->counters : NULL);
    KERN_LAUNCHED();
}

// One block shape (warps, stages) at the row tiles M needs.
template <int NW, int S, bool SLIM>
static void launch_rows(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                        int K, int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    if (SLIM && M <= 8) launch<0, NW, S>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (M <= 16) launch<1, NW, S>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (M <= 32) launch<2, NW, S>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else launch<4, NW, S>(x, w, bias, y, h, M, N, K, nseg, ws, s);
}

// Whether the grid of that shape for M rows, N outputs and nseg segments runs in one wave.
template <int NW, int S, bool SLIM> static bool one_wave(int M, int N, int nseg)
{
    int blocks = (N + 8 * NW - 1) / (8 * NW) * nseg;
    int resident = SLIM && M <= 8 ? configure<0, NW, S>()
                   : M <= 16      ? configure<1, NW, S>()
                   : M <= 32      ? configure<2, NW, S>()
                                  : configure<4, NW, S>();
    return blocks <= resident;
}

// The block shape for M rows (variant 0) or a forced one (1..KERN_SKINNY_VARIANTS-1), as measured on the H200
// (bench_cuda_products, docs/perf.md, version 8): one row streams best from 4-warp blocks of 4 stages with 16
// activation rows (gate|up 64.1 µs against 66.4 at 4 x 5 and 71.2 with 8 rows; the 12B step 8.38 ms against
// 8.68); 8 warps and 4 stages from 2 rows up to 32 (gate|up at 16 rows 75 µs against 93 in 4-warp blocks);
// 8 warps and 3 stages beyond, where two blocks fit an SM (gate|up at 64 rows 130 µs against 198). Where the
// preferred shape's grid needs a second wave and a lighter shape's does not, the lighter one (the 12B full
// layers' q|k|v in 2 segments: 544 blocks, 528 resident at 4 x 4 with 16 rows, 660 slim; 21.3 µs against 31.3).
static void skinny_variant(int v, const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h,
                           int M, int N, int K, const struct kern_gemm_ws *ws, kern_stream s,
                           const struct kern_tail *tail = NULL)
{
    int nseg = kern_gemm_segments(N, K);
    if (K % 16 != 0 || M > 64 || (nseg > 1 && (!ws || !ws->partial || !ws->counters)) || v < 0 ||
        v >= KERN_SKINNY_VARIANTS) {
        fprintf(stderr, "g4: fatal: kern_gemm_skinny: M = %d (<= 64), K = %d (multiple of 16), %d segments %s, variant %d\n",
                M, K, nseg, nseg > 1 && (!ws || !ws->partial) ? "without scratch" : "", v);
        abort();
    }
    seg_check_h("kern_gemm_skinny", h, N);
    if (M == 0 || N == 0) return;
    if (v == 0) { // the faster shape, unless only the other runs in one wave (a second wave of a few blocks)
        v = M == 1 ? 5 : M <= 32 ? 2 : 4;
        if (v == 5 && !one_wave<4, 4, false>(M, N, nseg) && one_wave<4, 4, true>(M, N, nseg)) v = 1;
        if (v == 2 && !one_wave<8, 4, true>(M, N, nseg) && one_wave<8, 3, true>(M, N, nseg)) v = 4;
    }
    switch (v) {
    case 6:
    case 7:
    case 8:
    case 9: kern_gemm_skinny_tma(v, x, w, bias, y, h, M, N, K, nseg, ws, tail, s); break;
    case 1: launch_rows<4, 4, true>(x, w, bias, y, h, M, N, K, nseg, ws, s); break;
    case 2: launch_rows<8, 4, true>(x, w, bias, y, h, M, N, K, nseg, ws, s); break;
    case 3: launch_rows<4, 5, true>(x, w, bias, y, h, M, N, K, nseg, ws, s); break;
    case 4: launch_rows<8, 3, true>(x, w, bias, y, h, M, N, K, nseg, ws, s); break;
    default: launch_rows<4, 4, false>(x, w, bias, y, h, M, N, K, nseg, ws, s); break;
    }
}

// The decode product streams its weights by tensor copies into 4 consumer warps (variant 6,
// gemm_skinny_tma.cu) at every row count: on an H100 (bench_cuda_products, docs/perf.md, version 11) it beat
// the cp.async shapes' choice at 2 to 64 rows on every 12B product (gate|up at 16 rows 81.1 µs against 93.9, at
// 64 rows 91.4 against 139.9; the head at 16 rows 676 against 727) and at one row on most (gate|up 80.5
// against 86.7, q|k|v sliding 24.9 against 28.3; q|k|v full 30.1 against 27.9 and o sliding 14.1 against 13.5
// the exceptions), and 8 consumer warps (variant 7) lost to it nearly everywhere. G4_CUDA_SKINNY_VARIANT=1..9
// forces a shape everywhere, "mma" takes the cp.async shapes by rows (skinny_variant's choice), and
// G4_CUDA_SKINNY_WIDE=1..9 the shape from 33 rows (where a block holds 64 activation rows; variants 8 and 9
// lost there, version 13.3, and so did variant 6 with separate weight and activation rings, the weights 8
// stages ahead: every 64-row product slower, version 13.5, removed): tuning knobs, as every shape gives the
// same bits (test_cuda_kernels).
static int skinny_default(int M)
{
    static int v = -1, wide = -1;
    if (v < 0) {
        const char *e = getenv("G4_CUDA_SKINNY_VARIANT"), *w = getenv("G4_CUDA_SKINNY_WIDE");
        v = e && !strcmp(e, "mma") ? 0 : e && atoi(e) > 0 && atoi(e) < KERN_SKINNY_VARIANTS ? atoi(e) : 6;
        wide = w && atoi(w) > 0 && atoi(w) < KERN_SKINNY_VARIANTS ? atoi(w) : v;
    }
    return M > 32 ? wide : v;
}

extern "C" void kern_gemm_skinny(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M,
                                 int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    skinny_variant(skinny_default(M), x, w, bias, y, h, M, N, K, ws, s);
}

// The row limits of the tails (kernels.h): the preparation, one warp per (row, head) in the CTA that completes
// the head, up to a few rows; the residual, one CTA for all rows after every tile, none by default (one row
// cost more in the tail than in its own kernel: version 13).
extern "C" int kern_tail_rows(int kind)
{
    static int rows[2] = {-1, -1};
    if (rows[0] < 0) {
        const char *r = getenv("G4_CUDA_TAIL_ROWS_RESIDUAL"), *q = getenv("G4_CUDA_TAIL_ROWS_QKV");
        rows[0] = r ? atoi(r) : 0;
        rows[1] = q ? atoi(q) : 4;
    }
    return kind == KERN_TAIL_RESIDUAL ? rows[0] : kind == KERN_TAIL_QKV_PREP ? rows[1] : 0;
}

// Whether the tensor-copy kernel of block width bn can run this tail for M rows of N columns.
static bool tail_fits(const struct kern_tail *t, int M, int N, int bn)
{
    if (!t || !t->counters || M < 1 || M > kern_tail_rows(t->kind)) return false;
    if (t->kind == KERN_TAIL_RESIDUAL) return N % 4 == 0 && N / 4 <= 512 * 4 && t->x && t->w;
    if (t->kind != KERN_TAIL_QKV_PREP || t->D <= 0 || t->D % bn || t->D > 512 || N % t->D) return false;
    int kv_cols = t->v_off == t->k_off ? 1 : 2;
    return N / t->D <= KERN_TAIL_COUNTERS && N == (t->n_heads + kv_cols * t->n_kv) * t->D &&
           t->k_off == t->n_heads * t->D && (kv_cols == 1 || t->v_off == t->k_off + t->n_kv * t->D);
}

extern "C" int kern_gemm_tail(const uint16_t *x, const uint16_t *w, float *y, int M, int N, int K,
                              const struct kern_gemm_ws *ws, const struct kern_tail *tail, kern_stream s)
{
    int v = kern_gemm_on_decode_kernel(M) ? skinny_default(M) : 0;
    if (!kern_gemm_skinny_tma_cols(v) || !tail_fits(tail, M, N, kern_gemm_skinny_tma_cols(v))) {
        kern_gemm(x, w, NULL, y, NULL, M, N, K, ws, s);
        return 0;
    }
    skinny_variant(v, x, w, NULL, y, NULL, M, N, K, ws, s, tail);
    return 1;
}

extern "C" void kern_gemm_skinny_variant(int v, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                                         uint16_t *h, int M, int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    skinny_variant(v, x, w, bias, y, h, M, N, K, ws, s);
}
