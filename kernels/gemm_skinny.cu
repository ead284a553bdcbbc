// gemm_skinny — the matrix product for decode steps (few rows, M <= 64): y (M, N) fp32 = x (M, K) bf16 ·
// w (N, K)ᵀ bf16 (+ bias). Decode is bound by reading the weights once, so this kernel streams them through a
// 3-stage cp.async pipeline (16-byte copies into padded shared rows) and feeds tensor cores with ldmatrix.
//
// Exactness: each output element is the same chain as in gemm_bf16.cu — mma.sync m16n8k16 over K chunks of 16
// in increasing order, from a zero accumulator, bias added last — so a row's result is bit-identical whether it
// runs here (decode) or in the prompt kernel. Work is split over N only (8 columns per warp), never over K.
#include "common.cuh"
#include "kernels.h"

#define SK_WARPS 4          // warps per block; each owns 8 output columns
#define SK_BN (8 * SK_WARPS) // 32 columns per block
#define SK_BK 128           // K per stage
#define SK_STAGES 3
#define SK_LD (SK_BK + 8)   // padded shared row: 272 bytes, conflict-free ldmatrix

template <int MT> // MT m16 tiles: rows 16 * MT
struct skinny_smem {
    uint16_t a[SK_STAGES][16 * MT][SK_LD];
    uint16_t b[SK_STAGES][SK_BN][SK_LD];
};

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

__device__ __forceinline__ void mma_bf16_sk(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int MT>
__device__ __forceinline__ void load_stage(skinny_smem<MT> *sm, int stage, const uint16_t *X, const uint16_t *W, int M,
                                           int N, int K, int n0, int k0)
{
    // A: (16*MT) rows x SK_BK; B: SK_BN rows x SK_BK; 16-byte pieces spread over the block's threads
    const int pieces_row = SK_BK / 8;
    for (int i = threadIdx.x; i < 16 * MT * pieces_row; i += blockDim.x) {
        int r = i / pieces_row, c = (i % pieces_row) * 8;
        bool ok = r < M && k0 + c < K;
        cp_async16(&sm->a[stage][r][c], X + (size_t)(ok ? r : 0) * K + (ok ? k0 + c : 0), ok);
    }
    for (int i = threadIdx.x; i < SK_BN * pieces_row; i += blockDim.x) {
        int r = i / pieces_row, c = (i % pieces_row) * 8;
        bool ok = n0 + r < N && k0 + c < K;
        cp_async16(&sm->b[stage][r][c], W + (size_t)(ok ? n0 + r : 0) * K + (ok ? k0 + c : 0), ok);
    }
}

template <int MT>
__global__ void __launch_bounds__(32 * SK_WARPS) gemm_skinny_kernel(const uint16_t *__restrict__ X,
                                                                   const uint16_t *__restrict__ W,
                                                                   const float *__restrict__ bias, float *__restrict__ Y,
                                                                   int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    skinny_smem<MT> *sm = reinterpret_cast<skinny_smem<MT> *>(smem_raw);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n0 = blockIdx.x * SK_BN;
    int stages_total = (K + SK_BK - 1) / SK_BK;
    float acc[MT][4];
#pragma unroll
    for (int i = 0; i < MT; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

#pragma unroll
    for (int s = 0; s < SK_STAGES - 1; s++) {
        if (s < stages_total) load_stage<MT>(sm, s, X, W, M, N, K, n0, s * SK_BK);
        asm volatile("cp.async.commit_group;\n");
    }
    for (int kt = 0; kt < stages_total; kt++) {
        int st = kt % SK_STAGES;
        asm volatile("cp.async.wait_group %0;\n" ::"n"(SK_STAGES - 2));
        __syncthreads();
        {
            int next = kt + SK_STAGES - 1;
            if (next < stages_total) load_stage<MT>(sm, next % SK_STAGES, X, W, M, N, K, n0, next * SK_BK);
            asm volatile("cp.async.commit_group;\n");
        }
#pragma unroll
        for (int kk = 0; kk < SK_BK; kk += 32) {
            uint32_t b[4];
            // B: this warp's 8 columns, k kk..kk+31: matrices (k+0..7, 8..15, 16..23, 24..31)
            ldmatrix_x4(b, &sm->b[st][warp * 8 + (lane & 7)][kk + (lane >> 3) * 8]);
#pragma unroll
            for (int mi = 0; mi < MT; mi++) {
                uint32_t r0[4], r1[4];
                ldmatrix_x4(r0, &sm->a[st][mi * 16 + (lane & 15)][kk + (lane >> 4) * 8]);
                ldmatrix_x4(r1, &sm->a[st][mi * 16 + (lane & 15)][kk + 16 + (lane >> 4) * 8]);
                uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
                mma_bf16_sk(acc[mi], r0, b0);
                mma_bf16_sk(acc[mi], r1, b1);
            }
        }
    }
    asm volatile("cp.async.wait_group 0;\n");
    {
        int g = lane >> 2, t = lane & 3;
#pragma unroll
        for (int mi = 0; mi < MT; mi++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = mi * 16 + g + 8 * h, c = n0 + warp * 8 + 2 * t;
                if (r >= M) continue;
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if (c + e < N) Y[(size_t)r * N + c + e] = acc[mi][2 * h + e] + (bias ? bias[c + e] : 0.0f);
            }
    }
}

template <int MT>
static void launch(const uint16_t *x, const uint16_t *w, const float *bias, float *y, int M, int N, int K,
                   kern_stream s)
{
    size_t smem = sizeof(skinny_smem<MT>);
    static bool configured = false;
    if (!configured) {
        KERN_CHECK(cudaFuncSetAttribute(gemm_skinny_kernel<MT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        configured = true;
    }
    gemm_skinny_kernel<MT><<<(N + SK_BN - 1) / SK_BN, 32 * SK_WARPS, smem, s>>>(x, w, bias, y, M, N, K);
    KERN_LAUNCHED();
}

extern "C" void kern_gemm_skinny(const uint16_t *x, const uint16_t *w, const float *bias, float *y, int M, int N,
                                 int K, kern_stream s)
{
    if (K % 16 != 0 || M > 64) {
        fprintf(stderr, "g4: fatal: kern_gemm_skinny: M = %d (<= 64), K = %d (multiple of 16)\n", M, K);
        abort();
    }
    if (M == 0 || N == 0) return;
    if (M <= 16) launch<1>(x, w, bias, y, M, N, K, s);
    else if (M <= 32) launch<2>(x, w, bias, y, M, N, K, s);
    else launch<4>(x, w, bias, y, M, N, K, s);
}
