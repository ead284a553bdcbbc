// wgmma.cuh — the Hopper warpgroup matrix instructions the prompt kernels share (gemm_wgmma.cu, which fills
// shared memory by cp.async from every thread, and gemm_tma.cu, which fills it by tensor copies from one
// producer warp): shared-memory matrix descriptors, wgmma.m64n256k16 / m64n128k16 (bf16 in, fp32
// accumulate, both operands K-major from shared memory), and the fences around the asynchronous steps.
//
// Why one file: a wgmma k16 step rounds exactly as the mma.sync m16n8k16 step does (test_cuda_wgmma), and
// every prompt kernel must issue the same step over the same chunks for an element to keep the reduction
// rule (kernels.h); one copy of the instruction keeps that a fact of the source.
#pragma once

#include <stdint.h>

#include "kernels.h"

// Shared layout of a (rows x 64) bf16 tile, in 8x8 core matrices (8 rows x 16 bytes, 128 contiguous
// bytes): row r, 16-byte column kc at ((r / 8) * 8 + kc) * 128 + (r % 8) * 16.
#define CM_K_STEP 128   // bytes between core matrices adjacent along K
#define CM_MN_STEP 1024 // bytes between core matrices adjacent along M or N (the next 8 rows)

// A shared-memory matrix descriptor: start address >> 4 (bits 0-13), leading byte offset >> 4 (16-29),
// stride byte offset >> 4 (32-45), base offset 0, swizzle mode 0 (bits 62-63).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint64_t swizzle)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (swizzle << 62);
}

#define WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_F16(i) WG_F4(i), WG_F4(i + 4), WG_F4(i + 8), WG_F4(i + 12)

// d (64x256 fp32 over the warpgroup; this thread's 128 values) += a (64x16, K-major) · b (256x16, K-major)ᵀ.
// Fragment: warp q of the warpgroup holds rows 16q + lane/4 (+ 8), d[4j + 2h + e] is row +8h, column
// 8j + 2 (lane % 4) + e — mma.sync's C fragment for each n8 block j.
__device__ __forceinline__ void wgmma_m64n256k16(float d[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
                 "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
                 "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
                 "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
                 "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
                 "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48), WG_F16(64), WG_F16(80), WG_F16(96), WG_F16(112)
                 : "l"(da), "l"(db), "r"(1));
}

// The same for a 64x128 tile (this thread's 64 values).
__device__ __forceinline__ void wgmma_m64n128k16(float d[64], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                 : "l"(da), "l"(db), "r"(1));
}

// Attention's two steps (attention_wg.cu). Scores: d (64x32 fp32, this thread's 16) += a (64x16 queries,
// K-major) · b (32x16 keys, K-major)ᵀ, both from shared memory.
__device__ __forceinline__ void wgmma_m64n32k16(float d[16], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15"
                 "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : WG_F16(0)
                 : "l"(da), "l"(db), "r"(1));
}

// Outputs: d (64x128 fp32, this thread's 64) += a (64x16 weights from registers: mma.sync's A fragment of the
// warp's 16 rows) · b (16 keys x 128 dimensions, N-major from shared memory: each 128-byte row one key's 64
// dimensions, the descriptor's leading offset the step to the next 64 dimensions, its stride the next 8 keys).
__device__ __forceinline__ void wgmma_m64n128k16_rt(float d[64], const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
                 "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
                 "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
                 "}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
                 : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

template <int BN> __device__ __forceinline__ void wgmma_tile(float *d, uint64_t da, uint64_t db)
{
    if (BN == 256) wgmma_m64n256k16(d, da, db);
    else wgmma_m64n128k16(d, da, db);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of the accumulators across the asynchronous steps.
template <int NV> __device__ __forceinline__ void fence_operands(float *d)
{
#pragma unroll
    for (int i = 0; i < NV; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// The tensor-copy prompt kernel (gemm_tma.cu), variants 4 (256-wide tiles, segments in CTAs of their own) and
// 5 (128-wide, a tile's segments in order in one CTA) of kern_gemm_wgmma_variant, which checks the arguments
// and sends segments not in whole 64-deep stages to kern_gemm_bf16 before calling it.
extern "C" void kern_gemm_tma(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                              uint16_t *h, int M, int N, int K, int nseg, const struct kern_gemm_ws *ws, kern_stream s);
