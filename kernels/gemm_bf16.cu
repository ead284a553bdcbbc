// gemm_bf16 — the prompt kernel: y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias), for prompt chunks
// and the image embedder. 128x128 block tiles of 8 warps (64x32 each), K in steps of 32 through a 4-stage
// cp.async pipeline, fragments by ldmatrix, mma.sync m16n8k16 with fp32 accumulation.
//
// Exactness (kernels.h, "the reduction rule"): every output element runs the chunks of 16 of each K segment in
// increasing order through one accumulator that starts at zero, and adds the segments' sums in order to a
// total that starts at 0.0f, then the bias — the same chain as the decode kernel (gemm_skinny.cu) — so a row
// computed here is bit-identical to the same row computed there. Segments run in CTAs of their own (grid z),
// which also gives products with few outputs (N = hidden) enough CTAs to fill the machine. The grid runs M
// fastest, so the blocks that share a weight tile run together and read it once from memory.
#include "common.cuh"
#include "kernels.h"
#include "mma.cuh"
#include "segments.cuh"

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define LDS (BK + 8) // halves per shared row: 80 bytes, so ldmatrix rows fall in distinct bank groups

struct tiled_smem {
    uint16_t a[STAGES][BM][LDS];
    uint16_t b[STAGES][BN][LDS];
};

// One stage: (BM x BK) of x and (BN x BK) of w, 16-byte pieces, zeros past M, N and K.
__device__ __forceinline__ void load_stage(tiled_smem *sm, int st, const uint16_t *X, const uint16_t *W, int M, int N,
                                           int K, int m0, int n0, int k0)
{
    for (int i = threadIdx.x; i < (BM + BN) * (BK / 8); i += blockDim.x) {
        int row = i / (BK / 8), c = (i % (BK / 8)) * 8;
        bool is_a = row < BM;
        int r = is_a ? row : row - BM, lim = is_a ? M - m0 : N - n0;
        bool ok = r < lim && k0 + c < K;
        const uint16_t *src = is_a ? X + (size_t)(ok ? m0 + r : 0) * K : W + (size_t)(ok ? n0 + r : 0) * K;
        cp_async16(is_a ? &sm->a[st][r][c] : &sm->b[st][r][c], src + (ok ? k0 + c : 0), ok);
    }
}

// One CTA: a 128x128 tile of y over one K segment [k_begin, k_end). With one segment it writes y; with
// several it writes its segment's tile to scratch, and the CTA that completes the tile (an arrival counter per
// tile) adds the segments in order to 0.0f, then the bias — the decode kernel's epilogue, element for element.
__global__ void __launch_bounds__(256, 1)
    gemm_tiled_kernel(const uint16_t *__restrict__ X, const uint16_t *__restrict__ W, const float *__restrict__ bias,
                      float *__restrict__ Y, uint16_t *__restrict__ H, int M, int N, int K, int nseg, float *partial,
                      int *counters)
{
    kern_dep_launch();
    kern_dep_wait();
    extern __shared__ __align__(16) unsigned char smem_raw[];
    tiled_smem *sm = reinterpret_cast<tiled_smem *>(smem_raw);
    __shared__ int last;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wm = warp >> 2, wn = warp & 3;
    int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN, seg = blockIdx.z, L = K / nseg;
    int k_begin = seg * L, k_end = k_begin + L, KT = (L + BK - 1) / BK;
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int k = 0; k < 4; k++) acc[i][j][k] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_stage(sm, s, X, W, M, N, K, m0, n0, k_begin + s * BK);
        cp_async_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        int st = kt % STAGES, k0 = k_begin + kt * BK;
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            int next = kt + STAGES - 1;
            if (next < KT) load_stage(sm, next % STAGES, X, W, M, N, K, m0, n0, k_begin + next * BK);
            cp_async_commit();
        }
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            if (k0 + kk >= k_end) break; // chunks past the segment are not run (zeros would still be an instruction)
            uint32_t a[4][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
                ldmatrix_x4(a[mi], &sm->a[st][wm * 64 + mi * 16 + (lane & 15)][kk + (lane >> 4) * 8]);
#pragma unroll
            for (int nj = 0; nj < 2; nj++) {
                uint32_t r[4];
                ldmatrix_x4(r, &sm->b[st][wn * 32 + nj * 16 + (lane & 7) + ((lane >> 4) << 3)][kk + ((lane >> 3) & 1) * 8]);
                b[2 * nj][0] = r[0];
                b[2 * nj][1] = r[1];
                b[2 * nj + 1][0] = r[2];
                b[2 * nj + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) mma_bf16_16816(acc[mi][ni], a[mi], b[ni]);
        }
    }
    cp_async_wait<0>();

    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                seg_store2(Y, H, partial, bias, M, N, nseg, seg, m0 + wm * 64 + mi * 16 + g + 8 * h,
                           n0 + wn * 32 + ni * 8 + 2 * t, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
    if (nseg > 1)
        seg_finish(Y, H, partial, bias, M, N, nseg, m0, n0, BM, BN, &counters[blockIdx.x * gridDim.y + blockIdx.y],
                   &last);
}

extern "C" void kern_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M,
                               int N, int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    static bool configured = false;
    int nseg = kern_gemm_segments(N, K), smem = (int)sizeof(tiled_smem);
    if (K % 16 != 0 || (nseg > 1 && (!ws || !ws->partial || !ws->counters))) {
        fprintf(stderr, "g4: fatal: kern_gemm_bf16: K = %d (multiple of 16), %d segments%s\n", K, nseg,
                nseg > 1 && (!ws || !ws->partial) ? " without scratch" : "");
        abort();
    }
    seg_check_h("kern_gemm_bf16", h, N);
    if (M == 0 || N == 0) return;
    if ((N + BN - 1) / BN > 65535) {
        fprintf(stderr, "g4: fatal: kern_gemm_bf16: N = %d over the grid limit\n", N);
        abort();
    }
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        configured = true;
    }
    dim3 grid((M + BM - 1) / BM, (N + BN - 1) / BN, nseg);
    kern_launch(gemm_tiled_kernel, dim3(grid), dim3(256), smem, s, x, w, bias, y, h, M, N, K, nseg,
                nseg > 1 ? ws->partial : NULL, nseg > 1 ? ws->counters : NULL);
    KERN_LAUNCHED();
}

extern "C" void kern_gemm(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                          int K, const struct kern_gemm_ws *ws, kern_stream s)
{
    if (kern_gemm_on_decode_kernel(M)) kern_gemm_skinny(x, w, bias, y, h, M, N, K, ws, s);
    else kern_gemm_wgmma(x, w, bias, y, h, M, N, K, ws, s);
}
