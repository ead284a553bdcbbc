// mma.cuh — the tensor-core and async-copy primitives g4's matrix kernels share (gemm_bf16.cu,
// gemm_skinny.cu, attention.cu): one mma instruction (m16n8k16, bf16 in, fp32 accumulate), ldmatrix
// fragment loads, 16-byte cp.async copies into shared memory, and bulk (TMA) row and tensor-box copies that
// complete on an mbarrier.
//
// Why one file: the exactness contract rests on every kernel issuing the same instruction over the same
// K chunks for an element; keeping the instruction in one place makes "the same chain" a fact of the
// source, not a convention.
#pragma once

#include <stdint.h>

// c (16x8 fp32 tile, this thread's 4 values) += a (16x16 bf16, row) · b (16x8 bf16, col).
__device__ __forceinline__ void mma_bf16_16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

// The transposed load: each 8x8 matrix is read with rows and columns swapped (for B operands stored
// k-major, such as attention's values).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

// 16 bytes global -> shared, asynchronously; valid = 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    int bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }

template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ---- bulk copies (sm_90): one instruction moves a whole row; the row's arrival is counted in bytes on an
// mbarrier, which its waiters poll by phase parity.
__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *bar, int arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}

// Makes the initialised mbarriers visible to the bulk copies (then a __syncthreads before any use).
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One arrival that also expects `bytes` more bytes of bulk copies before the phase can complete.
__device__ __forceinline__ void mbar_arrive_expect(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}

// Waits until the phase of the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n.reg .pred done;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
                 "r"(parity)
                 : "memory");
}

// One plain arrival (release at CTA scope: the arriving thread's earlier accesses happen before the phase
// completes for its waiters).
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// bytes (a multiple of 16, both addresses 16-aligned) global -> shared, counted on bar.
__device__ __forceinline__ void bulk_copy_g2s(void *smem, const void *gmem, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(smem)),
                 "l"(gmem), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}

// A 2-D box of a tensor map (a CUtensorMap in kernel parameter, constant or global memory) at coordinates
// (c0 innermost, c1) -> shared (aligned as the map's swizzle needs), its bytes counted on bar; elements
// outside the tensor are written as zeros and counted too.
__device__ __forceinline__ void tma_load_2d(void *smem, const void *map, int c0, int c1, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                     smem_u32(smem)),
                 "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
                 : "memory");
}

// Orders this thread's earlier shared-memory accesses (generic proxy) before its later bulk copies (async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Two floats -> one register of two bf16 (low half = a), round to nearest even (as f32_to_bf16_bits).
__device__ __forceinline__ uint32_t pack_bf16x2(float a, float b)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&v);
}
