/* cuda_step — one device pass of a step: the rows of several items stacked into one activation matrix, so
 * every projection streams its weights once for all of them; attention, norms and RoPE work per row from the
 * row table (struct kern_row) and the attention tile lists. The order of operations per row is fixed
 * (cuda_engine.h's precision notes), so a row's logits do not depend on the other rows of the pass.
 *
 * Per layer: the input norm (fused into the previous layer's last residual update), one q|k|v product,
 * q/k/v norms and RoPE, attention (partials, then their merge), the cache update, the output product, the
 * residual update fused with the MLP's input norm, one gate|up product, GeGLU, the down product, and the
 * residual update fused with the next layer's input norm. In a decode pass of few rows the norms and RoPE
 * and the residual updates run in the tails of the products before them (kernels.h, "product tails"). The logits rows of every item go through the final
 * norm and the tied head together, CUDA_LOGIT_ROWS at a time, and their tokens are drawn (cuda_sample.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/cuda_engine.h"
#include "model/model.h"
#include "util/util.h"

/* Fills the host row table, the attention tiles, the logits row list and the draw plan (pinned staging),
 * and sends the items' image rows. Returns the row count; *n_logits gets the number of logits rows. */
static int stage_rows(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths,
                      int *n_logits)
{
    int R = 0, img = 0, L = 0;
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
            if ((it->logits || it->sample) && j >= it->logits_from) e->h_logit_rows[L++] = R + j;
        }
        R += it->n;
    }
    G4_CHECK(R <= e->max_rows && img <= e->image_rows_cap, "pass of %d rows over %d", R, e->max_rows);
    /* narrow attention blocks (two per SM) pay where a pass has several decode rows; one row's few CTAs run
     * better wide; passes past a graph's rows are prompt chunks (the warpgroup kernel). A function of R: a
     * graph of R rows replays the same tiles. */
    e->attn_mode = R > CUDA_GRAPH_MAX_ROWS ? KERN_ATTN_PROMPT : R >= 4 ? KERN_ATTN_NARROW : KERN_ATTN_WIDE;
    for (int t = 0; t < e->n_tile_sets; t++) {
        e->tile_rows[t] = kern_attention_tile_rows(e->tile_d[t], e->tile_group[t], e->attn_mode);
        struct kern_tile *tiles = e->h_tiles + (size_t)t * e->max_rows;
        int n = 0, base = 0;
        for (int i = 0; i < n_items; i++) {
            for (int r = 0; r < items[i].n; r += e->tile_rows[t]) {
                tiles[n].row0 = base + r;
                tiles[n].nrows = items[i].n - r < e->tile_rows[t] ? items[i].n - r : e->tile_rows[t];
                n++;
            }
            base += items[i].n;
        }
        e->h_n_tiles[t] = n;
    }
    *n_logits = L;
    cuda_sample_plan(e, items, n_items, L);
    return R;
}

/* The staged tables to the device (R rows, L logits rows). */
static void upload_rows(struct cuda_engine *e, int R, int L)
{
    CUDA_CHECK(cudaMemcpyAsync(e->tokens, e->h_tokens, (size_t)R * 4, cudaMemcpyHostToDevice, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->image_index, e->h_image_index, (size_t)R * 4, cudaMemcpyHostToDevice, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->meta, e->h_meta, (size_t)R * sizeof *e->meta, cudaMemcpyHostToDevice, e->stream));
    if (L) CUDA_CHECK(cudaMemcpyAsync(e->logit_rows, e->h_logit_rows, (size_t)L * 4, cudaMemcpyHostToDevice, e->stream));
    for (int t = 0; t < e->n_tile_sets; t++)
        CUDA_CHECK(cudaMemcpyAsync(e->tiles + (size_t)t * e->max_rows, e->h_tiles + (size_t)t * e->max_rows,
                                   (size_t)R * sizeof *e->tiles, cudaMemcpyHostToDevice, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->n_tiles, e->h_n_tiles, (size_t)e->n_tile_sets * sizeof *e->n_tiles,
                               cudaMemcpyHostToDevice, e->stream));
    cuda_sample_upload(e, L);
}

/* h = GeGLU(gate, up) of the pass's R normed rows, in the product's epilogue. With G4_CUDA_GEGLU_FUSED=0,
 * prompt passes write the fp32 product, CUDA_GEGLU_ROWS rows at a time, and run kern_geglu over it, which on
 * the H200 was 3.5 % faster at 512 prompt tokens than the version-7 epilogue (one 2-byte element a lane); the
 * epilogue that stages h in shared memory and writes whole 16-byte pieces (gemm_wgmma.cu, gemm_tma.cu) and the
 * tensor-copy products made the fused form the default (H100, docs/perf.md, version 11). Both apply geglu1 to
 * the same fp32 values: the same bits (test_cuda_engine, chunks of 512 = chunks of 3). */
static void gate_up(struct cuda_engine *e, const struct cuda_layer *l, int R)
{
    int H = e->H, I = l->c->intermediate;
    if (R <= 64 || e->geglu_fused_prompt) {
        kern_gemm(e->xn, l->w_gu, NULL, NULL, e->h, R, 2 * I, H, &e->gemm_ws, e->stream);
        cuda_prof_mark(e, PROF_GU);
        return;
    }
    for (int r0 = 0; r0 < R; r0 += CUDA_GEGLU_ROWS) {
        int n = R - r0 < CUDA_GEGLU_ROWS ? R - r0 : CUDA_GEGLU_ROWS;
        kern_gemm(e->xn + (size_t)r0 * H, l->w_gu, NULL, e->gu, NULL, n, 2 * I, H, &e->gemm_ws, e->stream);
        cuda_prof_mark(e, PROF_GU);
        kern_geglu(e->gu, n, I, e->h + (size_t)r0 * I, e->stream);
        cuda_prof_mark(e, PROF_GEGLU);
    }
}

/* Attention of one layer over the pass's R rows (e->q16, e->k_new, e->v_new into e->o), then the cache update:
 * partials and their merge, which stores the new keys and values, or one CTA per tile and the store. */
static void attend(struct cuda_engine *e, const struct cuda_layer *l, int R, int graphed)
{
    const struct cfg_layer *c = l->c;
    int ts = l->tile_set, mask_all = e->opts.image_mask == ENGINE_IMAGE_MASK_ALL_LAYERS;
    kern_stream s = e->stream;
    struct kern_kv_new kv = {e->k_new, e->v_new, e->meta, c->kv_dim, l->cap, l->cache_k, l->cache_v};
    int merge = kern_attention(e->q16, e->k_new, e->v_new, l->cache_k, l->cache_v, e->meta,
                               e->tiles + (size_t)ts * e->max_rows, e->n_tiles + ts, graphed ? R : e->h_n_tiles[ts],
                               e->h_n_tiles[ts], R,
                               c->n_heads, c->n_kv_heads, c->head_dim, l->cap, c->is_full, c->window, mask_all,
                               e->attn_mode, e->part_acc, e->part_ml, e->o, s);
    cuda_prof_mark(e, c->is_full ? PROF_ATTN_FULL : PROF_ATTN_SLIDING);
    if (merge) { /* the merge stores the new keys and values too (attention has read the caches) */
        kern_attention_merge(e->part_acc, e->part_ml, R, c->n_heads, c->head_dim, e->o, &kv, s);
        cuda_prof_mark(e, PROF_ATTN_MERGE);
    } else {
        kern_kv_store(&kv, R, s);
        cuda_prof_mark(e, PROF_KV_STORE);
    }
}

/* y = the product, then the residual update x = (x + RMSNorm(y; w)) * scalar and the next block's input norm
 * (w_next) into xn: in the product's tail where it takes one (kernels.h), else by the standalone kernel. */
static void product_residual(struct cuda_engine *e, const uint16_t *x, const uint16_t *w, int R, int K, const float *norm,
                             float scalar, const float *w_next, enum cuda_prof_kind kind)
{
    struct kern_tail tl = {.kind = KERN_TAIL_RESIDUAL, .counters = e->tail_counters, .eps = e->rms_eps, .x = e->x,
                           .w = norm, .w_next = w_next, .scalar = scalar, .xn16 = e->xn};
    int skip = cuda_prof_skips(e, PROF_RESID);
    int tail = kern_gemm_tail(x, w, e->t, R, e->H, K, &e->gemm_ws, skip ? NULL : &tl, e->stream);
    cuda_prof_mark(e, kind); /* with the tail where it ran */
    if (tail || skip) return;
    kern_residual_norm_add(e->x, e->t, norm, e->rms_eps, scalar, w_next, e->xn, R, e->H, e->stream);
    cuda_prof_mark(e, PROF_RESID);
}

/* The q|k|v product and its preparation (q/k norms, RoPE, v norm into q16, k_new, v_new): in the product's
 * tail where it takes one, else by kern_qkv_prep. */
static void qkv_product(struct cuda_engine *e, const struct cuda_layer *l, int R)
{
    const struct cfg_layer *c = l->c;
    int v_off = c->k_eq_v ? c->q_dim : c->q_dim + c->kv_dim, skip = cuda_prof_skips(e, PROF_QKV_PREP);
    struct kern_tail tl = {.kind = KERN_TAIL_QKV_PREP, .counters = e->tail_counters, .eps = e->rms_eps,
                           .k_off = c->q_dim, .v_off = v_off, .n_heads = c->n_heads, .n_kv = c->n_kv_heads,
                           .D = c->head_dim, .q_norm = l->q_norm, .k_norm = l->k_norm, .inv_freq = l->inv_freq,
                           .meta = e->meta, .q_out = e->q16, .k_out = e->k_new, .v_out = e->v_new};
    int tail = kern_gemm_tail(e->xn, l->w_qkv, e->qkv, R, l->qkv_n, e->H, &e->gemm_ws, skip ? NULL : &tl, e->stream);
    cuda_prof_mark(e, PROF_QKV); /* with the tail where it ran */
    if (tail || skip) return;
    kern_qkv_prep(e->qkv, l->qkv_n, c->q_dim, v_off, l->q_norm, l->k_norm, l->inv_freq, e->meta, e->rms_eps, R,
                  c->n_heads, c->n_kv_heads, c->head_dim, e->q16, e->k_new, e->v_new, e->stream);
    cuda_prof_mark(e, PROF_QKV_PREP);
}

/* One decoder layer over the pass's R rows; e->xn holds the layer's normed input, and on return the next
 * layer's (next_norm), or is stale after the last layer (next_norm NULL). graphed: the launch is recorded in
 * a graph that later passes of the same shape replay, so the attention grid covers every tile the rows could
 * form (R) and its blocks past the pass's own count return at once. */
static void layer_forward(struct cuda_engine *e, const struct cuda_layer *l, int R, int graphed, const float *next_norm)
{
    const struct cfg_layer *c = l->c;
    qkv_product(e, l, R);
    if (!cuda_prof_skips(e, PROF_ATTN_SLIDING)) attend(e, l, R, graphed);
    product_residual(e, e->o, l->wo, R, c->q_dim, l->post_attn_norm, 1.0f, l->pre_ff_norm, PROF_O);
    gate_up(e, l, R);
    product_residual(e, e->h, l->w_down, R, c->intermediate, l->post_ff_norm, l->scalar, next_norm, PROF_DOWN);
}

/* The last layer of a pass where fewer rows need logits than run (a prompt chunk): by its attention every
 * row's keys and values are stored, and nothing after the last layer reads the other rows' hidden states (the
 * drafter reads the logits rows'), so their o, gate|up and down products are dropped: a 1,000-row prompt's
 * first token runs them on one row (version 13.2: 51.8 -> 49.4 ms with the prompt tiles longest first). A
 * row's products do not depend on the rows beside it (row-exact), so its logits keep their bits.
 *
 * The L logits rows (e->logit_rows) go on past the attention: their
 * attention outputs gather into q16 (free once the attention has run) and their residual rows into t, and x
 * and t swap, so the rest of the layer runs on rows 0 .. L-1. The caller swaps them back after the logits. */
static void last_layer_logit_rows(struct cuda_engine *e, const struct cuda_layer *l, int R, int L, int graphed)
{
    const struct cfg_layer *c = l->c;
    float *x = e->x;
    qkv_product(e, l, R);
    if (!cuda_prof_skips(e, PROF_ATTN_SLIDING)) attend(e, l, R, graphed);
    if (L == 0) return; /* a chunk that ends no prompt: nothing past the keys and values */
    kern_gather_rows(e->o, e->logit_rows, L, (size_t)c->q_dim * 2, e->q16, e->stream);
    kern_gather_rows(e->x, e->logit_rows, L, (size_t)e->H * 4, e->t, e->stream);
    cuda_prof_mark(e, PROF_RESID);
    e->x = e->t, e->t = x;
    product_residual(e, e->q16, l->wo, L, c->q_dim, l->post_attn_norm, 1.0f, l->pre_ff_norm, PROF_O);
    gate_up(e, l, L);
    product_residual(e, e->h, l->w_down, L, c->intermediate, l->post_ff_norm, l->scalar, NULL, PROF_DOWN);
}

/* Final norm, tied head and soft-cap for the pass's logits rows (rows of e->x: e->logit_rows, or with
 * `gathered` rows 0 .. n_logits-1, normed by the same row function), CUDA_LOGIT_ROWS at a time; each chunk's
 * draws are selected and its logits copied out before the next chunk reuses the buffer (cuda_sample.c). */
static void pass_logits(struct cuda_engine *e, int n_logits, int gathered)
{
    for (int first = 0; first < n_logits; first += CUDA_LOGIT_ROWS) {
        int n = n_logits - first < CUDA_LOGIT_ROWS ? n_logits - first : CUDA_LOGIT_ROWS;
        if (gathered)
            kern_rmsnorm(e->x + (size_t)first * e->H, e->final_norm, e->rms_eps, n, e->H, NULL, e->xn, e->stream);
        else kern_rmsnorm_gather(e->x, e->logit_rows + first, e->final_norm, e->rms_eps, n, e->H, e->xn, e->stream);
        kern_gemm(e->xn, e->embed, NULL, e->logits, NULL, n, e->V, e->H, &e->gemm_ws, e->stream);
        if (e->has_softcap) kern_softcap(e->logits, (long)n * e->V, e->softcap, e->stream);
        cuda_prof_mark(e, PROF_HEAD);
        cuda_sample_chunk(e, first, n);
        cuda_prof_mark(e, PROF_DRAW);
    }
}

/* Everything a pass puts on the stream after staging. */
static void enqueue_pass(struct cuda_engine *e, int R, int L, int graphed)
{
    cuda_prof_mark(e, PROF_START);
    upload_rows(e, R, L);
    kern_embed(e->tokens, e->embed, e->embed_scale, e->image_rows, e->image_index, R, e->H, e->x, e->stream);
    kern_rmsnorm(e->x, e->layers[0].in_norm, e->rms_eps, R, e->H, NULL, e->xn, e->stream);
    cuda_prof_mark(e, PROF_EMBED);
    float *x = e->x, *t = e->t;
    int gathered = L < R;
    for (int i = 0; i + gathered < e->L; i++)
        layer_forward(e, &e->layers[i], R, graphed, i + 1 < e->L ? e->layers[i + 1].in_norm : NULL);
    if (gathered) last_layer_logit_rows(e, &e->layers[e->L - 1], R, L, graphed);
    pass_logits(e, L, gathered);
    e->x = x, e->t = t;
}

/* The attention split of each tile set for this pass's tiles (kern_attention_groups): part of a graph's
 * shape, since one stream's window of 16 rows (one tile) and 16 streams' single rows (16 tiles) share a row
 * count but not a grid. */
static void pass_split(const struct cuda_engine *e, int split[CUDA_TILE_SETS])
{
    memset(split, 0, CUDA_TILE_SETS * sizeof *split);
    for (int t = 0; t < e->n_tile_sets; t++)
        split[t] = kern_attention_groups(e->h_n_tiles[t], e->tile_kv[t], e->tile_d[t], e->attn_mode);
}

/* A decode pass (few rows, no images, nothing but candidates copied out) is replayed from a CUDA graph: the
 * second time a shape (rows, logits rows, candidates per row, attention split) is seen it is captured, and
 * from then on one launch replaces the pass's hundreds. The graph holds the same kernels with the same
 * arguments, so its results are the eager pass's, bit for bit. Returns the graph to launch, or NULL to run
 * eagerly. */
static cudaGraphExec_t graph_for(struct cuda_engine *e, const struct engine_item *items, int n_items, int R, int L)
{
    struct cuda_graph *g = NULL;
    cudaGraph_t graph;
    int split[CUDA_TILE_SETS];
    if (!e->use_graphs || R > CUDA_GRAPH_MAX_ROWS) return NULL;
    for (int i = 0; i < n_items; i++)
        if (items[i].n_image_rows) return NULL;
    for (int j = 0; j < L; j++)
        if (e->draw[j].dst) return NULL;
    pass_split(e, split);
    for (int i = 0; i < e->n_graphs; i++)
        if (e->graphs[i].rows == R && e->graphs[i].logits == L && e->graphs[i].stride == e->cand_stride &&
            !memcmp(e->graphs[i].split, split, sizeof split))
            g = &e->graphs[i];
    if (!g) {
        if (e->n_graphs == CUDA_MAX_GRAPHS) return NULL;
        g = &e->graphs[e->n_graphs++];
        g->rows = R, g->logits = L, g->stride = e->cand_stride, g->exec = NULL;
        memcpy(g->split, split, sizeof split);
        return NULL; /* first sight: run eagerly (every kernel configured before any capture) */
    }
    if (g->exec) return g->exec;
    CUDA_CHECK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal));
    enqueue_pass(e, R, L, 1);
    CUDA_CHECK(cudaStreamEndCapture(e->stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    return g->exec;
}

void cuda_run_items(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths)
{
    int n_logits, R = stage_rows(e, items, n_items, lengths, &n_logits);
    cudaGraphExec_t g = graph_for(e, items, n_items, R, n_logits);
    if (g) CUDA_CHECK(cudaGraphLaunch(g, e->stream));
    else enqueue_pass(e, R, n_logits, 0);
    CUDA_CHECK(cudaStreamSynchronize(e->stream));
    cuda_prof_pass_done(e, R);
    cuda_sample_finish(e, items, n_items, lengths, n_logits);
}
