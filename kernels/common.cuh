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

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
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
