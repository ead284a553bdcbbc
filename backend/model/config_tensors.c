/* config_tensors — the tensors a config implies, and the check of a checkpoint against them.
 *
 * Names and shapes follow spec §3 exactly: the decoder under model.language_model. (multimodal) or model.
 * (text-only and drafters), the 12B embedder under model.vision_embedder. plus
 * model.embed_vision.embedding_projection.weight, the 31B tower under model.vision_tower., the drafter's
 * pre_projection / post_projection at the top level. `g4 make-tiny-model` writes exactly this list; the
 * loader checks a checkpoint against it before any weight is touched. Nothing here reads tensor data. */
#include "model/config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Builds one spec and hands it to the callback. */
struct emit {
    int (*fn)(const struct cfg_tensor_spec *t, void *ctx);
    void *ctx;
};

G4_PRINTF(6, 7)
static int put(const struct emit *e, int layer, int optional, int ndim, const int64_t *shape, const char *fmt, ...)
{
    struct cfg_tensor_spec t;
    va_list ap;
    memset(&t, 0, sizeof t);
    va_start(ap, fmt);
    vsnprintf(t.name, sizeof t.name, fmt, ap);
    va_end(ap);
    t.layer = layer;
    t.optional = optional;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++) t.shape[i] = shape[i];
    return e->fn(&t, e->ctx);
}

#define S1(a) ((const int64_t[]){(a)})
#define S2(a, b) ((const int64_t[]){(a), (b)})
#define S3(a, b, c) ((const int64_t[]){(a), (b), (c)})

/* The decoder layers, embeddings, final norm and head (and a drafter's projections). */
static int emit_text(const struct cfg_model *m, const struct emit *e)
{
    const struct cfg_text *t = &m->text;
    const char *P = m->text_prefix;
    int64_t H = t->hidden, V = t->vocab;
    int rc;
    if ((rc = put(e, -1, 0, 2, S2(V, H), "%sembed_tokens.weight", P))) return rc;
    for (int i = 0; i < t->n_layers; i++) {
        const struct cfg_layer *l = &t->layer[i];
        static const char *const norms[4] = {"input_layernorm", "post_attention_layernorm",
                                             "pre_feedforward_layernorm", "post_feedforward_layernorm"};
        for (int k = 0; k < 4; k++)
            if ((rc = put(e, i, 0, 1, S1(H), "%slayers.%d.%s.weight", P, i, norms[k]))) return rc;
        /* the drafters' layer_scalar is not confirmed from a header (spec §9 item 3) */
        if ((rc = put(e, i, m->is_drafter, 1, S1(1), "%slayers.%d.layer_scalar", P, i))) return rc;
        if ((rc = put(e, i, 0, 2, S2(l->q_dim, H), "%slayers.%d.self_attn.q_proj.weight", P, i)) ||
            (rc = put(e, i, 0, 1, S1(l->head_dim), "%slayers.%d.self_attn.q_norm.weight", P, i)))
            return rc;
        if (!l->kv_shared) {
            if ((rc = put(e, i, 0, 2, S2(l->kv_dim, H), "%slayers.%d.self_attn.k_proj.weight", P, i)) ||
                (rc = put(e, i, 0, 1, S1(l->head_dim), "%slayers.%d.self_attn.k_norm.weight", P, i)))
                return rc;
            if (!l->k_eq_v && (rc = put(e, i, 0, 2, S2(l->kv_dim, H), "%slayers.%d.self_attn.v_proj.weight", P, i)))
                return rc;
        }
        if ((rc = put(e, i, 0, 2, S2(H, l->q_dim), "%slayers.%d.self_attn.o_proj.weight", P, i)) ||
            (rc = put(e, i, 0, 2, S2(l->intermediate, H), "%slayers.%d.mlp.gate_proj.weight", P, i)) ||
            (rc = put(e, i, 0, 2, S2(l->intermediate, H), "%slayers.%d.mlp.up_proj.weight", P, i)) ||
            (rc = put(e, i, 0, 2, S2(H, l->intermediate), "%slayers.%d.mlp.down_proj.weight", P, i)))
            return rc;
    }
    {
        /* the converter writes a drafter's final norm as model.final_norm.weight; published assistants
         * are read as model.norm.weight (spec §3.4): either is accepted */
        struct cfg_tensor_spec n;
        memset(&n, 0, sizeof n);
        snprintf(n.name, sizeof n.name, "%snorm.weight", P);
        if (m->is_drafter) snprintf(n.alt_name, sizeof n.alt_name, "%sfinal_norm.weight", P);
        n.layer = -1;
        n.ndim = 1;
        n.shape[0] = H;
        if ((rc = e->fn(&n, e->ctx))) return rc;
    }
    if (!t->tie_embeddings && (rc = put(e, -1, 0, 2, S2(V, H), "lm_head.weight"))) return rc;
    if (m->is_drafter) {
        int64_t B = m->drafter.backbone_hidden;
        if ((rc = put(e, -1, 0, 2, S2(H, 2 * B), "pre_projection.weight")) ||
            (rc = put(e, -1, 0, 2, S2(B, H), "post_projection.weight")))
            return rc;
        if (m->drafter.use_ordered_embeddings) {
            struct cfg_tensor_spec o;
            if ((rc = put(e, -1, 0, 2, S2(m->drafter.num_centroids, H), "masked_embedding.centroids.weight")))
                return rc;
            memset(&o, 0, sizeof o);
            snprintf(o.name, sizeof o.name, "masked_embedding.token_ordering");
            o.layer = -1;
            o.ndim = 1;
            o.shape[0] = V;
            o.is_int = 1;
            if ((rc = e->fn(&o, e->ctx))) return rc;
        }
    }
    return 0;
}

/* The 12B embedder (spec §3.1, §4.2) or the 31B tower (spec §3.2), and the unified audio projection. */
static int emit_vision(const struct cfg_model *m, const struct emit *e)
{
    int64_t H = m->text.hidden;
    int rc;
    if (m->vision.kind == CFG_VISION_EMBEDDER) {
        const struct cfg_vision_embedder *v = &m->vision.emb;
        int64_t P = v->patch_dim, E = v->mm_embed_dim;
        const char *V = "model.vision_embedder.";
        if ((rc = put(e, -1, 0, 1, S1(P), "%spatch_ln1.weight", V)) ||
            (rc = put(e, -1, 0, 1, S1(P), "%spatch_ln1.bias", V)) ||
            (rc = put(e, -1, 0, 2, S2(E, P), "%spatch_dense.weight", V)) ||
            (rc = put(e, -1, 0, 1, S1(E), "%spatch_dense.bias", V)) ||
            (rc = put(e, -1, 0, 1, S1(E), "%spatch_ln2.weight", V)) ||
            (rc = put(e, -1, 0, 1, S1(E), "%spatch_ln2.bias", V)) ||
            (rc = put(e, -1, 0, 3, S3(v->mm_posemb_size, 2, E), "%spos_embedding", V)) ||
            (rc = put(e, -1, 0, 1, S1(E), "%spos_norm.weight", V)) ||
            (rc = put(e, -1, 0, 1, S1(E), "%spos_norm.bias", V)) ||
            (rc = put(e, -1, 0, 2, S2(H, v->output_proj_dims), "model.embed_vision.embedding_projection.weight")))
            return rc;
    } else if (m->vision.kind == CFG_VISION_TOWER) {
        const struct cfg_vision_tower *v = &m->vision.tower;
        int64_t vh = v->hidden, I = v->intermediate, D = v->head_dim;
        int64_t q = (int64_t)v->n_heads * D, kv = (int64_t)v->n_kv_heads * D;
        int64_t patch = (int64_t)v->patch_size * v->patch_size * 3;
        const char *T = "model.vision_tower.";
        char L[96]; /* "model.vision_tower.encoder.layers.N." */
        if ((rc = put(e, -1, 0, 2, S2(vh, patch), "%spatch_embedder.input_proj.weight", T)) ||
            (rc = put(e, -1, 0, 3, S3(2, v->position_embedding_size, vh), "%spatch_embedder.position_embedding_table",
                      T)))
            return rc;
        if (v->standardize &&
            ((rc = put(e, -1, 0, 1, S1(vh), "%sstd_bias", T)) || (rc = put(e, -1, 0, 1, S1(vh), "%sstd_scale", T))))
            return rc;
        for (int i = 0; i < v->n_layers; i++) {
            static const char *const norms[4] = {"input_layernorm", "post_attention_layernorm",
                                                 "pre_feedforward_layernorm", "post_feedforward_layernorm"};
            snprintf(L, sizeof L, "%sencoder.layers.%d.", T, i);
            for (int k = 0; k < 4; k++)
                if ((rc = put(e, -1, 0, 1, S1(vh), "%s%s.weight", L, norms[k]))) return rc;
            if ((rc = put(e, -1, 0, 2, S2(q, vh), "%sself_attn.q_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(kv, vh), "%sself_attn.k_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(kv, vh), "%sself_attn.v_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(vh, q), "%sself_attn.o_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 1, S1(D), "%sself_attn.q_norm.weight", L)) ||
                (rc = put(e, -1, 0, 1, S1(D), "%sself_attn.k_norm.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(I, vh), "%smlp.gate_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(I, vh), "%smlp.up_proj.linear.weight", L)) ||
                (rc = put(e, -1, 0, 2, S2(vh, I), "%smlp.down_proj.linear.weight", L)))
                return rc;
        }
        if ((rc = put(e, -1, 0, 2, S2(H, vh), "model.embed_vision.embedding_projection.weight"))) return rc;
    }
    /* the 12B ships an audio embedder g4 ignores: checked when present, never required */
    if (m->has_audio &&
        (rc = put(e, -1, 1, 2, S2(H, m->audio_embed_dim), "model.embed_audio.embedding_projection.weight")))
        return rc;
    return 0;
}

int cfg_for_each_tensor(const struct cfg_model *m, unsigned what,
                        int (*fn)(const struct cfg_tensor_spec *t, void *ctx), void *ctx)
{
    struct emit e = {fn, ctx};
    int rc;
    if ((what & CFG_CHECK_TEXT) && (rc = emit_text(m, &e))) return rc;
    if ((what & CFG_CHECK_VISION) && (rc = emit_vision(m, &e))) return rc;
    return 0;
}

/* ---- the check ------------------------------------------------------------------------------------- */

struct check_ctx {
    const struct cfg_model *m;
    const struct st_set *s;
    struct cfg_check_report *rep;
    unsigned char *used; /* (st_count) */
    char *err;
};

static int check_one(const struct cfg_tensor_spec *sp, void *vctx)
{
    struct check_ctx *c = vctx;
    const struct st_tensor *t = st_find(c->s, sp->name);
    c->rep->n_expected++;
    if (!t && sp->alt_name[0]) t = st_find(c->s, sp->alt_name);
    if (!t) {
        if (sp->optional) {
            c->rep->n_optional_missing++;
            return 0;
        }
        if (sp->layer >= 0) {
            const struct cfg_layer *l = &c->m->text.layer[sp->layer];
            return g4_errf(c->err, "%s: tensor %s is missing (config.json makes layer %d %s with %d kv heads of dim %d%s)",
                           st_path(c->s), sp->name, sp->layer, l->is_full ? "full_attention" : "sliding_attention",
                           l->n_kv_heads, l->head_dim, l->k_eq_v ? ", K=V" : "");
        }
        return g4_errf(c->err, "%s: tensor %s is missing%s%s", st_path(c->s), sp->name,
                       sp->alt_name[0] ? " (nor " : "", sp->alt_name[0] ? sp->alt_name : "");
    }
    enum st_dtype dt = sp->is_int ? (t->dtype == ST_I32 ? ST_I32 : ST_I64) : ST_ANY_FLOAT;
    if (!st_require(c->s, t->name, dt, sp->ndim, sp->shape, c->err)) return -1;
    c->used[t - st_at(c->s, 0)] = 1;
    c->rep->n_found++;
    c->rep->bytes_used += t->nbytes;
    if (sp->alt_name[0]) snprintf(c->rep->drafter_norm, sizeof c->rep->drafter_norm, "%s", t->name);
    return 0;
}

/* A drafter layer may carry K/V projections the converter skips; they are tolerated and unused. */
static int drafter_extra(const char *rest)
{
    const char *dot = strchr(rest, '.');
    if (!dot) return 0;
    return !strcmp(dot, ".self_attn.k_proj.weight") || !strcmp(dot, ".self_attn.v_proj.weight") ||
           !strcmp(dot, ".self_attn.k_norm.weight");
}

int cfg_check_tensors(const struct cfg_model *m, const struct st_set *s, unsigned what,
                      struct cfg_check_report *rep, char *err)
{
    struct cfg_check_report local;
    struct check_ctx c = {m, s, rep ? rep : &local, NULL, err};
    int rc = -1, n = st_count(s);
    char layers[64];
    memset(c.rep, 0, sizeof *c.rep);
    if (m->quant_method[0])
        return g4_errf(err, "%s: quantized checkpoints (%s, %d bits, group size %d) are not supported yet", st_path(s),
                       m->quant_method, m->quant_bits, m->quant_group_size);
    c.used = g4_calloc((size_t)(n ? n : 1), 1);
    if (cfg_for_each_tensor(m, what, check_one, &c)) goto free_used;
    snprintf(layers, sizeof layers, "%slayers.", m->text_prefix);
    size_t ll = strlen(layers);
    for (int i = 0; i < n; i++) {
        if (c.used[i]) continue;
        const struct st_tensor *t = st_at(s, i);
        c.rep->n_unused++;
        if (!(what & CFG_CHECK_TEXT) || strncmp(t->name, layers, ll)) continue;
        if (m->is_drafter && drafter_extra(t->name + ll)) continue;
        g4_errf(err, "%s: tensor %s is not part of the model config.json describes (check num_hidden_layers, layer_types, attention_k_eq_v, num_kv_shared_layers)",
                st_file_path(s, t->file), t->name);
        goto free_used;
    }
    rc = 0;
free_used:
    free(c.used);
    return rc;
}
