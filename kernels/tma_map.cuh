// tma_map.cuh — tensor maps for the kernels that fill shared memory by tensor copies (gemm_tma.cu,
// gemm_skinny_tma.cu): a row-major (rows, K) bf16 matrix as boxes of 64 k (128 bytes) x box_rows rows with the
// 128-byte swizzle, so that a box copied to a 1024-aligned address holds row r's 16-byte chunk c at
// r * 128 + ((c ^ r % 8) * 16), and rows or k past the matrix arrive as zeros. The encoder comes from the
// driver the runtime has loaded, so nothing links against libcuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.cuh"
#include "mma.cuh"

#define TMA_BOX_K 64 // k per box: one 128-byte swizzled row

// Shared byte offset of (row, 16-byte chunk) in a swizzled box at a 1024-aligned base.
__device__ __forceinline__ uint32_t tma_swizzled(int row, int chunk)
{
    return (uint32_t)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// The stage pipeline of a producer warp and its consumers, set up by thread 0 before a __syncthreads: each
// slot's "full" barrier takes the producer's one arrival (with the stage's bytes), its "empty" barrier one
// arrival per consumer warp.
__device__ __forceinline__ void tma_pipe_init(uint64_t *full, uint64_t *empty, int stages, int consumer_warps)
{
    if (threadIdx.x != 0) return;
    for (int s = 0; s < stages; s++) {
        mbar_init(&full[s], 1);
        mbar_init(&empty[s], consumer_warps);
    }
    mbar_init_fence();
}

// Asks for a kernel parameter's tensor map ahead of its first copy.
__device__ __forceinline__ void tma_prefetch_map(const void *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

static inline PFN_cuTensorMapEncodeTiled_v12000 tma_encoder(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        KERN_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        if (!p || q != cudaDriverEntryPointSuccess) {
            fprintf(stderr, "g4: fatal: the CUDA driver has no cuTensorMapEncodeTiled\n");
            abort();
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

// The map of p (rows, K) for boxes of TMA_BOX_K x box_rows (who: the caller, for the message).
static inline CUtensorMap tma_map_rows(const uint16_t *p, int rows, int K, int box_rows, const char *who)
{
    CUtensorMap m;
    cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)K * 2};
    cuuint32_t box[2] = {TMA_BOX_K, (cuuint32_t)box_rows}, elem[2] = {1, 1};
    if (((uintptr_t)p & 15) || K % 8 || rows < 1 || box_rows < 1 || box_rows > 256) {
        fprintf(stderr, "g4: fatal: %s: tensor map of %d x %d at %p, box %d rows (16-byte aligned rows, 1..256)\n",
                who, rows, K, (const void *)p, box_rows);
        abort();
    }
    CUresult r = tma_encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dims, strides, box, elem,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "g4: fatal: %s: cuTensorMapEncodeTiled(%d x %d, box %d) failed (%d)\n", who, rows, K,
                box_rows, (int)r);
        abort();
    }
    return m;
}
