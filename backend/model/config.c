/* config — config.json to struct cfg_model (see config.h): field reading with transformers' defaults,
 * refusal of unsupported features by name, and the per-layer derivation the engine relies on.
 *
 * Sources of the rules (huggingface/transformers): configuration_gemma4.py (Gemma4TextConfig,
 * Gemma4VisionConfig, Gemma4Config), configuration_gemma4_unified.py, configuration_gemma4_assistant.py,
 * configuration_gemma4_unified_assistant.py, configuration_utils.py / integrations/heterogeneity.py
 * (per_layer_config) and modeling_rope_utils.py (default and proportional RoPE). Nothing here touches
 * weights; messages name the file and the JSON field. */
#include "model/config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- JSON field reading ---------------------------------------------------------------------------- */

/* Where a field lives, for messages: "SRC: SECTkey ...". */
struct jctx {
    const char *src;  /* file name */
    const char *sect; /* "text_config." or "" */
    char *err;
};

static const char *brief(const cJSON *v, char *buf, size_t cap)
{
    char *p = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(buf, cap, "%s", p ? p : "(missing)");
    if (p && strlen(p) >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
    free(p);
    return buf;
}

int cfg_json_number(const cJSON *v, double *out)
{
    char *end;
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (!cJSON_IsRaw(v) || !v->valuestring) return 0;
    double d = strtod(v->valuestring, &end);
    if (end == v->valuestring || *end || !isfinite(d)) return 0;
    *out = d;
    return 1;
}

static const cJSON *field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer field in [lo, hi]. Returns 1 (set), 0 (absent or null: *out untouched) or -1 with err. */
static int j_int_opt(const struct jctx *c, const cJSON *o, const char *key, long lo, long hi, int *out)
{
    char b[80];
    double d = 0;
    const cJSON *v = field(o, key);
    if (!v) return 0;
    if (!cfg_json_number(v, &d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return g4_errf(c->err, "%s: %s%s must be an integer in [%ld, %ld], got %s", c->src, c->sect, key, lo, hi,
                       brief(v, b, sizeof b));
    *out = (int)d;
    return 1;
}

/* Like j_int_opt with a default for absent or null. 0 or -1. */
static int j_int(const struct jctx *c, const cJSON *o, const char *key, long lo, long hi, int def, int *out)
{
    int r = j_int_opt(c, o, key, lo, hi, out);
    if (r == 0) *out = def;
    return r < 0 ? -1 : 0;
}

/* A number in [lo, hi] (ints accepted). 1 set, 0 absent/null, -1 error. */
static int j_num_opt(const struct jctx *c, const cJSON *o, const char *key, double lo, double hi, double *out)
{
    char b[80];
    double d = 0;
    const cJSON *v = field(o, key);
    if (!v) return 0;
    if (!cfg_json_number(v, &d) || !(d >= lo && d <= hi))
        return g4_errf(c->err, "%s: %s%s must be a number in [%g, %g], got %s", c->src, c->sect, key, lo, hi,
                       brief(v, b, sizeof b));
    *out = d;
    return 1;
}

static int j_num(const struct jctx *c, const cJSON *o, const char *key, double lo, double hi, double def,
                 double *out)
{
    int r = j_num_opt(c, o, key, lo, hi, out);
    if (r == 0) *out = def;
    return r < 0 ? -1 : 0;
}

/* true/false; absent or null -> def. 0 or -1. */
static int j_bool(const struct jctx *c, const cJSON *o, const char *key, int def, int *out)
{
    char b[80];
    const cJSON *v = field(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v))
        return g4_errf(c->err, "%s: %s%s must be true or false, got %s", c->src, c->sect, key, brief(v, b, sizeof b));
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A string field; absent or null -> NULL. 0 or -1. */
static int j_str(const struct jctx *c, const cJSON *o, const char *key, const char **out)
{
    char b[80];
    const cJSON *v = field(o, key);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v))
        return g4_errf(c->err, "%s: %s%s must be a string, got %s", c->src, c->sect, key, brief(v, b, sizeof b));
    *out = v->valuestring;
    return 0;
}

/* An id or a list of ids, each in [0, vocab). Absent -> the default list (def, n_def); null -> empty.
 * 0 or -1. */
static int j_ids(const struct jctx *c, const cJSON *o, const char *key, int vocab, const int *def, int n_def,
                 int *ids, int *n)
{
    char b[80];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *n = 0;
    if (!v) {
        for (int i = 0; i < n_def; i++) ids[(*n)++] = def[i];
        return 0;
    }
    if (cJSON_IsNull(v)) return 0;
    const cJSON *first = cJSON_IsArray(v) ? v->child : v;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > CFG_MAX_IDS)
        return g4_errf(c->err, "%s: %s%s has %d ids, over the limit of %d", c->src, c->sect, key,
                       cJSON_GetArraySize(v), CFG_MAX_IDS);
    for (const cJSON *e = first; e; e = cJSON_IsArray(v) ? e->next : NULL) {
        double d = -1;
        if (!cfg_json_number(e, &d) || d != floor(d) || d < 0 || d >= (double)vocab)
            return g4_errf(c->err, "%s: %s%s must be a token id or a list of token ids in [0, %d), got %s", c->src,
                           c->sect, key, vocab, brief(v, b, sizeof b));
        ids[(*n)++] = (int)d;
    }
    return 0;
}

/* A token id field in [0, vocab); null -> -1, absent -> def. 0 or -1. */
static int j_token(const struct jctx *c, const cJSON *o, const char *key, int vocab, int def, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v && cJSON_IsNull(v)) {
        *out = -1;
        return 0;
    }
    return j_int(c, o, key, 0, vocab - 1, def, out);
}

/* A token id g4 does not use (audio, video): an id outside the vocabulary is recorded as absent (-1), as
 * transformers only warns about it; a wrong type is still an error. */
static int j_token_unused(const struct jctx *c, const cJSON *o, const char *key, int vocab, int def, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v && cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble &&
        (v->valuedouble < 0 || v->valuedouble >= vocab)) {
        *out = -1;
        return 0;
    }
    if (!v && (def < 0 || def >= vocab)) {
        *out = -1;
        return 0;
    }
    return j_token(c, o, key, vocab, def, out);
}

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* ---- RoPE ------------------------------------------------------------------------------------------ */

/* Parses one rope_parameters entry (which: "sliding_attention", "full_attention" or "" for a flat dict). */
static int parse_rope_entry(const struct jctx *c, const cJSON *e, const char *which, struct cfg_rope *r)
{
    char b[80], sect[96];
    const char *type = NULL;
    snprintf(sect, sizeof sect, "%srope_parameters%s%s.", c->sect, *which ? "." : "", which);
    struct jctx rc = {c->src, sect, c->err};
    if (!cJSON_IsObject(e))
        return g4_errf(c->err, "%s: %s must be an object, got %s", c->src, sect, brief(e, b, sizeof b));
    if (j_str(&rc, e, "rope_type", &type) || (!type && j_str(&rc, e, "type", &type))) return -1;
    if (!type || !strcmp(type, "default")) {
        r->type = CFG_ROPE_DEFAULT;
    } else if (!strcmp(type, "proportional")) {
        r->type = CFG_ROPE_PROPORTIONAL;
    } else {
        return g4_errf(c->err, "%s: %srope_type \"%.40s\" is not supported (g4 runs \"default\" and \"proportional\")",
                       c->src, sect, type);
    }
    if (j_num_opt(&rc, e, "rope_theta", 1e-6, 1e12, &r->theta) != 1)
        return g4_errf(c->err, "%s: %srope_theta must be a positive number, got %s", c->src, sect,
                       brief(field(e, "rope_theta"), b, sizeof b));
    if (j_num(&rc, e, "partial_rotary_factor", 1e-9, 1.0, 1.0, &r->partial_rotary_factor) ||
        j_num(&rc, e, "factor", 1e-9, 1e9, 1.0, &r->factor))
        return -1;
    if (r->type == CFG_ROPE_DEFAULT) {
        if (r->partial_rotary_factor != 1.0)
            return g4_errf(c->err, "%s: %spartial_rotary_factor %g with rope_type \"default\" is not supported", c->src,
                           sect, r->partial_rotary_factor);
        r->factor = 1.0; /* the default rotation has no scaling */
    }
    return 0;
}

/* rope_parameters: absent -> Gemma 4's defaults; nested per layer type, or one flat dict for both. */
static int parse_rope(const struct jctx *c, const cJSON *tc, struct cfg_text *t)
{
    char b[80];
    const cJSON *rp = field(tc, "rope_parameters");
    t->rope_sliding = (struct cfg_rope){CFG_ROPE_DEFAULT, 10000.0, 1.0, 1.0};
    t->rope_full = (struct cfg_rope){CFG_ROPE_PROPORTIONAL, 1000000.0, 0.25, 1.0};
    if (!rp) return 0;
    if (!cJSON_IsObject(rp))
        return g4_errf(c->err, "%s: %srope_parameters must be an object, got %s", c->src, c->sect, brief(rp, b, sizeof b));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    if (!s && !f) {
        if (parse_rope_entry(c, rp, "", &t->rope_sliding)) return -1;
        t->rope_full = t->rope_sliding;
        return 0;
    }
    if ((s && parse_rope_entry(c, s, "sliding_attention", &t->rope_sliding)) ||
        (f && parse_rope_entry(c, f, "full_attention", &t->rope_full)))
        return -1;
    if (!s || !f) {
        /* a missing entry is an error only for a layer type that exists: checked in derive_layers */
        if (!s) t->rope_sliding.theta = 0;
        if (!f) t->rope_full.theta = 0;
    }
    return 0;
}

void cfg_rope_inv_freq(const struct cfg_layer *l, float *inv_freq)
{
    for (int i = 0; i < l->head_dim / 2; i++) {
        if (i < l->rope_pairs) {
            float e = (float)(2 * i) / (float)l->rope_denom;
            inv_freq[i] = (float)(1.0f / powf((float)l->rope_theta, e) / (float)l->rope_factor);
        } else {
            inv_freq[i] = 0.0f;
        }
    }
}

/* ---- per-layer derivation -------------------------------------------------------------------------- */

/* Per-layer overrides from per_layer_config; -1 = not overridden. */
struct layer_over {
    int head_dim, n_kv_heads, n_heads, intermediate, window;
};

/* Parses per_layer_config {"05": {"head_dim": 512, "num_key_value_heads": 1}, ...} into ov (n_layers). */
static int parse_per_layer(const struct jctx *c, const cJSON *plc, int n_layers, struct layer_over *ov)
{
    char b[80], sect[96];
    if (!cJSON_IsObject(plc))
        return g4_errf(c->err, "%s: %sper_layer_config must be an object, got %s", c->src, c->sect,
                       brief(plc, b, sizeof b));
    for (const cJSON *e = plc->child; e; e = e->next) {
        const char *k = e->string;
        size_t kl = strlen(k);
        long idx = -1;
        if (kl >= 1 && kl <= 6 && strspn(k, "0123456789") == kl) idx = strtol(k, NULL, 10);
        if (idx < 0 || idx >= n_layers)
            return g4_errf(c->err, "%s: %sper_layer_config key \"%.20s\" is not a layer index in [0, %d)", c->src,
                           c->sect, k, n_layers);
        struct layer_over *o = &ov[idx];
        if (o->head_dim != -2)
            return g4_errf(c->err, "%s: %sper_layer_config names layer %ld twice", c->src, c->sect, idx);
        o->head_dim = -1;
        snprintf(sect, sizeof sect, "%sper_layer_config[\"%s\"].", c->sect, k);
        struct jctx lc = {c->src, sect, c->err};
        if (!cJSON_IsObject(e))
            return g4_errf(c->err, "%s: %.95s must be an object, got %s", c->src, sect, brief(e, b, sizeof b));
        for (const cJSON *f = e->child; f; f = f->next) {
            const char *n = f->string;
            int r;
            if (!strcmp(n, "head_dim")) r = j_int_opt(&lc, e, n, 2, 4096, &o->head_dim);
            else if (!strcmp(n, "num_key_value_heads")) r = j_int_opt(&lc, e, n, 1, 1024, &o->n_kv_heads);
            else if (!strcmp(n, "num_attention_heads")) r = j_int_opt(&lc, e, n, 1, 1024, &o->n_heads);
            else if (!strcmp(n, "intermediate_size")) r = j_int_opt(&lc, e, n, 1, 1 << 20, &o->intermediate);
            else if (!strcmp(n, "sliding_window")) r = j_int_opt(&lc, e, n, 1, INT_MAX, &o->window);
            else if (!strcmp(n, "skip") && cJSON_IsArray(f) && !f->child) r = 0;
            else
                return g4_errf(c->err, "%s: %s%s (%s) is not supported by g4 (it reads head_dim, num_key_value_heads, num_attention_heads, intermediate_size, sliding_window)",
                               c->src, sect, n, brief(f, b, sizeof b));
            if (r < 0) return -1;
        }
    }
    return 0;
}

/* Fills t->layer[] from the layer types, the global fields and the overrides (legacy fields when ov is
 * NULL). Checks divisibility and RoPE geometry. 0 or -1. */
static int derive_layers(const struct jctx *c, struct cfg_text *t, const unsigned char *full,
                         const struct layer_over *ov, int legacy_gdim, int legacy_gkv)
{
    int first_shared = t->n_layers - t->n_kv_shared;
    t->n_full = t->n_sliding = 0;
    t->last_full = t->last_sliding = -1;
    for (int i = 0; i < t->n_layers; i++) {
        struct cfg_layer *l = &t->layer[i];
        memset(l, 0, sizeof *l);
        l->is_full = full[i];
        l->n_heads = t->n_heads;
        l->n_kv_heads = t->n_kv_heads;
        l->head_dim = t->head_dim;
        l->intermediate = t->intermediate;
        l->window = t->sliding_window;
        if (ov) {
            const struct layer_over *o = &ov[i];
            if (o->head_dim > 0) l->head_dim = o->head_dim;
            if (o->n_kv_heads > 0) l->n_kv_heads = o->n_kv_heads;
            if (o->n_heads > 0) l->n_heads = o->n_heads;
            if (o->intermediate > 0) l->intermediate = o->intermediate;
            if (o->window > 0) l->window = o->window;
        } else if (l->is_full) {
            /* modeling: head_dim = global_head_dim on full layers (when set); K = num_global_key_value_heads
             * only with attention_k_eq_v, falling back to num_key_value_heads when null */
            if (legacy_gdim > 0) l->head_dim = legacy_gdim;
            if (t->k_eq_v && legacy_gkv > 0) l->n_kv_heads = legacy_gkv;
        }
        if (l->is_full) l->window = 0;
        l->k_eq_v = t->k_eq_v && l->is_full;
        l->kv_shared = t->n_kv_shared > 0 && i >= first_shared;
        l->q_dim = l->n_heads * l->head_dim;
        l->kv_dim = l->n_kv_heads * l->head_dim;
        if (l->head_dim % 2)
            return g4_errf(c->err, "%s: decoder layer %d: head dim %d must be even (RoPE rotates pairs)", c->src, i,
                           l->head_dim);
        if (l->n_heads % l->n_kv_heads)
            return g4_errf(c->err, "%s: decoder layer %d: %d query heads are not a multiple of %d key/value heads",
                           c->src, i, l->n_heads, l->n_kv_heads);
        const struct cfg_rope *r = l->is_full ? &t->rope_full : &t->rope_sliding;
        if (r->theta <= 0)
            return g4_errf(c->err, "%s: %srope_parameters has no %s entry, but layer %d is one", c->src, c->sect,
                           l->is_full ? "full_attention" : "sliding_attention", i);
        l->rope_type = r->type;
        l->rope_theta = r->theta;
        l->rope_factor = r->factor;
        l->rope_denom = l->head_dim;
        /* proportional: int(partial_rotary_factor * head_dim // 2) angles over the full head dim */
        l->rope_pairs = r->type == CFG_ROPE_PROPORTIONAL ? (int)floor(r->partial_rotary_factor * l->head_dim / 2.0)
                                                         : l->head_dim / 2;
        l->rope_dims = 2 * l->rope_pairs;
        if (l->is_full) t->n_full++;
        else t->n_sliding++;
        if (!l->kv_shared) {
            if (l->is_full) t->last_full = i;
            else t->last_sliding = i;
        }
    }
    return 0;
}

/* ---- text config ----------------------------------------------------------------------------------- */

/* Defaults that differ between Gemma4UnifiedTextConfig and Gemma4TextConfig. */
struct text_defaults {
    const char *model_type;
    int sliding_window;
    int bidir_vision;
    int ple;       /* hidden_size_per_layer_input */
    int ple_vocab; /* vocab_size_per_layer_input */
    int max_pos;
};

static const struct text_defaults unified_defaults = {"gemma4_unified_text", 1024, 1, 0, 0, 262144};
static const struct text_defaults gemma4_defaults = {"gemma4_text", 512, 0, 256, 262144, 131072};

/* Reads the layer types (or the HF default rule) into full[]. */
static int parse_layer_types(const struct jctx *c, const cJSON *tc, struct cfg_text *t, unsigned char *full)
{
    char b[80];
    const cJSON *lt = field(tc, "layer_types");
    if (!lt) {
        for (int i = 0; i < t->n_layers; i++) full[i] = (i + 1) % 6 == 0;
    } else {
        if (!cJSON_IsArray(lt))
            return g4_errf(c->err, "%s: %slayer_types must be a list, got %s", c->src, c->sect, brief(lt, b, sizeof b));
        if (cJSON_GetArraySize(lt) != t->n_layers)
            return g4_errf(c->err, "%s: %slayer_types has %d entries but num_hidden_layers is %d", c->src, c->sect,
                           cJSON_GetArraySize(lt), t->n_layers);
        int i = 0;
        for (const cJSON *e = lt->child; e; e = e->next, i++) {
            if (cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention")) full[i] = 1;
            else if (cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention")) full[i] = 0;
            else
                return g4_errf(c->err, "%s: %slayer_types[%d] is %s; g4 runs \"sliding_attention\" and \"full_attention\"",
                               c->src, c->sect, i, brief(e, b, sizeof b));
        }
    }
    /* transformers forces the last layer to full attention (with a warning) */
    t->last_layer_forced = !full[t->n_layers - 1];
    full[t->n_layers - 1] = 1;
    return 0;
}

/* Refuses, by name, what g4 does not run. */
static int refuse_unsupported(const struct jctx *c, const cJSON *tc, const struct text_defaults *d, int is_drafter,
                              const struct cfg_text *t)
{
    int moe = 0, n_exp = 0, ple = 0, wide = 0, bias = 0, ple_vocab = 0;
    const char *act = NULL, *bidir = NULL;
    if (j_bool(c, tc, "enable_moe_block", 0, &moe) || j_int(c, tc, "num_experts", 0, 1 << 20, 0, &n_exp) ||
        j_int(c, tc, "hidden_size_per_layer_input", 0, 1 << 20, d->ple, &ple) ||
        j_int(c, tc, "vocab_size_per_layer_input", 0, 1 << 24, d->ple_vocab, &ple_vocab) ||
        j_bool(c, tc, "use_double_wide_mlp", 0, &wide) || j_bool(c, tc, "attention_bias", 0, &bias) ||
        j_str(c, tc, "hidden_activation", &act) || j_str(c, tc, "use_bidirectional_attention", &bidir))
        return -1;
    if (moe || n_exp > 0)
        return g4_errf(c->err, "%s: Mixture-of-Experts (%senable_moe_block=%s, num_experts=%d: the 26B-A4B design) is not supported by g4",
                       c->src, c->sect, moe ? "true" : "false", n_exp);
    if (ple > 0)
        return g4_errf(c->err, "%s: per-layer embeddings (PLE: %shidden_size_per_layer_input=%d, the E2B/E4B design) are not supported by g4",
                       c->src, c->sect, ple);
    if (t->n_kv_shared > 0 && !is_drafter)
        return g4_errf(c->err, "%s: KV-shared layers (%snum_kv_shared_layers=%d, the E2B/E4B design) are not supported by g4 outside an assistant drafter",
                       c->src, c->sect, t->n_kv_shared);
    if (wide)
        return g4_errf(c->err, "%s: the double-wide MLP (%suse_double_wide_mlp=true) is not supported by g4", c->src,
                       c->sect);
    if (bias)
        return g4_errf(c->err, "%s: %sattention_bias=true is not supported (Gemma 4 has no biases)", c->src, c->sect);
    if (act && strcmp(act, "gelu_pytorch_tanh"))
        return g4_errf(c->err, "%s: %shidden_activation \"%.40s\" is not supported (g4 runs gelu_pytorch_tanh)", c->src,
                       c->sect, act);
    if (bidir && strcmp(bidir, "vision"))
        return g4_errf(c->err, "%s: %suse_bidirectional_attention \"%.20s\" is not supported (g4 runs \"vision\" or null)",
                       c->src, c->sect, bidir);
    if (is_drafter && !strcmp(d->model_type, "gemma4_text") && ple_vocab != 0)
        return g4_errf(c->err, "%s: %svocab_size_per_layer_input must be 0 in a gemma4_assistant (transformers refuses anything else), got %d",
                       c->src, c->sect, ple_vocab);
    return 0;
}

/* Parses a text config object tc with the defaults d into t. */
static int parse_text(const struct jctx *c, const cJSON *tc, const struct text_defaults *d, int is_drafter,
                      struct cfg_text *t)
{
    const char *mt = NULL, *bidir = NULL;
    int gdim = 512, gkv = 0;
    unsigned char full[CFG_MAX_LAYERS];
    struct layer_over ov[CFG_MAX_LAYERS];
    static const int eos_def[1] = {1};
    if (!cJSON_IsObject(tc)) return g4_errf(c->err, "%s: %.*s must be an object", c->src, (int)strlen(c->sect) - 1, c->sect);
    if (j_str(c, tc, "model_type", &mt)) return -1;
    if (mt && strcmp(mt, d->model_type))
        return g4_errf(c->err, "%s: %smodel_type is \"%.40s\", expected \"%s\"", c->src, c->sect, mt, d->model_type);
    copy_str(t->model_type, sizeof t->model_type, d->model_type);
    if (j_int(c, tc, "vocab_size", 1, 1 << 24, 262144, &t->vocab) ||
        j_int(c, tc, "hidden_size", 1, 65536, 2304, &t->hidden) ||
        j_int(c, tc, "intermediate_size", 1, 1 << 20, 9216, &t->intermediate) ||
        j_int(c, tc, "num_hidden_layers", 1, CFG_MAX_LAYERS, 30, &t->n_layers) ||
        j_int(c, tc, "num_attention_heads", 1, 1024, 8, &t->n_heads) ||
        j_int(c, tc, "num_key_value_heads", 1, 1024, 4, &t->n_kv_heads) ||
        j_int(c, tc, "head_dim", 2, 4096, 256, &t->head_dim) ||
        j_int(c, tc, "max_position_embeddings", 1, INT_MAX, d->max_pos, &t->max_pos) ||
        j_num(c, tc, "rms_norm_eps", 1e-30, 1.0, 1e-6, &t->rms_eps) ||
        j_int(c, tc, "sliding_window", 1, INT_MAX, d->sliding_window, &t->sliding_window) ||
        j_bool(c, tc, "tie_word_embeddings", 1, &t->tie_embeddings) ||
        j_bool(c, tc, "attention_k_eq_v", 0, &t->k_eq_v) ||
        j_int(c, tc, "num_kv_shared_layers", 0, CFG_MAX_LAYERS, 0, &t->n_kv_shared) ||
        j_int(c, tc, "pad_token_id", -1, t->vocab - 1, 0, &t->pad_id))
        return -1;
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(tc, "pad_token_id"))) t->pad_id = -1;
    if (j_token(c, tc, "bos_token_id", t->vocab, 2, &t->bos_id) ||
        j_ids(c, tc, "eos_token_id", t->vocab, eos_def, 1, t->eos_ids, &t->n_eos))
        return -1;
    t->has_softcap = j_num_opt(c, tc, "final_logit_softcapping", 1e-9, 1e9, &t->final_softcap);
    if (t->has_softcap < 0) return -1;
    if (j_str(c, tc, "use_bidirectional_attention", &bidir)) return -1;
    t->bidir_vision = cJSON_GetObjectItemCaseSensitive(tc, "use_bidirectional_attention") ? bidir != NULL
                                                                                            : d->bidir_vision;
    if (is_drafter && t->n_kv_shared == 0) t->n_kv_shared = t->n_layers; /* as the assistant configs do */
    if (t->n_kv_shared > t->n_layers)
        return g4_errf(c->err, "%s: %snum_kv_shared_layers %d is more than num_hidden_layers %d", c->src, c->sect,
                       t->n_kv_shared, t->n_layers);
    if (is_drafter && t->n_kv_shared != t->n_layers)
        return g4_errf(c->err, "%s: every layer of an assistant must be KV-shared: %snum_kv_shared_layers is %d, num_hidden_layers %d",
                       c->src, c->sect, t->n_kv_shared, t->n_layers);
    if (refuse_unsupported(c, tc, d, is_drafter, t) || parse_layer_types(c, tc, t, full) || parse_rope(c, tc, t))
        return -1;
    const cJSON *plc = field(tc, "per_layer_config");
    t->per_layer_form = plc != NULL;
    if (plc) {
        for (int i = 0; i < t->n_layers; i++) ov[i] = (struct layer_over){-2, -1, -1, -1, -1};
        if (parse_per_layer(c, plc, t->n_layers, ov)) return -1;
    } else {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(tc, "global_head_dim");
        if (g && cJSON_IsNull(g)) gdim = 0;
        if (j_int(c, tc, "global_head_dim", 2, 4096, gdim, &gdim) ||
            j_int(c, tc, "num_global_key_value_heads", 1, 1024, 0, &gkv))
            return -1;
    }
    if (derive_layers(c, t, full, plc ? ov : NULL, gdim, gkv)) return -1;
    t->global_head_dim = t->head_dim;
    t->n_global_kv_heads = t->n_kv_heads;
    for (int i = 0; i < t->n_layers; i++)
        if (t->layer[i].is_full) {
            t->global_head_dim = t->layer[i].head_dim;
            t->n_global_kv_heads = t->layer[i].n_kv_heads;
            break;
        }
    return 0;
}

/* ---- vision and audio ------------------------------------------------------------------------------ */

static int parse_vision_embedder(const struct jctx *c0, const cJSON *vc, struct cfg_vision_embedder *v)
{
    struct jctx c = {c0->src, "vision_config.", c0->err};
    const char *mt = NULL;
    int mps = 0;
    if (j_str(&c, vc, "model_type", &mt)) return -1;
    if (mt && strcmp(mt, "gemma4_unified_vision"))
        return g4_errf(c.err, "%s: vision_config.model_type is \"%.40s\", expected \"gemma4_unified_vision\"", c.src, mt);
    if (j_int(&c, vc, "patch_size", 1, 1024, 16, &v->patch_size) ||
        j_int(&c, vc, "pooling_kernel_size", 1, 64, 3, &v->pooling_kernel) ||
        j_int(&c, vc, "mm_embed_dim", 1, 65536, 3840, &v->mm_embed_dim) ||
        j_int(&c, vc, "mm_posemb_size", 1, 1 << 20, 1120, &v->mm_posemb_size) ||
        j_int(&c, vc, "output_proj_dims", 1, 65536, 3840, &v->output_proj_dims) ||
        j_num(&c, vc, "rms_norm_eps", 1e-30, 1.0, 1e-6, &v->rms_eps) ||
        j_int(&c, vc, "num_soft_tokens", 1, 1 << 20, 280, &v->num_soft_tokens) ||
        j_int(&c, vc, "model_patch_size", 1, 1 << 16, 0, &mps))
        return -1;
    v->model_patch = v->patch_size * v->pooling_kernel;
    v->patch_dim = v->model_patch * v->model_patch * 3;
    if (mps && mps != v->model_patch)
        return g4_errf(c.err, "%s: vision_config.model_patch_size %d is not patch_size %d x pooling_kernel_size %d",
                       c.src, mps, v->patch_size, v->pooling_kernel);
    if (v->model_patch > 1024)
        return g4_errf(c.err, "%s: vision_config: merged patches of %d px are over the limit of 1024", c.src,
                       v->model_patch);
    if (v->output_proj_dims != v->mm_embed_dim)
        return g4_errf(c.err, "%s: vision_config.output_proj_dims %d must equal mm_embed_dim %d (the embedder output feeds the projection)",
                       c.src, v->output_proj_dims, v->mm_embed_dim);
    return 0;
}

static int parse_vision_tower(const struct jctx *c0, const cJSON *vc, struct cfg_vision_tower *v)
{
    struct jctx c = {c0->src, "vision_config.", c0->err};
    const char *mt = NULL, *act = NULL;
    int clipped = 0, bias = 0;
    if (j_str(&c, vc, "model_type", &mt) || j_str(&c, vc, "hidden_activation", &act)) return -1;
    if (mt && strcmp(mt, "gemma4_vision"))
        return g4_errf(c.err, "%s: vision_config.model_type is \"%.40s\", expected \"gemma4_vision\"", c.src, mt);
    if (j_int(&c, vc, "hidden_size", 1, 65536, 768, &v->hidden) ||
        j_int(&c, vc, "intermediate_size", 1, 1 << 20, 3072, &v->intermediate) ||
        j_int(&c, vc, "num_hidden_layers", 1, 1024, 16, &v->n_layers) ||
        j_int(&c, vc, "num_attention_heads", 1, 1024, 12, &v->n_heads) ||
        j_int(&c, vc, "num_key_value_heads", 1, 1024, 12, &v->n_kv_heads) ||
        j_int(&c, vc, "head_dim", 2, 4096, 64, &v->head_dim) ||
        j_int(&c, vc, "patch_size", 1, 1024, 16, &v->patch_size) ||
        j_int(&c, vc, "pooling_kernel_size", 1, 64, 3, &v->pooling_kernel) ||
        j_int(&c, vc, "position_embedding_size", 1, 1 << 24, 10240, &v->position_embedding_size) ||
        j_num(&c, vc, "rms_norm_eps", 1e-30, 1.0, 1e-6, &v->rms_eps) ||
        j_bool(&c, vc, "standardize", 0, &v->standardize) || j_bool(&c, vc, "use_clipped_linears", 0, &clipped) ||
        j_bool(&c, vc, "attention_bias", 0, &bias) ||
        j_int(&c, vc, "default_output_length", 1, 1 << 20, 280, &v->default_output_length))
        return -1;
    v->rope_theta = 100.0;
    const cJSON *rp = field(vc, "rope_parameters");
    struct jctx rc = {c.src, "vision_config.rope_parameters.", c.err};
    if (rp && j_num(&rc, rp, "rope_theta", 1e-6, 1e12, 100.0, &v->rope_theta)) return -1;
    if (act && strcmp(act, "gelu_pytorch_tanh"))
        return g4_errf(c.err, "%s: vision_config.hidden_activation \"%.40s\" is not supported (g4 runs gelu_pytorch_tanh)",
                       c.src, act);
    if (clipped)
        return g4_errf(c.err, "%s: vision_config.use_clipped_linears=true (the E2B/E4B vision tower) is not supported by g4",
                       c.src);
    if (bias) return g4_errf(c.err, "%s: vision_config.attention_bias=true is not supported", c.src);
    if (v->n_heads % v->n_kv_heads)
        return g4_errf(c.err, "%s: vision_config: %d heads are not a multiple of %d key/value heads", c.src, v->n_heads,
                       v->n_kv_heads);
    return 0;
}

/* ---- top level ------------------------------------------------------------------------------------- */

/* Top-level fields shared by the multimodal configs: token ids, eos, tie. */
static int parse_mm_top(const struct jctx *c, const cJSON *root, struct cfg_model *m)
{
    int V = m->text.vocab;
    if (j_token(c, root, "image_token_id", V, 258880, &m->image_token_id) ||
        j_token(c, root, "boi_token_id", V, 255999, &m->boi_token_id) ||
        j_token(c, root, "eoi_token_id", V, 258882, &m->eoi_token_id) ||
        j_token_unused(c, root, "video_token_id", V, 258884, &m->video_token_id) ||
        j_token_unused(c, root, "audio_token_id", V, 258881, &m->audio_token_id) ||
        j_token_unused(c, root, "boa_token_id", V, 256000, &m->boa_token_id))
        return -1;
    const char *eoa_key = cJSON_GetObjectItemCaseSensitive(root, "eoa_token_index") || !field(root, "eoa_token_id")
                              ? "eoa_token_index"
                              : "eoa_token_id";
    return j_token_unused(c, root, eoa_key, V, 258883, &m->eoa_token_id);
}

static int check_tie(const struct jctx *c, const cJSON *root, const cJSON *tc, struct cfg_model *m)
{
    int top = 1;
    if (j_bool(c, root, "tie_word_embeddings", 1, &top)) return -1;
    if (field(tc, "tie_word_embeddings") && top != m->text.tie_embeddings)
        return g4_errf(c->err, "%s: tie_word_embeddings is %s but text_config.tie_word_embeddings is %s", c->src,
                       top ? "true" : "false", m->text.tie_embeddings ? "true" : "false");
    m->text.tie_embeddings = top;
    return 0;
}

/* Quantization descriptions: MLX's "quantization" and HF's "quantization_config". */
static int parse_quant(const struct jctx *c, const cJSON *root, struct cfg_model *m)
{
    const cJSON *q = field(root, "quantization");
    const char *meth = NULL;
    struct jctx qc = {c->src, "quantization.", c->err};
    if (!q) {
        q = field(root, "quantization_config");
        qc.sect = "quantization_config.";
    }
    if (!q) return 0;
    if (!cJSON_IsObject(q)) return g4_errf(c->err, "%s: %.*s must be an object", c->src, (int)strlen(qc.sect) - 1, qc.sect);
    if (j_str(&qc, q, "quant_method", &meth) || j_int(&qc, q, "bits", 0, 64, 0, &m->quant_bits) ||
        j_int(&qc, q, "group_size", 0, 1 << 20, 0, &m->quant_group_size))
        return -1;
    copy_str(m->quant_method, sizeof m->quant_method, meth ? meth : "mlx");
    return 0;
}

int cfg_parse_json(const cJSON *root, const char *src, struct cfg_model *m, char *err)
{
    struct jctx c = {src, "", err}, tcx = {src, "text_config.", err};
    const char *mt = NULL, *dt = NULL;
    memset(m, 0, sizeof *m);
    m->image_token_id = m->boi_token_id = m->eoi_token_id = m->video_token_id = -1;
    m->audio_token_id = m->boa_token_id = m->eoa_token_id = -1;
    if (!cJSON_IsObject(root)) return g4_errf(err, "%s: not a JSON object", src);
    if (j_str(&c, root, "model_type", &mt)) return -1;
    if (!mt) return g4_errf(err, "%s: model_type is missing", src);
    copy_str(m->model_type, sizeof m->model_type, mt);
    const cJSON *arch = field(root, "architectures");
    if (cJSON_IsArray(arch) && cJSON_IsString(arch->child))
        copy_str(m->architecture, sizeof m->architecture, arch->child->valuestring);
    if (j_str(&c, root, "dtype", &dt) || (!dt && j_str(&c, root, "torch_dtype", &dt))) return -1;
    copy_str(m->dtype, sizeof m->dtype, dt);
    if (parse_quant(&c, root, m)) return -1;

    const cJSON *tc = field(root, "text_config"), *vc = field(root, "vision_config"), *ac = field(root, "audio_config");
    int multimodal = 0;
    if (!strcmp(mt, "gemma4_unified_text") || !strcmp(mt, "gemma4_text")) {
        int uni = !strncmp(mt, "gemma4_unified", 14);
        m->arch = uni ? CFG_ARCH_GEMMA4_UNIFIED_TEXT : CFG_ARCH_GEMMA4_TEXT;
        copy_str(m->text_prefix, sizeof m->text_prefix, "model.");
        if (parse_text(&c, root, uni ? &unified_defaults : &gemma4_defaults, 0, &m->text)) return -1;
    } else if (!strcmp(mt, "gemma4_unified") || !strcmp(mt, "gemma4")) {
        int uni = !strcmp(mt, "gemma4_unified");
        multimodal = 1;
        m->arch = uni ? CFG_ARCH_GEMMA4_UNIFIED : CFG_ARCH_GEMMA4;
        copy_str(m->text_prefix, sizeof m->text_prefix, "model.language_model.");
        if (!tc) return g4_errf(err, "%s: text_config is missing", src);
        if (parse_text(&tcx, tc, uni ? &unified_defaults : &gemma4_defaults, 0, &m->text)) return -1;
        if (vc && !cJSON_IsObject(vc)) return g4_errf(err, "%s: vision_config must be an object or null", src);
        if (ac && !cJSON_IsObject(ac)) return g4_errf(err, "%s: audio_config must be an object or null", src);
        if (uni && vc) {
            m->vision.kind = CFG_VISION_EMBEDDER;
            if (parse_vision_embedder(&c, vc, &m->vision.emb)) return -1;
        } else if (vc) {
            m->vision.kind = CFG_VISION_TOWER;
            if (parse_vision_tower(&c, vc, &m->vision.tower)) return -1;
        }
        if (uni && ac) {
            struct jctx acx = {src, "audio_config.", err};
            const char *amt = NULL;
            if (j_str(&acx, ac, "model_type", &amt)) return -1;
            if (amt && strcmp(amt, "gemma4_unified_audio"))
                return g4_errf(err, "%s: audio_config.model_type \"%.40s\" (an audio tower) is not supported; the unified model has a gemma4_unified_audio embedder",
                               src, amt);
            int hs = 640;
            if (j_int(&acx, ac, "hidden_size", 1, 1 << 20, 640, &hs) ||
                j_int(&acx, ac, "audio_embed_dim", 1, 1 << 20, hs, &m->audio_embed_dim))
                return -1;
            m->has_audio = 1;
        } else if (ac) {
            return g4_errf(err, "%s: the audio tower (audio_config, a gemma4_audio conformer as in E2B/E4B) is not supported by g4",
                           src);
        }
        if (j_int(&c, root, "vision_soft_tokens_per_image", 1, 1 << 20, 0, &m->vision_soft_tokens_per_image) ||
            parse_mm_top(&c, root, m))
            return -1;
    } else if (!strcmp(mt, "gemma4_unified_assistant") || !strcmp(mt, "gemma4_assistant")) {
        int uni = !strncmp(mt, "gemma4_unified", 14);
        const char *tmt = NULL;
        multimodal = 1;
        m->arch = uni ? CFG_ARCH_GEMMA4_UNIFIED_ASSISTANT : CFG_ARCH_GEMMA4_ASSISTANT;
        m->is_drafter = 1;
        copy_str(m->text_prefix, sizeof m->text_prefix, "model.");
        if (!tc) return g4_errf(err, "%s: text_config is missing", src);
        if (cJSON_IsObject(tc) && j_str(&tcx, tc, "model_type", &tmt)) return -1;
        const struct text_defaults *d = uni && !(tmt && !strcmp(tmt, "gemma4_text")) ? &unified_defaults
                                                                                     : &gemma4_defaults;
        if (parse_text(&tcx, tc, d, 1, &m->text)) return -1;
        struct cfg_drafter *dr = &m->drafter;
        if (j_int(&c, root, "backbone_hidden_size", 1, 65536, uni ? 3840 : 1536, &dr->backbone_hidden) ||
            j_bool(&c, root, "use_ordered_embeddings", 0, &dr->use_ordered_embeddings) ||
            j_int(&c, root, "num_centroids", 1, 1 << 20, 2048, &dr->num_centroids) ||
            j_int(&c, root, "centroid_intermediate_top_k", 1, 1 << 20, 32, &dr->centroid_top_k))
            return -1;
        if (dr->use_ordered_embeddings &&
            (m->text.vocab % dr->num_centroids || dr->centroid_top_k > dr->num_centroids))
            return g4_errf(err, "%s: ordered embeddings need vocab_size %d to be a multiple of num_centroids %d and centroid_intermediate_top_k %d <= num_centroids",
                           src, m->text.vocab, dr->num_centroids, dr->centroid_top_k);
    } else {
        return g4_errf(err, "%s: model_type \"%.40s\" is not supported (g4 runs gemma4_unified, gemma4, gemma4_text, gemma4_unified_text, gemma4_unified_assistant, gemma4_assistant)",
                       src, mt);
    }
    if (multimodal && check_tie(&c, root, tc, m)) return -1;
    /* stop ids: the top-level eos_token_id (the -it checkpoints set [1, 106]) over text_config's, as
     * GenerationConfig.from_model_config takes them (a null top-level value falls back too) */
    memcpy(m->eos_ids, m->text.eos_ids, sizeof m->eos_ids);
    m->n_eos = m->text.n_eos;
    if (multimodal && field(root, "eos_token_id") &&
        j_ids(&c, root, "eos_token_id", m->text.vocab, NULL, 0, m->eos_ids, &m->n_eos))
        return -1;
    if (!m->dtype[0] && tc) {
        if (j_str(&tcx, tc, "dtype", &dt) || (!dt && j_str(&tcx, tc, "torch_dtype", &dt))) return -1;
        copy_str(m->dtype, sizeof m->dtype, dt);
    }
    return 0;
}

int cfg_load(const char *path, struct cfg_model *m, char *err)
{
    char p[4096];
    struct stat sb;
    size_t len;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (util_path_join(p, sizeof p, path, "config.json")) return g4_errf(err, "%s: path too long", path);
    } else {
        snprintf(p, sizeof p, "%s", path);
    }
    char *text = util_read_file(p, CFG_MAX_JSON_BYTES, &len, err);
    if (!text) return -1;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    int rc;
    if (!root)
        rc = g4_errf(err, "%s: not valid JSON (error near byte %ld)", p, end ? (long)(end - text) : 0L);
    else
        rc = cfg_parse_json(root, p, m, err);
    cJSON_Delete(root);
    free(text);
    return rc;
}

const char *cfg_arch_name(enum cfg_arch a)
{
    switch (a) {
    case CFG_ARCH_GEMMA4_UNIFIED: return "gemma4_unified";
    case CFG_ARCH_GEMMA4: return "gemma4";
    case CFG_ARCH_GEMMA4_UNIFIED_TEXT: return "gemma4_unified_text";
    case CFG_ARCH_GEMMA4_TEXT: return "gemma4_text";
    case CFG_ARCH_GEMMA4_UNIFIED_ASSISTANT: return "gemma4_unified_assistant";
    case CFG_ARCH_GEMMA4_ASSISTANT: return "gemma4_assistant";
    }
    return "?";
}
