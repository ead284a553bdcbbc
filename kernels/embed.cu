// embed — the decoder's input rows: a token's embedding-table row times the embedding scale (bf16(sqrt(H)),
// as a bf16 checkpoint applies it), or, at image placeholders, the image's soft-token row unscaled (spec §4.5).
#include "common.cuh"
#include "kernels.h"

__global__ void embed_kernel(const int32_t *__restrict__ tokens, const uint16_t *__restrict__ table, float scale,
                             const float *__restrict__ image_rows, const int32_t *__restrict__ image_index, int H,
                             float *__restrict__ x)
{
    kern_dep_launch();
    kern_dep_wait();
    int r = blockIdx.x, img = image_index ? image_index[r] : -1;
    float *out = x + (size_t)r * H;
    if (img >= 0) {
        for (int i = threadIdx.x; i < H; i += blockDim.x) out[i] = image_rows[(size_t)img * H + i];
    } else {
        const uint16_t *row = table + (size_t)tokens[r] * H;
        for (int i = threadIdx.x; i < H; i += blockDim.x) out[i] = bf16_bits_to_f32(row[i]) * scale;
    }
}

extern "C" void kern_embed(const int32_t *tokens, const uint16_t *table, float scale, const float *image_rows,
                           const int32_t *image_index, int rows, int H, float *x, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(embed_kernel, dim3(rows), dim3(256), 0, s, tokens, table, scale, image_rows, image_index, H, x);
    KERN_LAUNCHED();
}
