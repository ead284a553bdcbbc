// gemm_skinny — the decode kernel (M <= 64 rows): y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias).
// Decode is bound by reading the weights once per step, so the kernel's job is to keep enough bytes in
// flight: blocks of 4 warps own 32 output columns of one K segment (kernels.h, "the reduction rule"), and
// stream that slice of the weights through a 4-stage cp.async pipeline of 128-wide K steps into padded
// shared rows, feeding the tensor cores by ldmatrix. Rows past M are zeros written once, never loaded.
//
// Products cut into segments (small N) write each segment's tile to a scratch array; the block that
// completes a tile (an arrival counter per tile) adds the segments in segment order to 0.0f, adds the bias
// and writes y (segments.cuh, shared with the prompt kernels). Each element is therefore the same chain as in the prompt kernel (gemm_bf16.cu): chunks of
// 16 in increasing order from a zero accumulator per segment, segments summed in order — bit-identical.
#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"

#define SK_WARPS 4           // warps per block; each owns 8 output columns
#define SK_BN (8 * SK_WARPS) // 32 columns per block
#define SK_BK 128            // K per stage
#define SK_STAGES 4
#define SK_LD (SK_BK + 8)    // padded shared row: 272 bytes, conflict-free ldmatrix

template <int MT> // MT m16 tiles: rows 16 * MT
struct skinny_smem {
    uint16_t a[SK_STAGES][16 * MT][SK_LD];
    uint16_t b[SK_STAGES][SK_BN][SK_LD];
    int last;
};

// Stage `stage` of rows [first, last) of the stacked (x rows, then w rows) operand: 0, M + SK_BN for both.
template <int MT>
__device__ __forceinline__ void load_rows(skinny_smem<MT> *sm, int stage, const uint16_t *X, const uint16_t *W, int M,
                                          int N, int K, int n0, int k0, int kend, int first, int last)
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

template <int MT>
__device__ __forceinline__ void load_stage(skinny_smem<MT> *sm, int stage, const uint16_t *X, const uint16_t *W, int M,
                                           int N, int K, int n0, int k0, int kend)
{
    load_rows<MT>(sm, stage, X, W, M, N, K, n0, k0, kend, 0, M + SK_BN);
}

template <int MT>
__global__ void __launch_bounds__(32 * SK_WARPS) gemm_skinny_kernel(const uint16_t *__restrict__ X,
                                                                   const uint16_t *__restrict__ W,
                                                                   const float *__restrict__ bias, float *__restrict__ Y,
                                                                   uint16_t *__restrict__ H,
                                                                   int M, int N, int K, int nseg, float *partial,
                                                                   int *counters)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    skinny_smem<MT> *sm = reinterpret_cast<skinny_smem<MT> *>(smem_raw);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n0 = blockIdx.x * SK_BN, seg = blockIdx.y;
    int L = K / nseg, kbeg = seg * L, kend = kbeg + L, tiles = (L + SK_BK - 1) / SK_BK;
    float acc[MT][4];
    kern_dep_launch();
#pragma unroll
    for (int i = 0; i < MT; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
    // rows M .. 16*MT-1 of every stage: zeros, written once (the first barrier below orders them)
    for (int i = threadIdx.x; i < SK_STAGES * (16 * MT - M) * (SK_LD / 8); i += blockDim.x) {
        int st = i / ((16 * MT - M) * (SK_LD / 8)), rest = i % ((16 * MT - M) * (SK_LD / 8));
        *(uint4 *)&sm->a[st][M + rest / (SK_LD / 8)][(rest % (SK_LD / 8)) * 8] = make_uint4(0, 0, 0, 0);
    }

    // the first stages' weights stream in before the previous kernel is done (no kernel writes them; see
    // kern_dep_wait), their activations after it: groups w0, w1, w2, x012, so the first step waits for all
#pragma unroll
    for (int s = 0; s < SK_STAGES - 1; s++) {
        if (s < tiles) load_rows<MT>(sm, s, X, W, M, N, K, n0, kbeg + s * SK_BK, kend, M, M + SK_BN);
        cp_async_commit();
    }
    kern_dep_wait();
#pragma unroll
    for (int s = 0; s < SK_STAGES - 1; s++)
        if (s < tiles) load_rows<MT>(sm, s, X, W, M, N, K, n0, kbeg + s * SK_BK, kend, 0, M);
    cp_async_commit();
    for (int kt = 0; kt < tiles; kt++) {
        int st = kt % SK_STAGES, k0 = kbeg + kt * SK_BK;
        if (kt == 0) cp_async_wait<0>();
        else cp_async_wait<SK_STAGES - 2>();
        __syncthreads();
        {
            int next = kt + SK_STAGES - 1;
            if (next < tiles) load_stage<MT>(sm, next % SK_STAGES, X, W, M, N, K, n0, kbeg + next * SK_BK, kend);
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
            for (int mi = 0; mi < MT; mi++) {
                uint32_t r0[4], r1[4];
                uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
                ldmatrix_x4(r0, &sm->a[st][mi * 16 + (lane & 15)][kk + (lane >> 4) * 8]);
                mma_bf16_16816(acc[mi], r0, b0);
                if (second) {
                    ldmatrix_x4(r1, &sm->a[st][mi * 16 + (lane & 15)][kk + 16 + (lane >> 4) * 8]);
                    mma_bf16_16816(acc[mi], r1, b1);
                }
            }
        }
    }
    cp_async_wait<0>();

    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            seg_store2(Y, H, partial, bias, M, N, nseg, seg, mi * 16 + g + 8 * h, n0 + warp * 8 + 2 * t, acc[mi][2 * h],
                       acc[mi][2 * h + 1]);
    if (nseg > 1) seg_finish(Y, H, partial, bias, M, N, nseg, 0, n0, M, SK_BN, &counters[blockIdx.x], &sm->last);
}

template <int MT>
static void launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N, int K,
                   int nseg, const struct kern_gemm_ws *ws, kern_stream s)
{
    size_t smem = sizeof(skinny_smem<MT>);
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_skinny_kernel<MT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    dim3 grid((N + SK_BN - 1) / SK_BN, nseg);
    kern_launch(gemm_skinny_kernel<MT>, dim3(grid), dim3(32 * SK_WARPS), smem, s, x, w, bias, y, h, M, N, K, nseg,
                nseg > 1 ? ws->partial : NULL, nseg > 1 ? ws->counters : NULL);
    KERN_LAUNCHED();
}

extern "C" void kern_gemm_skinny(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M,
                                 int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    int nseg = kern_gemm_segments(N, K);
    if (K % 16 != 0 || M > 64 || (nseg > 1 && (!ws || !ws->partial || !ws->counters))) {
        fprintf(stderr, "g4: fatal: kern_gemm_skinny: M = %d (<= 64), K = %d (multiple of 16), %d segments %s\n", M, K,
                nseg, nseg > 1 && (!ws || !ws->partial) ? "without scratch" : "");
        abort();
    }
    seg_check_h("kern_gemm_skinny", h, N);
    if (M == 0 || N == 0) return;
    if (M <= 16) launch<1>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else if (M <= 32) launch<2>(x, w, bias, y, h, M, N, K, nseg, ws, s);
    else launch<4>(x, w, bias, y, h, M, N, K, nseg, ws, s);
}
