/* cuda_step — one device pass of a step: the rows of several items stacked into one activation matrix, so
 * every projection streams its weights once for all of them; attention, norms and RoPE work per row from the
 * row table (struct kern_row). The order of operations per row is fixed (cuda_engine.h's precision notes),
 * so a row's logits do not depend on the other rows of the pass. */
#include <string.h>

#include "engine/cuda/cuda_engine.h"
#include "model/model.h"
#include "util/util.h"

/* Fills the host row table and uploads it with the tokens and the image rows. Returns the row count. */
static int stage_rows(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths)
{
    int R = 0, img = 0;
    for (int i = 0; i < n_items; i++) {
        const struct engine_item *it = &items[i];
        if (it->n_image_rows) {
            CUDA_CHECK(cudaMemcpyAsync(e->image_rows + (size_t)img * e->H, it->image_rows,
                                       (size_t)it->n_image_rows * e->H * sizeof(float), cudaMemcpyHostToDevice,
                                       e->stream));
        }
        for (int j = 0; j < it->n; j++) {
            struct kern_row *m = &e->h_meta[R + j];
            int block = it->image_block ? it->image_block[j] : -1;
            m->stream = it->stream;
            m->pos = lengths[i] + j;
            m->pos0 = lengths[i];
            m->base = R;
            m->block = block;
            m->item_end = R + it->n;
            e->h_tokens[R + j] = engine_embedding_id(e->model, it->tokens[j]);
            e->h_image_index[R + j] = block >= 0 ? img++ : -1;
        }
        R += it->n;
    }
    G4_CHECK(R <= e->max_rows && img <= e->image_rows_cap, "pass of %d rows over %d", R, e->max_rows);
    CUDA_CHECK(cudaMemcpyAsync(e->tokens, e->h_tokens, (size_t)R * 4, cudaMemcpyHostToDevice, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->image_index, e->h_image_index, (size_t)R * 4, cudaMemcpyHostToDevice, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->meta, e->h_meta, (size_t)R * sizeof *e->meta, cudaMemcpyHostToDevice, e->stream));
    return R;
}

static void layer_forward(struct cuda_engine *e, const struct cuda_layer *l, int R)
{
    const struct cfg_layer *c = l->c;
    int H = e->H, I = c->intermediate;
    kern_stream s = e->stream;
    int mask_all = e->opts.image_mask == ENGINE_IMAGE_MASK_ALL_LAYERS;
    kern_rmsnorm(e->x, l->in_norm, e->rms_eps, R, H, NULL, e->xn, s);
    kern_gemm_bf16(e->xn, l->wq, NULL, e->q, R, c->q_dim, H, s);
    kern_gemm_bf16(e->xn, l->wk, NULL, e->k_raw, R, c->kv_dim, H, s);
    if (l->wv) kern_gemm_bf16(e->xn, l->wv, NULL, e->v_raw, R, c->kv_dim, H, s);
    kern_qkv_prep(e->q, e->k_raw, l->wv ? e->v_raw : e->k_raw, l->q_norm, l->k_norm, l->inv_freq, e->meta, e->rms_eps, R,
                  c->n_heads, c->n_kv_heads, c->head_dim, e->k_new, e->v_new, s);
    kern_attention(e->q, e->k_new, e->v_new, l->cache_k, l->cache_v, e->meta, R, c->n_heads, c->n_kv_heads,
                   c->head_dim, l->cap, c->is_full, c->window, mask_all, e->o, s);
    kern_kv_store(e->k_new, e->v_new, e->meta, R, c->kv_dim, l->cap, l->cache_k, l->cache_v, s);
    kern_gemm_bf16(e->o, l->wo, NULL, e->t, R, H, c->q_dim, s);
    kern_residual_norm_add(e->x, e->t, l->post_attn_norm, e->rms_eps, 1.0f, R, H, s);
    kern_rmsnorm(e->x, l->pre_ff_norm, e->rms_eps, R, H, NULL, e->xn, s);
    kern_gemm_bf16(e->xn, l->w_gate, NULL, e->gate, R, I, H, s);
    kern_gemm_bf16(e->xn, l->w_up, NULL, e->up, R, I, H, s);
    kern_geglu(e->gate, e->up, (long)R * I, e->h, s);
    kern_gemm_bf16(e->h, l->w_down, NULL, e->t, R, H, I, s);
    kern_residual_norm_add(e->x, e->t, l->post_ff_norm, e->rms_eps, l->scalar, R, H, s);
}

/* Final norm, tied head and soft-cap for the rows an item asks logits for, CUDA_LOGIT_ROWS at a time. */
static void item_logits(struct cuda_engine *e, const struct engine_item *it, int base)
{
    for (int r = it->logits_from; r < it->n; r += CUDA_LOGIT_ROWS) {
        int n = it->n - r < CUDA_LOGIT_ROWS ? it->n - r : CUDA_LOGIT_ROWS;
        kern_rmsnorm(e->x + (size_t)(base + r) * e->H, e->final_norm, e->rms_eps, n, e->H, NULL, e->xn, e->stream);
        kern_gemm_bf16(e->xn, e->embed, NULL, e->logits, n, e->V, e->H, e->stream);
        if (e->has_softcap) kern_softcap(e->logits, (long)n * e->V, e->softcap, e->stream);
        CUDA_CHECK(cudaMemcpyAsync(it->logits + (size_t)(r - it->logits_from) * e->V, e->logits,
                                   (size_t)n * e->V * sizeof(float), cudaMemcpyDeviceToHost, e->stream));
    }
}

void cuda_run_items(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths)
{
    int R = stage_rows(e, items, n_items, lengths), base = 0;
    kern_embed(e->tokens, e->embed, e->embed_scale, e->image_rows, e->image_index, R, e->H, e->x, e->stream);
    for (int i = 0; i < e->L; i++) layer_forward(e, &e->layers[i], R);
    for (int i = 0; i < n_items; i++) {
        if (items[i].logits) item_logits(e, &items[i], base);
        base += items[i].n;
    }
    CUDA_CHECK(cudaStreamSynchronize(e->stream));
}
