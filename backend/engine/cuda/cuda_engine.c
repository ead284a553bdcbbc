/* cuda_engine — the CUDA backend's entry points (engine_backend.h): finds the GPU, plans memory (weights,
 * KV caches for max_streams x max_context, scratch) and refuses a plan that does not fit with the numbers,
 * uploads the weights, and runs steps (cuda_step.c). One engine thread drives it; one CUDA stream. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/cuda_engine.h"
#include "engine/engine_backend.h"
#include "engine/weights.h"
#include "model/model.h"
#include "util/util.h"

#define GiB(x) ((double)(x) / (1 << 30))

void *cuda_alloc(struct cuda_engine *e, size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
    if (e->n_allocs == e->cap_allocs) {
        e->cap_allocs = e->cap_allocs ? 2 * e->cap_allocs : 256;
        e->allocs = g4_realloc(e->allocs, (size_t)e->cap_allocs * sizeof *e->allocs);
    }
    e->allocs[e->n_allocs++] = p;
    return p;
}

uint16_t *cuda_upload_bf16(struct cuda_engine *e, const uint16_t *host, size_t count)
{
    uint16_t *d;
    if (!host) return NULL;
    d = cuda_alloc(e, count * sizeof *d);
    CUDA_CHECK(cudaMemcpy(d, host, count * sizeof *d, cudaMemcpyHostToDevice));
    e->weight_bytes += count * sizeof *d;
    return d;
}

float *cuda_upload_f32(struct cuda_engine *e, float *host, size_t count)
{
    float *d;
    if (!host) return NULL;
    d = cuda_alloc(e, count * sizeof *d);
    CUDA_CHECK(cudaMemcpy(d, host, count * sizeof *d, cudaMemcpyHostToDevice));
    e->weight_bytes += count * sizeof *d;
    free(host);
    return d;
}

static int load_layer(struct cuda_engine *e, int i, char *err)
{
    const struct cfg_model *c = &e->model->cfg;
    const struct st_set *s = e->model->weights;
    struct cuda_layer *l = &e->layers[i];
    const struct cfg_layer *cl = &c->text.layer[i];
    const uint16_t *m;
    float *v;
    char name[256];
    int H = e->H, D = cl->head_dim;
#define NAME(suffix) (snprintf(name, sizeof name, "%slayers.%d.%s", c->text_prefix, i, suffix), name)
#define MATRIX(dst, suffix, rows, cols)                                                                          \
    do {                                                                                                         \
        if (!(m = weights_matrix(s, NAME(suffix), rows, cols, err))) return -1;                                  \
        dst = cuda_upload_bf16(e, m, (size_t)(rows) * (cols));                                                        \
    } while (0)
#define VECTOR(dst, suffix, n)                                                                                   \
    do {                                                                                                         \
        if (!(v = weights_vector(s, NAME(suffix), n, err))) return -1;                                           \
        dst = cuda_upload_f32(e, v, (size_t)(n));                                                                     \
    } while (0)
    l->c = cl;
    MATRIX(l->wq, "self_attn.q_proj.weight", cl->q_dim, H);
    MATRIX(l->wk, "self_attn.k_proj.weight", cl->kv_dim, H);
    if (!cl->k_eq_v) MATRIX(l->wv, "self_attn.v_proj.weight", cl->kv_dim, H);
    MATRIX(l->wo, "self_attn.o_proj.weight", H, cl->q_dim);
    MATRIX(l->w_gate, "mlp.gate_proj.weight", cl->intermediate, H);
    MATRIX(l->w_up, "mlp.up_proj.weight", cl->intermediate, H);
    MATRIX(l->w_down, "mlp.down_proj.weight", H, cl->intermediate);
    VECTOR(l->q_norm, "self_attn.q_norm.weight", D);
    VECTOR(l->k_norm, "self_attn.k_norm.weight", D);
    VECTOR(l->in_norm, "input_layernorm.weight", H);
    VECTOR(l->post_attn_norm, "post_attention_layernorm.weight", H);
    VECTOR(l->pre_ff_norm, "pre_feedforward_layernorm.weight", H);
    VECTOR(l->post_ff_norm, "post_feedforward_layernorm.weight", H);
    if (!(v = weights_vector(s, NAME("layer_scalar"), 1, err))) return -1;
#undef NAME
#undef MATRIX
#undef VECTOR
    l->scalar = v[0];
    free(v);
    v = g4_malloc((size_t)(D / 2) * sizeof *v);
    cfg_rope_inv_freq(cl, v);
    l->inv_freq = cuda_upload_f32(e, v, (size_t)(D / 2));
    l->cap = engine_cache_rows(cl, e->opts.max_context);
    return 0;
}

/* Bytes of scratch for max_rows rows (see struct cuda_engine). */
static size_t scratch_bytes(const struct cuda_engine *e, int rows)
{
    size_t per_row = 0;
    per_row += 2 * (size_t)e->H * 4 + (size_t)e->H * 2;              /* x, t, xn */
    per_row += (size_t)e->max_qd * 4 + (size_t)e->max_qd * 2;       /* q, o */
    per_row += 2 * (size_t)e->max_kvd * 4 + 2 * (size_t)e->max_kvd * 2; /* k_raw, v_raw, k_new, v_new */
    per_row += 2 * (size_t)e->max_i * 4 + (size_t)e->max_i * 2;      /* gate, up, h */
    per_row += 2 * 4 + sizeof(struct kern_row);                       /* tokens, image_index, meta */
    return per_row * rows + (size_t)CUDA_LOGIT_ROWS * e->V * 4 + (size_t)rows * e->H * 4 /* image rows */;
}

static void cuda_destroy(void *impl)
{
    struct cuda_engine *e = impl;
    if (!e) return;
    for (int i = 0; i < e->n_allocs; i++) cudaFree(e->allocs[i]);
    if (e->stream) cudaStreamDestroy(e->stream);
    free(e->allocs);
    free(e->layers);
    free(e->h_tokens);
    free(e->h_image_index);
    free(e->h_meta);
    free(e);
}

static int plan_fits(struct cuda_engine *e, char *err)
{
    size_t free_b = 0, total_b = 0, need;
    e->kv_bytes = 0;
    for (int i = 0; i < e->L; i++)
        e->kv_bytes += 2ull * e->opts.max_streams * e->layers[i].cap * e->layers[i].c->kv_dim * sizeof(uint16_t);
    e->scratch_bytes = scratch_bytes(e, e->max_rows);
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    need = e->kv_bytes + e->scratch_bytes;
    if (need + (64u << 20) > free_b)
        return g4_errf(err, "cuda engine: KV caches %.2f GiB (%d streams x %d positions) + scratch %.2f GiB do not fit "
                       "in the %.2f GiB left after %.2f GiB of weights (GPU total %.2f GiB)",
                       GiB(e->kv_bytes), e->opts.max_streams, e->opts.max_context, GiB(e->scratch_bytes), GiB(free_b),
                       GiB(e->weight_bytes), GiB(total_b));
    return 0;
}

static void alloc_scratch(struct cuda_engine *e)
{
    size_t R = (size_t)e->max_rows;
    e->x = cuda_alloc(e, R * e->H * 4);
    e->t = cuda_alloc(e, R * e->H * 4);
    e->xn = cuda_alloc(e, R * e->H * 2);
    e->q = cuda_alloc(e, R * e->max_qd * 4);
    e->o = cuda_alloc(e, R * e->max_qd * 2);
    e->k_raw = cuda_alloc(e, R * e->max_kvd * 4);
    e->v_raw = cuda_alloc(e, R * e->max_kvd * 4);
    e->k_new = cuda_alloc(e, R * e->max_kvd * 2);
    e->v_new = cuda_alloc(e, R * e->max_kvd * 2);
    e->gate = cuda_alloc(e, R * e->max_i * 4);
    e->up = cuda_alloc(e, R * e->max_i * 4);
    e->h = cuda_alloc(e, R * e->max_i * 2);
    e->tokens = cuda_alloc(e, R * 4);
    e->image_index = cuda_alloc(e, R * 4);
    e->meta = cuda_alloc(e, R * sizeof *e->meta);
    e->logits = cuda_alloc(e, (size_t)CUDA_LOGIT_ROWS * e->V * 4);
    e->image_rows_cap = e->max_rows;
    e->image_rows = cuda_alloc(e, R * e->H * 4);
    e->h_tokens = g4_malloc(R * sizeof *e->h_tokens);
    e->h_image_index = g4_malloc(R * sizeof *e->h_image_index);
    e->h_meta = g4_malloc(R * sizeof *e->h_meta);
    for (int i = 0; i < e->L; i++) {
        size_t n = (size_t)e->opts.max_streams * e->layers[i].cap * e->layers[i].c->kv_dim;
        e->layers[i].cache_k = cuda_alloc(e, n * 2);
        e->layers[i].cache_v = cuda_alloc(e, n * 2);
    }
}

static void *cuda_create(const struct g4_model *m, const struct engine_opts *opts, char *err)
{
    const struct cfg_model *c = &m->cfg;
    struct cuda_engine *e;
    int n_dev = 0;
    cudaError_t rc = cudaGetDeviceCount(&n_dev);
    const uint16_t *table;
    char name[256];
    if (rc != cudaSuccess || n_dev == 0) {
        g4_errf(err, "no CUDA device (%s); use --device cpu",
                rc != cudaSuccess ? cudaGetErrorString(rc) : "no GPU found");
        return NULL;
    }
    if (c->is_drafter || !c->text.tie_embeddings) {
        g4_errf(err, "%s: the CUDA engine runs tied-head Gemma 4 decoders only", m->dir);
        return NULL;
    }
    e = g4_calloc(1, sizeof *e);
    e->model = m;
    e->opts = *opts;
    e->H = c->text.hidden;
    e->V = c->text.vocab;
    e->L = c->text.n_layers;
    e->rms_eps = (float)c->text.rms_eps;
    e->embed_scale = bf16_to_f32(f32_to_bf16(sqrtf((float)e->H)));
    e->has_softcap = c->text.has_softcap;
    e->softcap = (float)c->text.final_softcap;
    e->max_rows = ENGINE_MAX_CHUNK + opts->max_streams * ENGINE_MAX_WINDOW;
    if (e->max_rows > 4096) e->max_rows = 4096;
    CUDA_CHECK(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
    snprintf(name, sizeof name, "%sembed_tokens.weight", c->text_prefix);
    if (!(table = weights_matrix(m->weights, name, e->V, e->H, err))) goto fail;
    e->embed = cuda_upload_bf16(e, table, (size_t)e->V * e->H);
    snprintf(name, sizeof name, "%snorm.weight", c->text_prefix);
    if (!(e->final_norm = cuda_upload_f32(e, weights_vector(m->weights, name, e->H, err), (size_t)e->H))) goto fail;
    e->layers = g4_calloc((size_t)e->L, sizeof *e->layers);
    for (int i = 0; i < e->L; i++) {
        if (load_layer(e, i, err)) goto fail;
        if (e->layers[i].c->q_dim > e->max_qd) e->max_qd = e->layers[i].c->q_dim;
        if (e->layers[i].c->kv_dim > e->max_kvd) e->max_kvd = e->layers[i].c->kv_dim;
        if (e->layers[i].c->intermediate > e->max_i) e->max_i = e->layers[i].c->intermediate;
    }
    e->has_vision = c->vision.kind == CFG_VISION_EMBEDDER;
    if (e->has_vision && cuda_load_vision(e, err)) goto fail;
    if (plan_fits(e, err)) goto fail;
    alloc_scratch(e);
    return e;
fail:
    cuda_destroy(e);
    return NULL;
}

static void cuda_step(void *impl, const struct engine_item *items, int n_items, const int *lengths)
{
    struct cuda_engine *e = impl;
    int first = 0;
    /* group items into device passes of at most max_rows rows; an item is never split */
    while (first < n_items) {
        int last = first, rows = items[first].n;
        while (last + 1 < n_items && rows + items[last + 1].n <= e->max_rows) rows += items[++last].n;
        cuda_run_items(e, items + first, last - first + 1, lengths + first);
        first = last + 1;
    }
}

static int cuda_embed_image(void *impl, const uint8_t *patches, const int32_t *positions, int n, float *out, char *err)
{
    return cuda_vision_embed(impl, patches, positions, n, out, err);
}

static void cuda_memory(void *impl, struct engine_memory *out)
{
    const struct cuda_engine *e = impl;
    out->weights = e->weight_bytes;
    out->kv_per_stream = e->kv_bytes / (size_t)e->opts.max_streams;
    out->scratch = e->scratch_bytes;
}

/* Median of 5 device-to-device copies of 2 GiB (after one warm-up), bytes read + written per second. */
static double cuda_copy_rate(void *impl)
{
    size_t n = (size_t)2 << 30;
    void *a = NULL, *b = NULL;
    double t[5];
    (void)impl;
    if (cudaMalloc(&a, n) != cudaSuccess) return 0;
    if (cudaMalloc(&b, n) != cudaSuccess) {
        cudaFree(a);
        return 0;
    }
    CUDA_CHECK(cudaMemset(a, 1, n));
    CUDA_CHECK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 5; i++) {
        double t0 = util_now();
        CUDA_CHECK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaDeviceSynchronize());
        t[i] = util_now() - t0;
    }
    cudaFree(a);
    cudaFree(b);
    return 2.0 * n / util_median(t, 5);
}

const struct engine_backend engine_cuda_backend = {
    .name = "cuda",
    .create = cuda_create,
    .destroy = cuda_destroy,
    .step = cuda_step,
    .embed_image = cuda_embed_image,
    .memory = cuda_memory,
    .copy_rate = cuda_copy_rate,
};
