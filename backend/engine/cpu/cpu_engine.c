/* cpu_engine — the CPU backend's entry points (engine_backend.h): create (weights, KV, scratch), streams,
 * steps. Items of a step run one after another; each is computed alone, so a row's result never depends on
 * its neighbours. KV memory: per stream and layer, (C, K*D) floats for keys and for values, C the ring of a
 * sliding layer (window - 1 + ENGINE_MAX_WINDOW) or max_context for a full layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_engine.h"
#include "engine/engine_backend.h"
#include "model/model.h"
#include "util/util.h"

/* Refuse KV plans past this many bytes: the CPU engine serves small models. */
#define CPU_MAX_KV_BYTES (16ull << 30)

static void cpu_destroy(void *impl)
{
    struct cpu_engine *e = impl;
    if (!e) return;
    for (int s = 0; e->streams && s < e->opts.max_streams; s++) {
        for (int l = 0; l < e->L; l++) {
            if (e->streams[s].k) free(e->streams[s].k[l]);
            if (e->streams[s].v) free(e->streams[s].v[l]);
        }
        free(e->streams[s].k);
        free(e->streams[s].v);
    }
    free(e->streams);
    cpu_weights_free(e);
    free(e->x);
    free(e->a);
    free(e->q);
    free(e->k);
    free(e->v);
    free(e->o);
    free(e->t1);
    free(e->gate);
    free(e->up);
    if (e->pool) pool_destroy(e->pool);
    free(e);
}

static void *cpu_create(const struct g4_model *m, const struct engine_opts *opts, char *err)
{
    struct cpu_engine *e = g4_calloc(1, sizeof *e);
    unsigned long long kv_bytes = 0;
    size_t T = ENGINE_MAX_CHUNK;
    e->model = m;
    e->opts = *opts;
    e->bf16_act = opts->precision == ENGINE_CPU_BF16_ACTIVATIONS;
    if (cpu_weights_load(e, err)) goto fail;
    for (int l = 0; l < e->L; l++)
        kv_bytes += 2ull * e->layers[l].cache_rows * e->layers[l].c->kv_dim * sizeof(float);
    kv_bytes *= (unsigned long long)opts->max_streams;
    if (kv_bytes > CPU_MAX_KV_BYTES) {
        g4_errf(err, "cpu engine: KV caches for %d streams x %d positions need %llu MiB, over the limit of %llu MiB",
                opts->max_streams, opts->max_context, kv_bytes >> 20, CPU_MAX_KV_BYTES >> 20);
        goto fail;
    }
    e->pool = pool_create(opts->n_threads);
    e->streams = g4_calloc((size_t)opts->max_streams, sizeof *e->streams);
    for (int s = 0; s < opts->max_streams; s++) {
        e->streams[s].k = g4_calloc((size_t)e->L, sizeof(float *));
        e->streams[s].v = g4_calloc((size_t)e->L, sizeof(float *));
        for (int l = 0; l < e->L; l++) {
            size_t n = (size_t)e->layers[l].cache_rows * e->layers[l].c->kv_dim;
            e->streams[s].k[l] = g4_calloc(n, sizeof(float));
            e->streams[s].v[l] = g4_calloc(n, sizeof(float));
        }
    }
    e->x = g4_malloc(T * e->H * sizeof(float));
    e->a = g4_malloc(T * e->H * sizeof(float));
    e->t1 = g4_malloc(T * e->H * sizeof(float));
    e->q = g4_malloc(T * e->max_qd * sizeof(float));
    e->o = g4_malloc(T * e->max_qd * sizeof(float));
    e->k = g4_malloc(T * e->max_kvd * sizeof(float));
    e->v = g4_malloc(T * e->max_kvd * sizeof(float));
    e->gate = g4_malloc(T * e->max_i * sizeof(float));
    e->up = g4_malloc(T * e->max_i * sizeof(float));
    return e;
fail:
    cpu_destroy(e);
    return NULL;
}

static void cpu_step(void *impl, const struct engine_item *items, int n_items, const int *lengths)
{
    struct cpu_engine *e = impl;
    for (int i = 0; i < n_items; i++) cpu_forward_item(e, &items[i], lengths[i], e->opts.image_mask);
}

static int cpu_embed_image(void *impl, const uint8_t *patches, const int32_t *positions, int n, float *out, char *err)
{
    return cpu_vision_embed(impl, patches, positions, n, out, err);
}

static void cpu_memory(void *impl, struct engine_memory *out)
{
    const struct cpu_engine *e = impl;
    for (int l = 0; l < e->L; l++)
        out->kv_per_stream += 2ull * e->layers[l].cache_rows * e->layers[l].c->kv_dim * sizeof(float);
    out->weights = (size_t)st_total_bytes(e->model->weights); /* mapped, not copied */
    out->scratch = (size_t)ENGINE_MAX_CHUNK * (3 * e->H + 2 * e->max_qd + 2 * e->max_kvd + 2 * e->max_i) * sizeof(float);
}

static double cpu_copy_rate(void *impl)
{
    size_t n = (size_t)256 << 20;
    char *a = g4_malloc(n), *b = g4_malloc(n);
    double best = 0;
    (void)impl;
    memset(a, 1, n);
    memset(b, 2, n);
    for (int i = 0; i < 3; i++) {
        double t0 = util_now(), t;
        memcpy(b, a, n);
        t = util_now() - t0;
        if (2.0 * n / t > best) best = 2.0 * n / t;
    }
    free(a);
    free(b);
    return best;
}

const struct engine_backend engine_cpu_backend = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .step = cpu_step,
    .embed_image = cpu_embed_image,
    .memory = cpu_memory,
    .copy_rate = cpu_copy_rate,
};
