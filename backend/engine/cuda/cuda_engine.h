/* cuda_engine — private structures of the CUDA backend (engine_backend.h), shared by cuda_engine.c (create,
 * memory plan, streams), cuda_step.c (the forward of one step) and cuda_vision.c (the patch embedder).
 *
 * Precision: weights bf16 as shipped; the residual stream fp32; every matrix product takes bf16 inputs
 * (normed activations rounded once) and accumulates in fp32; K/V caches bf16; norms, RoPE, softmax, GeGLU
 * and the soft-cap in fp32. A step runs all its rows through each projection at once (the weights stream
 * once per step); attention is per row over the row's own stream. */
#ifndef G4_CUDA_ENGINE_H
#define G4_CUDA_ENGINE_H

#include <stdint.h>

#include <cuda_runtime.h>

#include "engine/engine.h"
#include "kernels.h"

#define CUDA_CHECK(call)                                                                                        \
    do {                                                                                                        \
        cudaError_t e_ = (call);                                                                                \
        G4_CHECK(e_ == cudaSuccess, "CUDA error %s", cudaGetErrorString(e_));                                   \
    } while (0)

#define CUDA_LOGIT_ROWS 64 /* logits rows computed per product against the (V, H) table */

struct cuda_layer {
    const struct cfg_layer *c;
    uint16_t *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down; /* device bf16; wv NULL when K = V */
    float *q_norm, *k_norm;                               /* (D) device */
    float *in_norm, *post_attn_norm, *pre_ff_norm, *post_ff_norm; /* (H) device */
    float scalar;                                         /* layer_scalar (host) */
    float *inv_freq;                                      /* (D/2) device */
    int cap;                                              /* cache rows per stream */
    uint16_t *cache_k, *cache_v;                          /* (max_streams, cap, K*D) device bf16 */
};

struct cuda_vision {
    int E, P, posemb;
    float rms_eps;
    float *ln1_w, *ln1_b, *dense_b, *ln2_w, *ln2_b, *pos, *pos_w, *pos_b; /* device fp32 */
    uint16_t *dense, *proj;                                               /* device bf16 (E, P), (H, E) */
};

struct cuda_engine {
    const struct g4_model *model;
    struct engine_opts opts;
    cudaStream_t stream;
    int H, V, L, max_rows;      /* max_rows: rows of one device pass (items are grouped up to it) */
    float embed_scale, rms_eps, softcap;
    int has_softcap, has_vision;
    uint16_t *embed;            /* (V, H) device bf16; also the LM head */
    float *final_norm;          /* (H) device */
    struct cuda_layer *layers;
    struct cuda_vision vision;
    size_t weight_bytes, kv_bytes, scratch_bytes;
    /* scratch, device, sized for max_rows */
    float *x, *t, *q, *k_raw, *v_raw, *gate, *up, *logits, *image_rows;
    uint16_t *xn, *k_new, *v_new, *o, *h;
    int32_t *tokens, *image_index;
    struct kern_row *meta;
    int image_rows_cap;         /* rows image_rows can hold */
    int max_qd, max_kvd, max_i;
    /* host staging */
    int32_t *h_tokens, *h_image_index;
    struct kern_row *h_meta;
    void **allocs;              /* every cudaMalloc, freed at destroy */
    int n_allocs, cap_allocs;
};

/* cudaMalloc tracked by the engine (aborts on failure: the plan checked the size first). */
void *cuda_alloc(struct cuda_engine *e, size_t bytes);

/* cuda_step.c */
void cuda_run_items(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths);

/* cuda_vision.c */
int cuda_load_vision(struct cuda_engine *e, char *err);
int cuda_vision_embed(struct cuda_engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                      char *err);

#endif
