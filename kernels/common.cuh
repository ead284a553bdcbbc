// common.cuh — what every g4 kernel shares: bf16 conversions that match the CPU path (round to nearest
// even), deterministic warp reductions (a fixed xor butterfly, so a row's sum never depends on the launch),
// and the launch-check macro. Kernels never allocate and never decide on reduction orders at run time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define KERN_CHECK(call)                                                                                    \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess) {                                                                            \
            fprintf(stderr, "g4: fatal: %s:%d: CUDA error: %s: %s\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(e_));                                                                \
            abort();                                                                                        \
        }                                                                                                   \
    } while (0)

#define KERN_LAUNCHED() KERN_CHECK(cudaGetLastError())

// Programmatic dependent launch (sm_90): every kernel is launched by kern_launch with the stream's
// programmatic serialization allowed, so the next kernel of a pass may start while this one runs its last
// CTAs. Every kernel calls kern_dep_launch (its successor may be scheduled) and kern_dep_wait (everything the
// previous kernel wrote is complete and visible) before it reads or writes anything a predecessor touches;
// before the wait a kernel may only read what no kernel of the pass writes (the products prefetch weights
// there). Order and arithmetic are unchanged: only idle gaps between kernels shrink. G4_CUDA_PDL=0 turns the
// attribute off (then both instructions are no-ops).
__device__ __forceinline__ void kern_dep_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void kern_dep_launch() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
// A barrier of some of a CTA's warps (threads, a multiple of 32; id 1..15: 0 is __syncthreads's), e.g. the
// consumer warps of a kernel whose producer warp has gone on.
__device__ __forceinline__ void named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

static inline int kern_pdl_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("G4_CUDA_PDL");
        on = !(v && v[0] == '0');
    }
    return on;
}

template <typename... P, typename... A>
static inline void kern_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = kern_pdl_enabled() ? 1 : 0;
    KERN_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// 2^x by the hardware's approximation (ex2.approx.ftz: relative error ~2^-22), one instruction; the same bits
// for the same x in every kernel.
__device__ __forceinline__ float ex2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Sum over the 32 lanes in a fixed butterfly order; every lane gets the same result.
__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024) in a fixed order: each warp
// reduces, then warp 0 reduces the warp sums. scratch: 32 floats of shared memory. All threads get it.
__device__ __forceinline__ float block_sum(float v, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : 0.0f;
    v = warp_sum(v);
    return v;
}
