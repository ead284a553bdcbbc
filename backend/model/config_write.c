/* config_write — configs as JSON: the summary `g4 info` prints, and the config.json / generation_config.json
 * of the tiny demo model that `g4 make-tiny-model` writes.
 *
 * The tiny config follows the layout of the published google/gemma-4-12B config.json (the older
 * global_head_dim / num_global_key_value_heads form, which every transformers version loads) or, on
 * request, the per_layer_config form transformers >= 5.15 writes; keys sorted and floats written as Python
 * does ("30.0", "1e-06"), 2-space indent. Whatever it writes must load back through cfg_parse_json. */
#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TINY_TRANSFORMERS_VERSION "5.17.0"

/* ---- small JSON helpers ---------------------------------------------------------------------------- */

/* A float as Python's repr writes it: shortest round-trip digits, fixed notation for exponents in
 * [-4, 16) with at least one decimal, scientific otherwise ("1e-06"). */
static void py_float(double v, char *out, size_t cap)
{
    char e[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    int exp10 = atoi(strchr(e, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int dec = p - 1 - exp10;
        snprintf(out, cap, "%.*f", dec > 0 ? dec : 0, v);
        if (!strchr(out, '.')) strncat(out, ".0", cap - strlen(out) - 1);
    } else {
        snprintf(out, cap, "%s", e);
    }
}

static void add_float(cJSON *o, const char *key, double v)
{
    char b[48];
    py_float(v, b, sizeof b);
    cJSON_AddRawToObject(o, key, b);
}

static cJSON *int_list(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

/* Sorts an object's keys (recursively), as json.dumps(sort_keys=True) does. */
static void sort_keys(cJSON *o)
{
    if (!o || (!cJSON_IsObject(o) && !cJSON_IsArray(o))) return;
    for (cJSON *c = o->child; c; c = c->next) sort_keys(c);
    if (!cJSON_IsObject(o)) return;
    cJSON *sorted = NULL;
    while (o->child) {
        cJSON *c = o->child;
        o->child = c->next;
        cJSON **at = &sorted;
        while (*at && strcmp((*at)->string, c->string) <= 0) at = &(*at)->next;
        c->next = *at;
        *at = c;
    }
    /* rebuild cJSON's links: prev of the head points to the tail */
    cJSON *prev = NULL;
    for (cJSON *c = sorted; c; c = c->next) {
        c->prev = prev;
        prev = c;
    }
    if (sorted) sorted->prev = prev;
    o->child = sorted;
}

/* A growable text buffer, local to this file. */
struct tbuf {
    char *p;
    size_t n, cap;
};

static void tb_put(struct tbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
        b->p = g4_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n + 1);
    b->n += n;
}

static void tb_indent(struct tbuf *b, int depth)
{
    for (int i = 0; i < depth; i++) tb_put(b, "  ");
}

/* json.dumps(indent=2) layout: one member or element per line, "key": value. */
static void py_dump(const cJSON *v, int depth, struct tbuf *b)
{
    char num[64];
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v);
        if (!v->child) {
            tb_put(b, obj ? "{}" : "[]");
            return;
        }
        tb_put(b, obj ? "{\n" : "[\n");
        for (const cJSON *c = v->child; c; c = c->next) {
            tb_indent(b, depth + 1);
            if (obj) {
                char *k = cJSON_PrintUnformatted(&(cJSON){.type = cJSON_String, .valuestring = c->string});
                tb_put(b, k);
                tb_put(b, ": ");
                free(k);
            }
            py_dump(c, depth + 1, b);
            tb_put(b, c->next ? ",\n" : "\n");
        }
        tb_indent(b, depth);
        tb_put(b, obj ? "}" : "]");
    } else if (cJSON_IsRaw(v)) {
        tb_put(b, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9007199254740992.0)
            snprintf(num, sizeof num, "%lld", (long long)v->valuedouble);
        else
            py_float(v->valuedouble, num, sizeof num);
        tb_put(b, num);
    } else {
        char *s = cJSON_PrintUnformatted(v);
        tb_put(b, s);
        free(s);
    }
}

/* ---- the summary for `g4 info` --------------------------------------------------------------------- */

static cJSON *rope_json(const struct cfg_layer *l)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "type", l->rope_type == CFG_ROPE_PROPORTIONAL ? "proportional" : "default");
    cJSON_AddNumberToObject(r, "theta", l->rope_theta);
    cJSON_AddNumberToObject(r, "rotary_dims", l->rope_dims);
    if (l->rope_factor != 1.0) cJSON_AddNumberToObject(r, "factor", l->rope_factor);
    return r;
}

/* Geometry of one layer type (from its first layer; "uniform" false when later ones differ). */
static cJSON *layer_type_json(const struct cfg_text *t, int full)
{
    cJSON *o = cJSON_CreateObject(), *idx = cJSON_CreateArray();
    const struct cfg_layer *first = NULL;
    int uniform = 1;
    for (int i = 0; i < t->n_layers; i++) {
        const struct cfg_layer *l = &t->layer[i];
        if (l->is_full != full) continue;
        cJSON_AddItemToArray(idx, cJSON_CreateNumber(i));
        if (!first) first = l;
        else if (l->head_dim != first->head_dim || l->n_kv_heads != first->n_kv_heads ||
                 l->n_heads != first->n_heads || l->intermediate != first->intermediate || l->window != first->window)
            uniform = 0;
    }
    cJSON_AddNumberToObject(o, "count", full ? t->n_full : t->n_sliding);
    if (full) cJSON_AddItemToObject(o, "layers", idx);
    else cJSON_Delete(idx);
    if (first) {
        cJSON_AddNumberToObject(o, "heads", first->n_heads);
        cJSON_AddNumberToObject(o, "kv_heads", first->n_kv_heads);
        cJSON_AddNumberToObject(o, "head_dim", first->head_dim);
        cJSON_AddBoolToObject(o, "k_eq_v", first->k_eq_v);
        if (!full) cJSON_AddNumberToObject(o, "window", first->window);
        cJSON_AddItemToObject(o, "rope", rope_json(first));
        cJSON_AddBoolToObject(o, "uniform", uniform);
    }
    return o;
}

static void add_token(cJSON *o, const char *key, int id)
{
    if (id >= 0) cJSON_AddNumberToObject(o, key, id);
    else cJSON_AddNullToObject(o, key);
}

cJSON *cfg_to_json(const struct cfg_model *m)
{
    const struct cfg_text *t = &m->text;
    cJSON *o = cJSON_CreateObject(), *tx = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model_type", m->model_type);
    cJSON_AddStringToObject(o, "architecture", m->architecture);
    if (m->dtype[0]) cJSON_AddStringToObject(o, "dtype", m->dtype);
    cJSON_AddStringToObject(o, "tensor_prefix", m->text_prefix);
    cJSON_AddStringToObject(tx, "model_type", t->model_type);
    cJSON_AddNumberToObject(tx, "hidden_size", t->hidden);
    cJSON_AddNumberToObject(tx, "intermediate_size", t->intermediate);
    cJSON_AddNumberToObject(tx, "layers", t->n_layers);
    cJSON_AddNumberToObject(tx, "vocab_size", t->vocab);
    cJSON_AddNumberToObject(tx, "rms_norm_eps", t->rms_eps);
    if (t->has_softcap) cJSON_AddNumberToObject(tx, "final_logit_softcapping", t->final_softcap);
    else cJSON_AddNullToObject(tx, "final_logit_softcapping");
    cJSON_AddBoolToObject(tx, "tie_word_embeddings", t->tie_embeddings);
    cJSON_AddBoolToObject(tx, "bidirectional_vision", t->bidir_vision);
    cJSON_AddNumberToObject(tx, "max_position_embeddings", t->max_pos);
    cJSON_AddNumberToObject(tx, "kv_shared_layers", t->n_kv_shared);
    cJSON_AddStringToObject(tx, "head_config", t->per_layer_form ? "per_layer_config" : "global_head_dim");
    cJSON_AddItemToObject(tx, "sliding", layer_type_json(t, 0));
    cJSON_AddItemToObject(tx, "full", layer_type_json(t, 1));
    add_token(tx, "bos_token_id", t->bos_id);
    add_token(tx, "pad_token_id", t->pad_id);
    cJSON_AddItemToObject(o, "text", tx);
    if (m->vision.kind == CFG_VISION_EMBEDDER) {
        const struct cfg_vision_embedder *v = &m->vision.emb;
        cJSON *vj = cJSON_AddObjectToObject(o, "vision");
        cJSON_AddStringToObject(vj, "kind", "embedder");
        cJSON_AddNumberToObject(vj, "patch_size", v->patch_size);
        cJSON_AddNumberToObject(vj, "pooling_kernel_size", v->pooling_kernel);
        cJSON_AddNumberToObject(vj, "model_patch_size", v->model_patch);
        cJSON_AddNumberToObject(vj, "mm_embed_dim", v->mm_embed_dim);
        cJSON_AddNumberToObject(vj, "mm_posemb_size", v->mm_posemb_size);
        cJSON_AddNumberToObject(vj, "num_soft_tokens", v->num_soft_tokens);
    } else if (m->vision.kind == CFG_VISION_TOWER) {
        const struct cfg_vision_tower *v = &m->vision.tower;
        cJSON *vj = cJSON_AddObjectToObject(o, "vision");
        cJSON_AddStringToObject(vj, "kind", "tower (not run yet)");
        cJSON_AddNumberToObject(vj, "hidden_size", v->hidden);
        cJSON_AddNumberToObject(vj, "layers", v->n_layers);
        cJSON_AddNumberToObject(vj, "heads", v->n_heads);
        cJSON_AddNumberToObject(vj, "head_dim", v->head_dim);
        cJSON_AddNumberToObject(vj, "patch_size", v->patch_size);
        cJSON_AddNumberToObject(vj, "soft_tokens", v->default_output_length);
    } else {
        cJSON_AddNullToObject(o, "vision");
    }
    if (m->has_audio) {
        cJSON *a = cJSON_AddObjectToObject(o, "audio");
        cJSON_AddNumberToObject(a, "embed_dim", m->audio_embed_dim);
        cJSON_AddBoolToObject(a, "used", 0);
    }
    if (m->is_drafter) {
        cJSON *d = cJSON_AddObjectToObject(o, "drafter");
        cJSON_AddNumberToObject(d, "backbone_hidden_size", m->drafter.backbone_hidden);
        cJSON_AddBoolToObject(d, "use_ordered_embeddings", m->drafter.use_ordered_embeddings);
        if (m->drafter.use_ordered_embeddings) cJSON_AddNumberToObject(d, "num_centroids", m->drafter.num_centroids);
    }
    cJSON *tok = cJSON_AddObjectToObject(o, "tokens");
    add_token(tok, "image", m->image_token_id);
    add_token(tok, "boi", m->boi_token_id);
    add_token(tok, "eoi", m->eoi_token_id);
    add_token(tok, "video", m->video_token_id);
    add_token(tok, "audio", m->audio_token_id);
    add_token(tok, "boa", m->boa_token_id);
    add_token(tok, "eoa", m->eoa_token_id);
    cJSON_AddItemToObject(o, "eos_token_ids", int_list(m->eos_ids, m->n_eos));
    if (m->quant_method[0]) {
        cJSON *q = cJSON_AddObjectToObject(o, "quantization");
        cJSON_AddStringToObject(q, "method", m->quant_method);
        cJSON_AddNumberToObject(q, "bits", m->quant_bits);
        cJSON_AddNumberToObject(q, "group_size", m->quant_group_size);
    }
    return o;
}

/* ---- the tiny demo model --------------------------------------------------------------------------- */

void cfg_tiny_defaults(struct cfg_tiny *t)
{
    memset(t, 0, sizeof *t);
    t->hidden = 64;
    t->intermediate = 256;
    t->n_layers = 4;
    t->n_heads = 4;
    t->n_kv_heads = 2;
    t->head_dim = 16;
    t->n_global_kv_heads = 1;
    t->global_head_dim = 32;
    t->full_every = 2;
    t->sliding_window = 32;
    t->vocab = 262144;
    t->final_softcap = 30.0;
    t->patch_size = 16;
    t->pooling_kernel = 3;
    t->mm_embed_dim = 64;
    t->mm_posemb_size = 1120;
    t->num_soft_tokens = 280;
    t->audio_embed_dim = 640;
    t->instruct = 1;
}

/* The keys a transformers save adds to a sub-config besides its own (the published file has them). */
static void add_base_keys(cJSON *o)
{
    cJSON *id2 = cJSON_AddObjectToObject(o, "id2label"), *l2i = cJSON_AddObjectToObject(o, "label2id");
    cJSON_AddStringToObject(id2, "0", "LABEL_0");
    cJSON_AddStringToObject(id2, "1", "LABEL_1");
    cJSON_AddNumberToObject(l2i, "LABEL_0", 0);
    cJSON_AddNumberToObject(l2i, "LABEL_1", 1);
    cJSON_AddStringToObject(o, "_name_or_path", "");
    cJSON_AddNullToObject(o, "architectures");
    cJSON_AddNumberToObject(o, "chunk_size_feed_forward", 0);
    cJSON_AddNullToObject(o, "dtype");
    add_float(o, "initializer_range", 0.02);
    cJSON_AddFalseToObject(o, "is_encoder_decoder");
    cJSON_AddFalseToObject(o, "output_attentions");
    cJSON_AddFalseToObject(o, "output_hidden_states");
    cJSON_AddNullToObject(o, "problem_type");
    cJSON_AddTrueToObject(o, "return_dict");
}

static cJSON *tiny_text(const struct cfg_tiny *t)
{
    cJSON *o = cJSON_CreateObject(), *lt = cJSON_CreateArray(), *rp, *f, *s;
    int every = t->full_every > 0 ? t->full_every : 6;
    for (int i = 0; i < t->n_layers; i++)
        cJSON_AddItemToArray(lt, cJSON_CreateString((i + 1) % every == 0 || i == t->n_layers - 1 ? "full_attention"
                                                                                              : "sliding_attention"));
    cJSON_AddFalseToObject(o, "attention_bias");
    add_float(o, "attention_dropout", 0.0);
    cJSON_AddTrueToObject(o, "attention_k_eq_v");
    cJSON_AddNumberToObject(o, "bos_token_id", 2);
    cJSON_AddStringToObject(o, "dtype", "bfloat16");
    cJSON_AddNumberToObject(o, "eos_token_id", 1);
    if (t->final_softcap > 0) add_float(o, "final_logit_softcapping", t->final_softcap);
    else cJSON_AddNullToObject(o, "final_logit_softcapping");
    cJSON_AddNumberToObject(o, "head_dim", t->head_dim);
    cJSON_AddStringToObject(o, "hidden_activation", "gelu_pytorch_tanh");
    cJSON_AddNumberToObject(o, "hidden_size", t->hidden);
    add_float(o, "initializer_range", 0.02);
    cJSON_AddNumberToObject(o, "intermediate_size", t->intermediate);
    cJSON_AddItemToObject(o, "layer_types", lt);
    cJSON_AddNumberToObject(o, "max_position_embeddings", 262144);
    cJSON_AddStringToObject(o, "model_type", "gemma4_unified_text");
    cJSON_AddNumberToObject(o, "num_attention_heads", t->n_heads);
    cJSON_AddNumberToObject(o, "num_hidden_layers", t->n_layers);
    cJSON_AddNumberToObject(o, "num_key_value_heads", t->n_kv_heads);
    cJSON_AddNumberToObject(o, "num_kv_shared_layers", 0);
    cJSON_AddNumberToObject(o, "pad_token_id", 0);
    add_float(o, "rms_norm_eps", 1e-6);
    rp = cJSON_AddObjectToObject(o, "rope_parameters");
    f = cJSON_AddObjectToObject(rp, "full_attention");
    add_float(f, "partial_rotary_factor", 0.25);
    add_float(f, "rope_theta", 1000000.0);
    cJSON_AddStringToObject(f, "rope_type", "proportional");
    s = cJSON_AddObjectToObject(rp, "sliding_attention");
    add_float(s, "rope_theta", 10000.0);
    cJSON_AddStringToObject(s, "rope_type", "default");
    cJSON_AddNumberToObject(o, "sliding_window", t->sliding_window);
    cJSON_AddTrueToObject(o, "tie_word_embeddings");
    cJSON_AddStringToObject(o, "use_bidirectional_attention", "vision");
    cJSON_AddTrueToObject(o, "use_cache");
    cJSON_AddFalseToObject(o, "use_double_wide_mlp");
    cJSON_AddNumberToObject(o, "vocab_size", t->vocab);
    if (t->per_layer_form) {
        /* transformers >= 5.15: full layers as sparse overrides, keys zero-padded to the widest index */
        cJSON *plc = cJSON_AddObjectToObject(o, "per_layer_config");
        char key[16];
        int width = snprintf(key, sizeof key, "%d", t->n_layers - 1);
        for (int i = 0; i < t->n_layers; i++) {
            if (strcmp(cJSON_GetArrayItem(lt, i)->valuestring, "full_attention")) continue;
            snprintf(key, sizeof key, "%0*d", width, i);
            cJSON *ov = cJSON_AddObjectToObject(plc, key);
            cJSON_AddNumberToObject(ov, "head_dim", t->global_head_dim);
            cJSON_AddNumberToObject(ov, "num_key_value_heads", t->n_global_kv_heads);
        }
    } else {
        /* the published 12B form, with the backward-compatibility keys its converter writes */
        cJSON_AddNumberToObject(o, "global_head_dim", t->global_head_dim);
        cJSON_AddNumberToObject(o, "num_global_key_value_heads", t->n_global_kv_heads);
        cJSON_AddFalseToObject(o, "enable_moe_block");
        cJSON_AddNumberToObject(o, "hidden_size_per_layer_input", 0);
        cJSON_AddNullToObject(o, "moe_intermediate_size");
        cJSON_AddNullToObject(o, "num_experts");
        cJSON_AddNullToObject(o, "top_k_experts");
        cJSON_AddNumberToObject(o, "vocab_size_per_layer_input", 262144);
    }
    return o;
}

/* Checks the caller's dimensions. 0 or -1 with err. */
static int tiny_check(const struct cfg_tiny *t, char *err)
{
    if (t->hidden < 1 || t->intermediate < 1 || t->n_layers < 1 || t->n_layers > CFG_MAX_LAYERS || t->n_heads < 1 ||
        t->n_kv_heads < 1 || t->n_global_kv_heads < 1 || t->head_dim < 2 || t->head_dim % 2 ||
        t->global_head_dim < 2 || t->global_head_dim % 2 || t->sliding_window < 1 || t->full_every < 0)
        return g4_errf(err, "tiny config: every dimension must be positive (head dims even, 1..%d layers)",
                       CFG_MAX_LAYERS);
    if (t->n_heads % t->n_kv_heads || t->n_heads % t->n_global_kv_heads)
        return g4_errf(err, "tiny config: %d heads are not a multiple of %d (sliding) and %d (full) kv heads",
                       t->n_heads, t->n_kv_heads, t->n_global_kv_heads);
    if (t->vocab <= 258884)
        return g4_errf(err, "tiny config: vocab %d must hold the Gemma 4 special ids (up to 258884)", t->vocab);
    if (t->patch_size < 1 || t->pooling_kernel < 1 || t->mm_embed_dim < 1 || t->mm_posemb_size < 1 ||
        t->num_soft_tokens < 1 || t->audio_embed_dim < 0)
        return g4_errf(err, "tiny config: vision and audio dimensions must be positive");
    return 0;
}

cJSON *cfg_tiny_json(const struct cfg_tiny *t, char *err)
{
    if (tiny_check(t, err)) return NULL;
    cJSON *o = cJSON_CreateObject(), *v;
    const char *arch[1] = {"Gemma4UnifiedForConditionalGeneration"};
    cJSON_AddItemToObject(o, "architectures", cJSON_CreateStringArray(arch, 1));
    if (t->audio_embed_dim > 0) {
        cJSON *a = cJSON_AddObjectToObject(o, "audio_config");
        add_base_keys(a);
        cJSON_AddNumberToObject(a, "audio_embed_dim", t->audio_embed_dim);
        cJSON_AddNumberToObject(a, "audio_samples_per_token", t->audio_embed_dim);
        cJSON_AddNumberToObject(a, "hidden_size", t->audio_embed_dim);
        cJSON_AddStringToObject(a, "model_type", "gemma4_unified_audio");
        cJSON_AddNumberToObject(a, "output_proj_dims", t->audio_embed_dim);
        add_float(a, "rms_norm_eps", 1e-6);
    }
    cJSON_AddNumberToObject(o, "audio_token_id", 258881);
    cJSON_AddNumberToObject(o, "boa_token_id", 256000);
    cJSON_AddNumberToObject(o, "boi_token_id", 255999);
    cJSON_AddStringToObject(o, "dtype", "bfloat16");
    cJSON_AddNumberToObject(o, "eoa_token_index", 258883);
    cJSON_AddNumberToObject(o, "eoi_token_id", 258882);
    if (t->instruct) cJSON_AddItemToObject(o, "eos_token_id", int_list((const int[]){1, 106}, 2));
    cJSON_AddNumberToObject(o, "image_token_id", 258880);
    add_float(o, "initializer_range", 0.02);
    cJSON_AddStringToObject(o, "model_type", "gemma4_unified");
    cJSON_AddItemToObject(o, "text_config", tiny_text(t));
    cJSON_AddTrueToObject(o, "tie_word_embeddings");
    cJSON_AddStringToObject(o, "transformers_version", TINY_TRANSFORMERS_VERSION);
    cJSON_AddNumberToObject(o, "video_token_id", 258884);
    v = cJSON_AddObjectToObject(o, "vision_config");
    add_base_keys(v);
    cJSON_AddNumberToObject(v, "mm_embed_dim", t->mm_embed_dim);
    cJSON_AddNumberToObject(v, "mm_posemb_size", t->mm_posemb_size);
    cJSON_AddNumberToObject(v, "model_patch_size", t->patch_size * t->pooling_kernel);
    cJSON_AddStringToObject(v, "model_type", "gemma4_unified_vision");
    cJSON_AddNumberToObject(v, "num_soft_tokens", t->num_soft_tokens);
    cJSON_AddNumberToObject(v, "output_proj_dims", t->mm_embed_dim);
    cJSON_AddNumberToObject(v, "patch_size", t->patch_size);
    cJSON_AddNumberToObject(v, "pooling_kernel_size", t->pooling_kernel);
    add_float(v, "rms_norm_eps", 1e-6);
    sort_keys(o);
    return o;
}

cJSON *cfg_tiny_generation_json(void)
{
    cJSON *g = cJSON_CreateObject();
    cJSON_AddNumberToObject(g, "bos_token_id", 2);
    cJSON_AddTrueToObject(g, "do_sample");
    cJSON_AddItemToObject(g, "eos_token_id", int_list((const int[]){1, 106, 50}, 3));
    cJSON_AddNumberToObject(g, "pad_token_id", 0);
    cJSON_AddItemToObject(g, "suppress_tokens", int_list((const int[]){258883, 258882}, 2));
    add_float(g, "temperature", 1.0);
    cJSON_AddNumberToObject(g, "top_k", 64);
    add_float(g, "top_p", 0.95);
    cJSON_AddStringToObject(g, "transformers_version", TINY_TRANSFORMERS_VERSION);
    return g;
}

int cfg_write_json(const char *path, const cJSON *o, char *err)
{
    struct tbuf b = {0};
    py_dump(o, 0, &b);
    tb_put(&b, "\n");
    int rc = util_write_file(path, b.p, b.n, err);
    free(b.p);
    return rc;
}

int cfg_write_tiny(const char *path, const struct cfg_tiny *t, char *err)
{
    cJSON *o = cfg_tiny_json(t, err);
    if (!o) return -1;
    int rc = cfg_write_json(path, o, err);
    cJSON_Delete(o);
    return rc;
}
