// elementwise — the small one-pass ops: GeGLU of a prompt pass's gate|up product (decode passes apply it in
// the product's epilogue, segments.cuh: the same geglu1 on the same values), the final soft-cap, the image
// embedder's pixel rescale and position-table add, and a row gather.
#include "common.cuh"
#include "kernels.h"
#include "segments.cuh"

// Four product columns (gate 2j, 2j+1, up 2j, 2j+1) in, h columns 2j, 2j+1 out: the flat float4 index i is
// the flat index of the h pair / 2, so no division.
__global__ void geglu_kernel(const float4 *__restrict__ gu, long n4, uint32_t *__restrict__ h)
{
    kern_dep_launch();
    kern_dep_wait();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 v = gu[i];
        h[i] = f32_to_bf16_bits(geglu1(v.x, v.z)) | (uint32_t)f32_to_bf16_bits(geglu1(v.y, v.w)) << 16;
    }
}

__global__ void softcap_kernel(float *__restrict__ x, long n, float cap)
{
    kern_dep_launch();
    kern_dep_wait();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        x[i] = cap * tanhf(x[i] / cap);
}

__global__ void pixels_kernel(const uint8_t *__restrict__ px, long n, float *__restrict__ out)
{
    kern_dep_launch();
    kern_dep_wait();
    const float scale = (float)(1.0 / 255.0);
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] = (float)px[i] * scale;
}

__global__ void positions_kernel(float *__restrict__ h, const float *__restrict__ table, const int32_t *__restrict__ pos,
                                 int E)
{
    kern_dep_launch();
    kern_dep_wait();
    int r = blockIdx.x, x = pos[2 * r], y = pos[2 * r + 1];
    for (int i = threadIdx.x; i < E; i += blockDim.x)
        h[(size_t)r * E + i] += table[((size_t)x * 2 + 0) * E + i] + table[((size_t)y * 2 + 1) * E + i];
}

// dst row j = src row index[j], rows of `pieces` 16-byte pieces
__global__ void gather_rows_kernel(const uint4 *__restrict__ src, const int32_t *__restrict__ index, int pieces,
                                   uint4 *__restrict__ dst)
{
    kern_dep_launch();
    kern_dep_wait();
    const uint4 *from = src + (size_t)index[blockIdx.x] * pieces;
    for (int i = threadIdx.x; i < pieces; i += blockDim.x) dst[(size_t)blockIdx.x * pieces + i] = from[i];
}

static int blocks_for(long n)
{
    long b = (n + 255) / 256;
    return (int)(b > 65535 ? 65535 : (b < 1 ? 1 : b));
}

extern "C" void kern_geglu(const float *gu, int rows, int I, uint16_t *h, kern_stream s)
{
    if (I % 2) {
        fprintf(stderr, "g4: fatal: kern_geglu: intermediate size %d (even)\n", I);
        abort();
    }
    long n4 = (long)rows * I / 2;
    if (n4 == 0) return;
    kern_launch(geglu_kernel, dim3(blocks_for(n4)), dim3(256), 0, s, (const float4 *)gu, n4, (uint32_t *)h);
    KERN_LAUNCHED();
}

extern "C" void kern_softcap(float *logits, long n, float cap, kern_stream s)
{
    if (n == 0) return;
    kern_launch(softcap_kernel, dim3(blocks_for(n)), dim3(256), 0, s, logits, n, cap);
    KERN_LAUNCHED();
}

extern "C" void kern_pixels_to_f32(const uint8_t *px, long n, float *out, kern_stream s)
{
    if (n == 0) return;
    kern_launch(pixels_kernel, dim3(blocks_for(n)), dim3(256), 0, s, px, n, out);
    KERN_LAUNCHED();
}

extern "C" void kern_add_positions(float *h, const float *table, const int32_t *positions, int rows, int E, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(positions_kernel, dim3(rows), dim3(256), 0, s, h, table, positions, E);
    KERN_LAUNCHED();
}

extern "C" void kern_gather_rows(const void *src, const int32_t *index, int rows, size_t row_bytes, void *dst,
                                 kern_stream s)
{
    if (row_bytes % 16 || (uintptr_t)src % 16 || (uintptr_t)dst % 16) {
        fprintf(stderr, "g4: fatal: kern_gather_rows: rows of %zu bytes (16-byte pieces, aligned)\n", row_bytes);
        abort();
    }
    if (rows == 0) return;
    kern_launch(gather_rows_kernel, dim3(rows), dim3(256), 0, s, (const uint4 *)src, index, (int)(row_bytes / 16),
                (uint4 *)dst);
    KERN_LAUNCHED();
}
