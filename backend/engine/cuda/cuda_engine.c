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

_Static_assert(KERN_ATTN_KEY_BLOCK == ENGINE_ATTN_KEY_BLOCK && KERN_ATTN_PARTIALS == ENGINE_ATTN_PARTIALS,
               "the CPU's bf16 mode follows the CUDA attention's key blocks and partials");

void *cuda_alloc(struct cuda_engine *e, size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
    if (e->prof_skip) CUDA_CHECK(cudaMemset(p, 0, bytes)); /* kernels left out (cuda_profile.c): values stay finite */
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

uint16_t *cuda_upload_bf16_stack(struct cuda_engine *e, const uint16_t *const *parts, const int *rows, int n, int cols)
{
    size_t total = 0, at = 0;
    uint16_t *d;
    for (int i = 0; i < n; i++) total += (size_t)rows[i] * cols;
    d = cuda_alloc(e, total * sizeof *d);
    for (int i = 0; i < n; i++) {
        CUDA_CHECK(cudaMemcpy(d + at, parts[i], (size_t)rows[i] * cols * sizeof *d, cudaMemcpyHostToDevice));
        at += (size_t)rows[i] * cols;
    }
    e->weight_bytes += total * sizeof *d;
    return d;
}

uint16_t *cuda_upload_bf16_pairs(struct cuda_engine *e, const uint16_t *gate, const uint16_t *up, int rows, int cols)
{
    size_t pair = 2 * (size_t)cols * sizeof(uint16_t); /* two rows, bytes */
    uint16_t *d = cuda_alloc(e, 2 * (size_t)rows * cols * sizeof *d);
    /* rows/2 pairs of each: gate pair j to rows 4j, 4j+1, up pair j to rows 4j+2, 4j+3 */
    CUDA_CHECK(cudaMemcpy2D(d, 2 * pair, gate, pair, pair, (size_t)rows / 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy2D(d + 2 * (size_t)cols, 2 * pair, up, pair, pair, (size_t)rows / 2, cudaMemcpyHostToDevice));
    e->weight_bytes += 2 * (size_t)rows * cols * sizeof *d;
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

/* The attention tile list layer l uses: one per distinct (head dim, query heads per kv head, kv heads). */
static int tile_set_for(struct cuda_engine *e, const struct cfg_layer *cl, char *err)
{
    int D = cl->head_dim, G = cl->n_heads / cl->n_kv_heads;
    if (kern_attention_tile_rows(D, G, KERN_ATTN_WIDE) == 0 || kern_attention_tile_rows(D, G, KERN_ATTN_NARROW) == 0 ||
        kern_attention_tile_rows(D, G, KERN_ATTN_PROMPT) == 0)
        return g4_errf(err, "cuda engine: %d query heads per kv head at head dim %d are not supported", G, D);
    for (int i = 0; i < e->n_tile_sets; i++)
        if (e->tile_d[i] == D && e->tile_group[i] == G && e->tile_kv[i] == cl->n_kv_heads) return i;
    G4_CHECK(e->n_tile_sets < CUDA_TILE_SETS, "more than %d attention tile shapes", CUDA_TILE_SETS);
    e->tile_d[e->n_tile_sets] = D;
    e->tile_group[e->n_tile_sets] = G;
    e->tile_kv[e->n_tile_sets] = cl->n_kv_heads;
    return e->n_tile_sets++;
}

static int load_layer(struct cuda_engine *e, int i, char *err)
{
    const struct cfg_model *c = &e->model->cfg;
    const struct st_set *s = e->model->weights;
    struct cuda_layer *l = &e->layers[i];
    const struct cfg_layer *cl = &c->text.layer[i];
    const uint16_t *m, *qkv[3], *gate, *up;
    int qkv_rows[3] = {cl->q_dim, cl->kv_dim, cl->kv_dim};
    float *v;
    char name[256];
    int H = e->H, D = cl->head_dim;
#define NAME(suffix) (snprintf(name, sizeof name, "%slayers.%d.%s", c->text_prefix, i, suffix), name)
#define HOST(dst, suffix, rows, cols)                                                                            \
    do {                                                                                                         \
        if (!(dst = weights_matrix(s, NAME(suffix), rows, cols, err))) return -1;                                \
    } while (0)
#define VECTOR(dst, suffix, n)                                                                                   \
    do {                                                                                                         \
        if (!(v = weights_vector(s, NAME(suffix), n, err))) return -1;                                           \
        dst = cuda_upload_f32(e, v, (size_t)(n));                                                                \
    } while (0)
    l->c = cl;
    HOST(qkv[0], "self_attn.q_proj.weight", cl->q_dim, H);
    HOST(qkv[1], "self_attn.k_proj.weight", cl->kv_dim, H);
    if (!cl->k_eq_v) HOST(qkv[2], "self_attn.v_proj.weight", cl->kv_dim, H);
    l->qkv_n = cl->q_dim + (cl->k_eq_v ? 1 : 2) * cl->kv_dim;
    l->w_qkv = cuda_upload_bf16_stack(e, qkv, qkv_rows, cl->k_eq_v ? 2 : 3, H);
    HOST(m, "self_attn.o_proj.weight", H, cl->q_dim);
    l->wo = cuda_upload_bf16(e, m, (size_t)H * cl->q_dim);
    HOST(gate, "mlp.gate_proj.weight", cl->intermediate, H);
    HOST(up, "mlp.up_proj.weight", cl->intermediate, H);
    if (cl->intermediate % 2)
        return g4_errf(err, "cuda engine: layer %d: intermediate size %d is odd (the gate|up product pairs rows)", i,
                       cl->intermediate);
    l->w_gu = cuda_upload_bf16_pairs(e, gate, up, cl->intermediate, H);
    HOST(m, "mlp.down_proj.weight", H, cl->intermediate);
    l->w_down = cuda_upload_bf16(e, m, (size_t)H * cl->intermediate);
    VECTOR(l->q_norm, "self_attn.q_norm.weight", D);
    VECTOR(l->k_norm, "self_attn.k_norm.weight", D);
    VECTOR(l->in_norm, "input_layernorm.weight", H);
    VECTOR(l->post_attn_norm, "post_attention_layernorm.weight", H);
    VECTOR(l->pre_ff_norm, "pre_feedforward_layernorm.weight", H);
    VECTOR(l->post_ff_norm, "post_feedforward_layernorm.weight", H);
    if (!(v = weights_vector(s, NAME("layer_scalar"), 1, err))) return -1;
#undef NAME
#undef HOST
#undef VECTOR
    l->scalar = v[0];
    free(v);
    v = g4_malloc((size_t)(D / 2) * sizeof *v);
    cfg_rope_inv_freq(cl, v);
    l->inv_freq = cuda_upload_f32(e, v, (size_t)(D / 2));
    l->cap = engine_cache_rows(cl, e->opts.max_context);
    l->tile_set = tile_set_for(e, cl, err);
    return l->tile_set < 0 ? -1 : 0;
}

/* The products' scratch (kernels.h): the largest of the model's products cut into segments, at a pass's
 * max_rows rows (the image embedder's at its largest image). */
static void gemm_ws_size(const struct cuda_engine *e, long *floats, int *counters)
{
    const struct cfg_vision_embedder *v = &e->model->cfg.vision.emb;
    int M = e->max_rows;
    *floats = 0;
    *counters = 1;
#define TAKE(m, n, k)                                                                                              \
    do {                                                                                                           \
        if (kern_gemm_ws_floats(m, n, k) > *floats) *floats = kern_gemm_ws_floats(m, n, k);                        \
        if (kern_gemm_ws_counters(m, n) > *counters) *counters = kern_gemm_ws_counters(m, n);                      \
    } while (0)
    for (int i = 0; i < e->L; i++) {
        const struct cuda_layer *l = &e->layers[i];
        TAKE(M, l->qkv_n, e->H);
        TAKE(M, e->H, l->c->q_dim);
        TAKE(M, 2 * l->c->intermediate, e->H);
        TAKE(M, e->H, l->c->intermediate);
    }
    TAKE(CUDA_LOGIT_ROWS, e->V, e->H);
    if (e->has_vision) {
        TAKE(CUDA_MAX_IMAGE_ROWS, v->mm_embed_dim, v->patch_dim);
        TAKE(CUDA_MAX_IMAGE_ROWS, e->H, v->mm_embed_dim);
    }
#undef TAKE
}

/* Bytes of scratch for max_rows rows (see struct cuda_engine). */
static size_t scratch_bytes(const struct cuda_engine *e, int rows)
{
    size_t per_row = 0;
    long ws_floats;
    int ws_counters;
    per_row += 2 * (size_t)e->H * 4 + (size_t)e->H * 2;                 /* x, t, xn */
    per_row += (size_t)e->max_qkv * 4;                                  /* qkv */
    per_row += 2 * (size_t)e->max_qd * 2;                               /* q16, o */
    per_row += 2 * (size_t)e->max_kvd * 2;                              /* k_new, v_new */
    per_row += (size_t)e->max_i * 2;                                    /* h */
    per_row += (size_t)KERN_ATTN_PARTIALS * (e->max_qd + 2 * e->max_heads) * 4; /* part_acc, part_ml */
    per_row += 3 * 4 + sizeof(struct kern_row) + CUDA_TILE_SETS * sizeof(struct kern_tile); /* ids, meta, tiles */
    per_row += sizeof(struct kern_select_row) + (size_t)KERN_TOPK_MAX * 8 + 4;  /* draws: selection, candidates */
    gemm_ws_size(e, &ws_floats, &ws_counters);
    return per_row * rows + (size_t)CUDA_LOGIT_ROWS * e->V * 4 + (size_t)rows * e->H * 4 /* image rows */ +
           (size_t)ws_floats * 4 + (size_t)(ws_counters + KERN_TAIL_COUNTERS) * 4 + cuda_topk_ws_keys(e->V) * 8 +
           (e->geglu_fused_prompt ? 0 : (size_t)CUDA_GEGLU_ROWS * 2 * e->max_i * 4) /* gu */;
}

static void cuda_destroy(void *impl)
{
    struct cuda_engine *e = impl;
    if (!e) return;
    cuda_prof_report_free(e);
    for (int i = 0; i < e->n_graphs; i++)
        if (e->graphs[i].exec) cudaGraphExecDestroy(e->graphs[i].exec);
    for (int i = 0; i < e->n_allocs; i++) cudaFree(e->allocs[i]);
    if (e->stream) cudaStreamDestroy(e->stream);
    free(e->allocs);
    free(e->layers);
    cuda_sample_free(e);
    cudaFreeHost(e->h_tokens);
    cudaFreeHost(e->h_image_index);
    cudaFreeHost(e->h_logit_rows);
    cudaFreeHost(e->h_meta);
    cudaFreeHost(e->h_tiles);
    cudaFreeHost(e->h_n_tiles);
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

void *cuda_alloc_pinned(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 16));
    return p;
}

static void alloc_scratch(struct cuda_engine *e)
{
    size_t R = (size_t)e->max_rows;
    long ws_floats;
    int ws_counters;
    e->x = cuda_alloc(e, R * e->H * 4);
    e->t = cuda_alloc(e, R * e->H * 4);
    e->xn = cuda_alloc(e, R * e->H * 2);
    e->qkv = cuda_alloc(e, R * e->max_qkv * 4);
    e->q16 = cuda_alloc(e, R * e->max_qd * 2);
    e->o = cuda_alloc(e, R * e->max_qd * 2);
    e->k_new = cuda_alloc(e, R * e->max_kvd * 2);
    e->v_new = cuda_alloc(e, R * e->max_kvd * 2);
    e->h = cuda_alloc(e, R * e->max_i * 2);
    if (!e->geglu_fused_prompt) e->gu = cuda_alloc(e, (size_t)CUDA_GEGLU_ROWS * 2 * e->max_i * 4);
    e->part_acc = cuda_alloc(e, R * KERN_ATTN_PARTIALS * e->max_qd * 4);
    e->part_ml = cuda_alloc(e, R * KERN_ATTN_PARTIALS * 2 * e->max_heads * 4);
    e->tokens = cuda_alloc(e, R * 4);
    e->image_index = cuda_alloc(e, R * 4);
    e->logit_rows = cuda_alloc(e, R * 4);
    e->meta = cuda_alloc(e, R * sizeof *e->meta);
    e->tiles = cuda_alloc(e, CUDA_TILE_SETS * R * sizeof *e->tiles);
    e->n_tiles = cuda_alloc(e, CUDA_TILE_SETS * sizeof *e->n_tiles);
    e->logits = cuda_alloc(e, (size_t)CUDA_LOGIT_ROWS * e->V * 4);
    e->image_rows_cap = e->max_rows;
    e->image_rows = cuda_alloc(e, R * e->H * 4);
    gemm_ws_size(e, &ws_floats, &ws_counters);
    e->gemm_ws.partial = cuda_alloc(e, (size_t)ws_floats * 4);
    e->gemm_ws.counters = cuda_alloc(e, (size_t)ws_counters * 4);
    CUDA_CHECK(cudaMemset(e->gemm_ws.counters, 0, (size_t)ws_counters * 4));
    e->tail_counters = cuda_alloc(e, KERN_TAIL_COUNTERS * 4);
    CUDA_CHECK(cudaMemset(e->tail_counters, 0, KERN_TAIL_COUNTERS * 4));
    e->h_tokens = cuda_alloc_pinned(R * sizeof *e->h_tokens);
    e->h_image_index = cuda_alloc_pinned(R * sizeof *e->h_image_index);
    e->h_logit_rows = cuda_alloc_pinned(R * sizeof *e->h_logit_rows);
    e->h_meta = cuda_alloc_pinned(R * sizeof *e->h_meta);
    e->h_tiles = cuda_alloc_pinned(CUDA_TILE_SETS * R * sizeof *e->h_tiles);
    e->h_n_tiles = cuda_alloc_pinned(CUDA_TILE_SETS * sizeof *e->h_n_tiles);
    cuda_sample_alloc(e);
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
    const char *geglu;
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
    e->use_graphs = !getenv("G4_CUDA_GRAPHS") || strcmp(getenv("G4_CUDA_GRAPHS"), "0") != 0;
    e->max_rows = ENGINE_MAX_CHUNK + opts->max_streams * ENGINE_MAX_WINDOW;
    if (e->max_rows > 4096) e->max_rows = 4096;
    CUDA_CHECK(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
    cuda_prof_create(e);
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
        if (e->layers[i].qkv_n > e->max_qkv) e->max_qkv = e->layers[i].qkv_n;
        if (e->layers[i].c->n_heads > e->max_heads) e->max_heads = e->layers[i].c->n_heads;
    }
    e->has_vision = c->vision.kind == CFG_VISION_EMBEDDER;
    if (e->has_vision && cuda_load_vision(e, err)) goto fail;
    geglu = getenv("G4_CUDA_GEGLU_FUSED");
    e->geglu_fused_prompt = !(geglu && !strcmp(geglu, "0")); /* the plan holds the fp32 gate|up buffer or not */
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

double cuda_device_copy_rate(void)
{
    size_t n = (size_t)2 << 30;
    void *a = NULL, *b = NULL;
    double t[5];
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

static double cuda_copy_rate(void *impl)
{
    (void)impl;
    return cuda_device_copy_rate();
}

const struct engine_backend engine_cuda_backend = {
    .name = "cuda",
    .draws = 1,
    .create = cuda_create,
    .destroy = cuda_destroy,
    .step = cuda_step,
    .embed_image = cuda_embed_image,
    .memory = cuda_memory,
    .copy_rate = cuda_copy_rate,
};
