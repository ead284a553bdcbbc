/* cpu_weights — binds the CPU engine to a checkpoint's tensors (names exactly as on disk, spec §3):
 * matrices stay bf16 in the mapping; norm weights, biases, scalars and the position table are widened to
 * fp32 copies once. A tensor with the wrong shape or an unsupported dtype is refused by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_engine.h"
#include "engine/cpu/cpu_ops.h"
#include "engine/weights.h"
#include "model/model.h"
#include "util/util.h"

static int load_layer(struct cpu_engine *e, int i, char *err)
{
    const struct cfg_model *c = &e->model->cfg;
    const struct st_set *s = e->model->weights;
    struct cpu_layer *l = &e->layers[i];
    const struct cfg_layer *cl = &c->text.layer[i];
    char name[256];
    float *scalar;
    int H = e->H;
#define NAME(suffix) (snprintf(name, sizeof name, "%slayers.%d.%s", c->text_prefix, i, suffix), name)
    l->c = cl;
    if (!(l->wq = weights_matrix(s, NAME("self_attn.q_proj.weight"), cl->q_dim, H, err))) return -1;
    if (!(l->wk = weights_matrix(s, NAME("self_attn.k_proj.weight"), cl->kv_dim, H, err))) return -1;
    if (!cl->k_eq_v && !(l->wv = weights_matrix(s, NAME("self_attn.v_proj.weight"), cl->kv_dim, H, err))) return -1;
    if (!(l->wo = weights_matrix(s, NAME("self_attn.o_proj.weight"), H, cl->q_dim, err))) return -1;
    if (!(l->w_gate = weights_matrix(s, NAME("mlp.gate_proj.weight"), cl->intermediate, H, err))) return -1;
    if (!(l->w_up = weights_matrix(s, NAME("mlp.up_proj.weight"), cl->intermediate, H, err))) return -1;
    if (!(l->w_down = weights_matrix(s, NAME("mlp.down_proj.weight"), H, cl->intermediate, err))) return -1;
    if (!(l->q_norm = weights_vector(s, NAME("self_attn.q_norm.weight"), cl->head_dim, err))) return -1;
    if (!(l->k_norm = weights_vector(s, NAME("self_attn.k_norm.weight"), cl->head_dim, err))) return -1;
    if (!(l->in_norm = weights_vector(s, NAME("input_layernorm.weight"), H, err))) return -1;
    if (!(l->post_attn_norm = weights_vector(s, NAME("post_attention_layernorm.weight"), H, err))) return -1;
    if (!(l->pre_ff_norm = weights_vector(s, NAME("pre_feedforward_layernorm.weight"), H, err))) return -1;
    if (!(l->post_ff_norm = weights_vector(s, NAME("post_feedforward_layernorm.weight"), H, err))) return -1;
    if (!(scalar = weights_vector(s, NAME("layer_scalar"), 1, err))) return -1;
#undef NAME
    l->scalar = scalar[0];
    free(scalar);
    l->inv_freq = g4_malloc((size_t)(cl->head_dim / 2) * sizeof *l->inv_freq);
    cfg_rope_inv_freq(cl, l->inv_freq);
    l->cache_rows = engine_cache_rows(cl, e->opts.max_context);
    return 0;
}

static int load_vision(struct cpu_engine *e, char *err)
{
    const struct cfg_vision_embedder *v = &e->model->cfg.vision.emb;
    const struct st_set *s = e->model->weights;
    struct cpu_vision *cv = &e->vision;
    int64_t pos_shape[3];
    cv->E = v->mm_embed_dim;
    cv->P = v->patch_dim;
    cv->posemb = v->mm_posemb_size;
    cv->rms_eps = (float)v->rms_eps;
    pos_shape[0] = cv->posemb;
    pos_shape[1] = 2;
    pos_shape[2] = cv->E;
    if (!(cv->ln1_w = weights_vector(s, "model.vision_embedder.patch_ln1.weight", cv->P, err))) return -1;
    if (!(cv->ln1_b = weights_vector(s, "model.vision_embedder.patch_ln1.bias", cv->P, err))) return -1;
    if (!(cv->dense = weights_matrix(s, "model.vision_embedder.patch_dense.weight", cv->E, cv->P, err))) return -1;
    if (!(cv->dense_b = weights_vector(s, "model.vision_embedder.patch_dense.bias", cv->E, err))) return -1;
    if (!(cv->ln2_w = weights_vector(s, "model.vision_embedder.patch_ln2.weight", cv->E, err))) return -1;
    if (!(cv->ln2_b = weights_vector(s, "model.vision_embedder.patch_ln2.bias", cv->E, err))) return -1;
    if (!(cv->pos = weights_vector_nd(s, "model.vision_embedder.pos_embedding", 3, pos_shape, err))) return -1;
    if (!(cv->pos_w = weights_vector(s, "model.vision_embedder.pos_norm.weight", cv->E, err))) return -1;
    if (!(cv->pos_b = weights_vector(s, "model.vision_embedder.pos_norm.bias", cv->E, err))) return -1;
    if (!(cv->proj = weights_matrix(s, "model.embed_vision.embedding_projection.weight", e->H, v->output_proj_dims, err)))
        return -1;
    return 0;
}

int cpu_weights_load(struct cpu_engine *e, char *err)
{
    const struct cfg_model *c = &e->model->cfg;
    const struct st_set *s = e->model->weights;
    char name[256];
    e->H = c->text.hidden;
    e->V = c->text.vocab;
    e->L = c->text.n_layers;
    e->rms_eps = (float)c->text.rms_eps;
    e->embed_scale = bf16_to_f32(f32_to_bf16(sqrtf((float)e->H)));
    e->has_softcap = c->text.has_softcap;
    e->softcap = (float)c->text.final_softcap;
    if (c->is_drafter) return g4_errf(err, "%s: a drafter cannot run as the main model", e->model->dir);
    if (!c->text.tie_embeddings)
        return g4_errf(err, "%s: untied LM heads are not supported (Gemma 4 ties the head to embed_tokens)",
                       e->model->dir);
    snprintf(name, sizeof name, "%sembed_tokens.weight", c->text_prefix);
    if (!(e->embed = weights_matrix(s, name, e->V, e->H, err))) return -1;
    snprintf(name, sizeof name, "%snorm.weight", c->text_prefix);
    if (!(e->final_norm = weights_vector(s, name, e->H, err))) return -1;
    e->layers = g4_calloc((size_t)e->L, sizeof *e->layers);
    for (int i = 0; i < e->L; i++) {
        if (load_layer(e, i, err)) return -1;
        if (e->layers[i].c->q_dim > e->max_qd) e->max_qd = e->layers[i].c->q_dim;
        if (e->layers[i].c->kv_dim > e->max_kvd) e->max_kvd = e->layers[i].c->kv_dim;
        if (e->layers[i].c->intermediate > e->max_i) e->max_i = e->layers[i].c->intermediate;
    }
    e->has_vision = c->vision.kind == CFG_VISION_EMBEDDER;
    if (e->has_vision && load_vision(e, err)) return -1;
    return 0;
}

void cpu_weights_free(struct cpu_engine *e)
{
    struct cpu_vision *v = &e->vision;
    free(e->final_norm);
    for (int i = 0; e->layers && i < e->L; i++) {
        struct cpu_layer *l = &e->layers[i];
        free(l->q_norm);
        free(l->k_norm);
        free(l->in_norm);
        free(l->post_attn_norm);
        free(l->pre_ff_norm);
        free(l->post_ff_norm);
        free(l->inv_freq);
    }
    free(e->layers);
    free(v->ln1_w);
    free(v->ln1_b);
    free(v->dense_b);
    free(v->ln2_w);
    free(v->ln2_b);
    free(v->pos);
    free(v->pos_w);
    free(v->pos_b);
}
