// gemm_bf16 — y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias), on tensor cores (mma.sync
// m16n8k16, fp32 accumulate). The one matrix product of the decoder, for decode rows and prompt chunks
// alike: every output element accumulates its K chunks of 16 in increasing order into one fp32 register,
// whatever M is and wherever the row sits, so a row's output is bit-identical in any batch (design.md,
// "Exactness contract"). Version 1: 64x64 block tiles, 4 warps of 32x32, a plain shared-memory loop.
#include "common.cuh"
#include "kernels.h"

#define BM 64
#define BN 64
#define BK 32
#define PAD 8 // halves of padding per shared row: 80-byte rows spread the fragment loads over banks

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Loads a (rows x BK) tile of a row-major (R, K) bf16 matrix starting at (r0, k0) into shared memory,
// zero-filling past R and K (zeros leave an mma's accumulator exactly unchanged).
__device__ __forceinline__ void load_tile(uint16_t (*dst)[BK + PAD], const uint16_t *src, int R, int K, int r0, int k0)
{
    for (int i = threadIdx.x; i < BM * BK / 8; i += blockDim.x) {
        int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r0 + r < R && k0 + c < K) v = *(const uint4 *)(src + (size_t)(r0 + r) * K + k0 + c);
        *(uint4 *)&dst[r][c] = v;
    }
}

__global__ void __launch_bounds__(128) gemm_bf16_kernel(const uint16_t *__restrict__ X, const uint16_t *__restrict__ W,
                                                        const float *__restrict__ bias, float *__restrict__ Y, int M,
                                                        int N, int K)
{
    __shared__ __align__(16) uint16_t As[BM][BK + PAD];
    __shared__ __align__(16) uint16_t Bs[BN][BK + PAD];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int wm = warp >> 1, wn = warp & 1, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int k = 0; k < 4; k++) acc[i][j][k] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile(As, X, M, K, m0, k0);
        load_tile(Bs, W, N, K, n0, k0);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                int r = wm * 32 + mi * 16 + g;
                a[mi][0] = *(const uint32_t *)&As[r][kk + 2 * t];
                a[mi][1] = *(const uint32_t *)&As[r + 8][kk + 2 * t];
                a[mi][2] = *(const uint32_t *)&As[r][kk + 2 * t + 8];
                a[mi][3] = *(const uint32_t *)&As[r + 8][kk + 2 * t + 8];
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                int n = wn * 32 + ni * 8 + g;
                b[ni][0] = *(const uint32_t *)&Bs[n][kk + 2 * t];
                b[ni][1] = *(const uint32_t *)&Bs[n][kk + 2 * t + 8];
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) mma_bf16(acc[mi][ni], a[mi], b[ni]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = m0 + wm * 32 + mi * 16 + g + 8 * h, c = n0 + wn * 32 + ni * 8 + 2 * t;
                if (r >= M) continue;
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if (c + e < N) Y[(size_t)r * N + c + e] = acc[mi][ni][2 * h + e] + (bias ? bias[c + e] : 0.0f);
            }
}

extern "C" void kern_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, float *y, int M, int N, int K,
                               kern_stream s)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (K % 16 != 0) {
        fprintf(stderr, "g4: fatal: kern_gemm_bf16: K = %d is not a multiple of 16\n", K);
        abort();
    }
    if (M == 0 || N == 0) return;
    gemm_bf16_kernel<<<grid, 128, 0, s>>>(x, w, bias, y, M, N, K);
    KERN_LAUNCHED();
}
