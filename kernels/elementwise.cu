// elementwise — the small one-pass ops: the final soft-cap, and the image embedder's pixel rescale and
// position-table add. (GeGLU runs in the gate|up product's epilogue: segments.cuh.)
#include "common.cuh"
#include "kernels.h"

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

static int blocks_for(long n)
{
    long b = (n + 255) / 256;
    return (int)(b > 65535 ? 65535 : (b < 1 ? 1 : b));
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
