/* cuda_vision — the 12B's patch embedder on the GPU (spec §4.2): bytes -> fp32 pixels / 255 -> LayerNorm
 * -> patch_dense (+bias) -> LayerNorm -> + position rows -> LayerNorm -> weightless RMSNorm -> projection.
 * The products take bf16 inputs (the LayerNorm outputs rounded once) with fp32 accumulation. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/cuda/cuda_engine.h"
#include "engine/weights.h"
#include "model/model.h"
#include "util/util.h"

#define VISION_LN_EPS 1e-5f

int cuda_load_vision(struct cuda_engine *e, char *err)
{
    const struct cfg_vision_embedder *v = &e->model->cfg.vision.emb;
    const struct st_set *s = e->model->weights;
    struct cuda_vision *cv = &e->vision;
    int64_t pos_shape[3];
    cv->E = v->mm_embed_dim;
    cv->P = v->patch_dim;
    cv->posemb = v->mm_posemb_size;
    cv->rms_eps = (float)v->rms_eps;
    pos_shape[0] = cv->posemb;
    pos_shape[1] = 2;
    pos_shape[2] = cv->E;
#define VEC(dst, name, n)                                                                                          \
    if (!(dst = cuda_upload_f32(e, weights_vector(s, name, n, err), (size_t)(n)))) return -1
    VEC(cv->ln1_w, "model.vision_embedder.patch_ln1.weight", cv->P);
    VEC(cv->ln1_b, "model.vision_embedder.patch_ln1.bias", cv->P);
    VEC(cv->dense_b, "model.vision_embedder.patch_dense.bias", cv->E);
    VEC(cv->ln2_w, "model.vision_embedder.patch_ln2.weight", cv->E);
    VEC(cv->ln2_b, "model.vision_embedder.patch_ln2.bias", cv->E);
    VEC(cv->pos_w, "model.vision_embedder.pos_norm.weight", cv->E);
    VEC(cv->pos_b, "model.vision_embedder.pos_norm.bias", cv->E);
#undef VEC
    if (!(cv->pos = cuda_upload_f32(e, weights_vector_nd(s, "model.vision_embedder.pos_embedding", 3, pos_shape, err),
                               (size_t)cv->posemb * 2 * cv->E)))
        return -1;
    if (!(cv->dense = cuda_upload_bf16(e, weights_matrix(s, "model.vision_embedder.patch_dense.weight", cv->E, cv->P, err),
                                 (size_t)cv->E * cv->P)))
        return -1;
    if (!(cv->proj = cuda_upload_bf16(e, weights_matrix(s, "model.embed_vision.embedding_projection.weight", e->H,
                                                  v->output_proj_dims, err),
                                (size_t)e->H * cv->E)))
        return -1;
    return 0;
}

int cuda_vision_embed(struct cuda_engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                      char *err)
{
    struct cuda_vision *v = &e->vision;
    kern_stream s = e->stream;
    uint8_t *d_px;
    int32_t *d_pos;
    float *pix, *h;
    uint16_t *pix16, *h16;
    if (n > CUDA_MAX_IMAGE_ROWS)
        return g4_errf(err, "an image of %d patches is over the %d the engine plans for", n, CUDA_MAX_IMAGE_ROWS);
    for (int i = 0; i < n; i++)
        if (positions[2 * i] < 0 || positions[2 * i + 1] < 0 || positions[2 * i] >= v->posemb ||
            positions[2 * i + 1] >= v->posemb)
            return g4_errf(err, "image patch %d: position (%d, %d) outside the %d-entry position table", i,
                           positions[2 * i], positions[2 * i + 1], v->posemb);
    CUDA_CHECK(cudaMalloc((void **)&d_px, (size_t)n * v->P));
    CUDA_CHECK(cudaMalloc((void **)&d_pos, (size_t)n * 2 * sizeof *d_pos));
    CUDA_CHECK(cudaMalloc((void **)&pix, (size_t)n * v->P * sizeof *pix));
    CUDA_CHECK(cudaMalloc((void **)&pix16, (size_t)n * v->P * sizeof *pix16));
    CUDA_CHECK(cudaMalloc((void **)&h, (size_t)n * (v->E > e->H ? v->E : e->H) * sizeof *h));
    CUDA_CHECK(cudaMalloc((void **)&h16, (size_t)n * v->E * sizeof *h16));
    CUDA_CHECK(cudaMemcpyAsync(d_px, patches, (size_t)n * v->P, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d_pos, positions, (size_t)n * 2 * sizeof *d_pos, cudaMemcpyHostToDevice, s));
    kern_pixels_to_f32(d_px, (long)n * v->P, pix, s);
    kern_layernorm(pix, v->ln1_w, v->ln1_b, VISION_LN_EPS, n, v->P, NULL, pix16, s);
    kern_gemm_bf16(pix16, v->dense, v->dense_b, h, NULL, n, v->E, v->P, &e->gemm_ws, s);
    kern_layernorm(h, v->ln2_w, v->ln2_b, VISION_LN_EPS, n, v->E, h, NULL, s);
    kern_add_positions(h, v->pos, d_pos, n, v->E, s);
    kern_layernorm(h, v->pos_w, v->pos_b, VISION_LN_EPS, n, v->E, h, NULL, s);
    kern_rmsnorm(h, NULL, v->rms_eps, n, v->E, NULL, h16, s);
    kern_gemm_bf16(h16, v->proj, NULL, h, NULL, n, e->H, v->E, &e->gemm_ws, s);
    CUDA_CHECK(cudaMemcpyAsync(out, h, (size_t)n * e->H * sizeof *out, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    cudaFree(d_px);
    cudaFree(d_pos);
    cudaFree(pix);
    cudaFree(pix16);
    cudaFree(h);
    cudaFree(h16);
    return 0;
}
