/* cpu_forward — the Gemma 4 decoder in fp32 on the CPU, one item (a run of rows of one stream) at a time:
 * embeddings, the sandwich-normed attention and GeGLU blocks of spec §2.3, the final norm, the tied head and
 * the soft-cap. This is the truth the CUDA path is held to, so it favours plain, checkable arithmetic:
 * every dot product and every softmax runs in one fixed order, whatever the thread count or chunking.
 *
 * Attention masks (spec §2.6, §4.6): a query at position p sees key k when
 *   full layers:     k <= p                                   (+ same image block, IMAGE_MASK_ALL_LAYERS)
 *   sliding layers:  SLIDING_ONLY: k > p - W  and (k <= p or same image block)
 *                    ALL_LAYERS:   (k > p - W and k <= p) or same image block
 * Image blocks live inside one item (a chunk never cuts an image), so only in-chunk keys can share one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_engine.h"
#include "engine/cpu/cpu_ops.h"
#include "model/model.h"
#include "util/util.h"

/* ---- attention --------------------------------------------------------------------------------------- */

struct attn_job {
    struct cpu_engine *e;
    const struct cpu_layer *l;
    const struct engine_item *it;
    int pos0, n;
    const float *q, *k, *v;      /* (n, Q*D), (n, K*D), (n, K*D) of this chunk */
    const float *kc, *vc;        /* (C, K*D) this stream's cache for the layer */
    float *o;                    /* (n, Q*D) */
    enum engine_image_mask mask;
};

static inline int row_block(const struct engine_item *it, int i)
{
    return it->image_block ? it->image_block[i] : -1;
}

/* Whether the query at chunk row i sees the key at absolute position kp. */
static int visible(const struct attn_job *j, int i, int kp)
{
    int p = j->pos0 + i, W = j->l->c->window, bq = row_block(j->it, i);
    int same = bq >= 0 && kp >= j->pos0 && row_block(j->it, kp - j->pos0) == bq;
    if (j->l->c->is_full) return kp <= p || (same && j->mask == ENGINE_IMAGE_MASK_ALL_LAYERS);
    if (j->mask == ENGINE_IMAGE_MASK_ALL_LAYERS) return (kp > p - W && kp <= p) || same;
    return kp > p - W && (kp <= p || same);
}

static const float *key_row(const struct attn_job *j, const float *chunk, const float *cache, int kp)
{
    int kvd = j->l->c->kv_dim;
    if (kp >= j->pos0) return chunk + (size_t)(kp - j->pos0) * kvd;
    return cache + (size_t)(kp % j->l->cache_rows) * kvd;
}

/* The GPU's order of work for one (row, head) with its roundings (ENGINE_CPU_BF16_ACTIVATIONS): keys in
 * blocks of ENGINE_ATTN_KEY_BLOCK by absolute position, block b in partial b % ENGINE_ATTN_PARTIALS; per
 * partial, blocks in increasing order with an online softmax (running max, rescale), the weights exp(s - max)
 * summed in fp32 and multiplied with the values as bf16; the partials merged in order (kernels/attention.cu).
 * scores[kp] for kp in [lo, hi] (-inf where not visible); acc: ENGINE_ATTN_PARTIALS * D floats of scratch. */
static void attn_gpu_order(const struct attn_job *j, int kvh, int D, const float *scores, int lo, int hi, float *acc,
                           float *o)
{
    float m[ENGINE_ATTN_PARTIALS], l[ENGINE_ATTN_PARTIALS], big = -INFINITY, sum = 0.0f;
    for (int w = 0; w < ENGINE_ATTN_PARTIALS; w++) m[w] = -INFINITY, l[w] = 0.0f;
    memset(acc, 0, (size_t)ENGINE_ATTN_PARTIALS * D * sizeof *acc);
    for (int b = lo / ENGINE_ATTN_KEY_BLOCK; b <= hi / ENGINE_ATTN_KEY_BLOCK; b++) {
        int w = b % ENGINE_ATTN_PARTIALS, k0 = b * ENGINE_ATTN_KEY_BLOCK, k1 = k0 + ENGINE_ATTN_KEY_BLOCK - 1;
        float bm = -INFINITY, mn, corr, ps = 0.0f, *a = acc + (size_t)w * D;
        if (k0 < lo) k0 = lo;
        if (k1 > hi) k1 = hi;
        for (int kp = k0; kp <= k1; kp++) bm = scores[kp] > bm ? scores[kp] : bm;
        mn = m[w] > bm ? m[w] : bm;
        if (mn == -INFINITY) continue;  /* nothing visible yet: the state stays as it is */
        corr = expf(m[w] - mn);
        for (int d = 0; d < D; d++) a[d] *= corr;
        for (int kp = k0; kp <= k1; kp++) {
            float pe;
            const float *vr;
            if (scores[kp] == -INFINITY) continue;
            pe = expf(scores[kp] - mn);
            ps += pe;
            pe = bf16_to_f32(f32_to_bf16(pe));
            vr = key_row(j, j->v, j->vc, kp) + (size_t)kvh * D;
            for (int d = 0; d < D; d++) a[d] += pe * vr[d];
        }
        l[w] = l[w] * corr + ps;
        m[w] = mn;
    }
    for (int w = 0; w < ENGINE_ATTN_PARTIALS; w++) big = m[w] > big ? m[w] : big;
    memset(o, 0, (size_t)D * sizeof *o);
    for (int w = 0; w < ENGINE_ATTN_PARTIALS; w++) {
        float f;
        if (m[w] == -INFINITY) continue;
        f = expf(m[w] - big);
        sum += l[w] * f;
        for (int d = 0; d < D; d++) o[d] += acc[(size_t)w * D + d] * f;
    }
    for (int d = 0; d < D; d++) o[d] /= sum;
}

/* Tasks are (row, head) pairs: scores over visible keys, softmax, weighted sum of values. */
static void attn_range(void *ctx, int begin, int end)
{
    const struct attn_job *j = ctx;
    const struct cfg_layer *c = j->l->c;
    int D = c->head_dim, group = c->n_heads / c->n_kv_heads;
    float *scores = g4_malloc((size_t)(j->pos0 + j->n) * sizeof *scores);
    float *acc = j->e->bf16_act ? g4_malloc((size_t)ENGINE_ATTN_PARTIALS * D * sizeof *acc) : NULL;
    for (int task = begin; task < end; task++) {
        int i = task / c->n_heads, h = task % c->n_heads, kvh = h / group, p = j->pos0 + i;
        int lo = c->is_full ? 0 : p - c->window + 1, hi = row_block(j->it, i) >= 0 ? j->pos0 + j->n - 1 : p;
        const float *q = j->q + (size_t)i * c->q_dim + (size_t)h * D;
        float *o = j->o + (size_t)i * c->q_dim + (size_t)h * D;
        float max = -INFINITY, sum = 0.0f;
        if (row_block(j->it, i) >= 0 && j->mask == ENGINE_IMAGE_MASK_ALL_LAYERS && lo > j->pos0) lo = j->pos0;
        if (lo < 0) lo = 0;
        if (c->is_full && !(j->mask == ENGINE_IMAGE_MASK_ALL_LAYERS && row_block(j->it, i) >= 0)) hi = p;
        for (int kp = lo; kp <= hi; kp++) {
            scores[kp] = -INFINITY;
            if (!visible(j, i, kp)) continue;
            scores[kp] = cpu_dot_f32(q, key_row(j, j->k, j->kc, kp) + (size_t)kvh * D, D);
            if (scores[kp] > max) max = scores[kp];
        }
        if (acc) {
            attn_gpu_order(j, kvh, D, scores, lo, hi, acc, o);
            continue;
        }
        for (int kp = lo; kp <= hi; kp++) {
            scores[kp] = scores[kp] == -INFINITY ? 0.0f : expf(scores[kp] - max);
            sum += scores[kp];
        }
        memset(o, 0, (size_t)D * sizeof *o);
        for (int kp = lo; kp <= hi; kp++) {
            const float *vr;
            float w = scores[kp] / sum;
            if (w == 0.0f) continue;
            vr = key_row(j, j->v, j->vc, kp) + (size_t)kvh * D;
            for (int d = 0; d < D; d++) o[d] += w * vr[d];
        }
    }
    free(scores);
    free(acc);
}

/* ---- one layer --------------------------------------------------------------------------------------- */

struct rows_job {
    struct cpu_engine *e;
    const struct cpu_layer *l;
    int pos0;
};

/* q: per-head q_norm then RoPE; k: per-head k_norm then RoPE; v: weightless RMSNorm. Rows in parallel. */
static void qkv_norm_range(void *ctx, int begin, int end)
{
    const struct rows_job *j = ctx;
    const struct cfg_layer *c = j->l->c;
    struct cpu_engine *e = j->e;
    int D = c->head_dim;
    for (int i = begin; i < end; i++) {
        for (int h = 0; h < c->n_heads; h++) {
            float *q = e->q + (size_t)i * c->q_dim + (size_t)h * D;
            cpu_rmsnorm(q, D, j->l->q_norm, e->rms_eps, q);
            cpu_rope(q, D, j->l->inv_freq, j->pos0 + i);
        }
        for (int h = 0; h < c->n_kv_heads; h++) {
            float *k = e->k + (size_t)i * c->kv_dim + (size_t)h * D, *v = e->v + (size_t)i * c->kv_dim + (size_t)h * D;
            cpu_rmsnorm(v, D, NULL, e->rms_eps, v);
            cpu_rmsnorm(k, D, j->l->k_norm, e->rms_eps, k);
            cpu_rope(k, D, j->l->inv_freq, j->pos0 + i);
        }
    }
}

static void layer_forward(struct cpu_engine *e, int li, const struct engine_item *it, int pos0,
                          enum engine_image_mask mask)
{
    const struct cpu_layer *l = &e->layers[li];
    const struct cfg_layer *c = l->c;
    struct cpu_stream *s = &e->streams[it->stream];
    int n = it->n, H = e->H, I = c->intermediate;
    struct rows_job rj = {e, l, pos0};
    struct attn_job aj = {e, l, it, pos0, n, e->q, e->k, e->v, s->k[li], s->v[li], e->o, mask};

    for (int i = 0; i < n; i++) cpu_rmsnorm(e->x + (size_t)i * H, H, l->in_norm, e->rms_eps, e->a + (size_t)i * H);
    if (e->bf16_act) cpu_round_bf16(e->a, (size_t)n * H);
    cpu_matmul_bf16(e->pool, e->a, n, H, l->wq, c->q_dim, NULL, e->q);
    cpu_matmul_bf16(e->pool, e->a, n, H, l->wk, c->kv_dim, NULL, e->k);
    if (l->wv) cpu_matmul_bf16(e->pool, e->a, n, H, l->wv, c->kv_dim, NULL, e->v);
    else memcpy(e->v, e->k, (size_t)n * c->kv_dim * sizeof *e->v); /* K=V: V is the raw K projection */
    pool_run(e->pool, qkv_norm_range, &rj, n);
    if (e->bf16_act) {
        cpu_round_bf16(e->q, (size_t)n * c->q_dim);
        cpu_round_bf16(e->k, (size_t)n * c->kv_dim);
        cpu_round_bf16(e->v, (size_t)n * c->kv_dim);
    }
    pool_run(e->pool, attn_range, &aj, n * c->n_heads);
    if (e->bf16_act) cpu_round_bf16(e->o, (size_t)n * c->q_dim);

    /* the chunk's keys and values join the cache (a sliding ring keeps its last cache_rows positions) */
    for (int i = 0; i < n; i++) {
        int p = pos0 + i;
        if (p < pos0 + n - l->cache_rows) continue;
        memcpy(s->k[li] + (size_t)(p % l->cache_rows) * c->kv_dim, e->k + (size_t)i * c->kv_dim,
               (size_t)c->kv_dim * sizeof(float));
        memcpy(s->v[li] + (size_t)(p % l->cache_rows) * c->kv_dim, e->v + (size_t)i * c->kv_dim,
               (size_t)c->kv_dim * sizeof(float));
    }

    cpu_matmul_bf16(e->pool, e->o, n, c->q_dim, l->wo, H, NULL, e->t1);
    for (int i = 0; i < n; i++) {
        float *x = e->x + (size_t)i * H, *t = e->t1 + (size_t)i * H;
        cpu_rmsnorm(t, H, l->post_attn_norm, e->rms_eps, t);
        for (int d = 0; d < H; d++) x[d] += t[d];
        cpu_rmsnorm(x, H, l->pre_ff_norm, e->rms_eps, e->a + (size_t)i * H);
    }
    if (e->bf16_act) cpu_round_bf16(e->a, (size_t)n * H);
    cpu_matmul_bf16(e->pool, e->a, n, H, l->w_gate, I, NULL, e->gate);
    cpu_matmul_bf16(e->pool, e->a, n, H, l->w_up, I, NULL, e->up);
    for (size_t k = 0; k < (size_t)n * I; k++) e->gate[k] = cpu_gelu_tanh(e->gate[k]) * e->up[k];
    if (e->bf16_act) cpu_round_bf16(e->gate, (size_t)n * I);
    cpu_matmul_bf16(e->pool, e->gate, n, I, l->w_down, H, NULL, e->t1);
    for (int i = 0; i < n; i++) {
        float *x = e->x + (size_t)i * H, *t = e->t1 + (size_t)i * H;
        cpu_rmsnorm(t, H, l->post_ff_norm, e->rms_eps, t);
        for (int d = 0; d < H; d++) x[d] = (x[d] + t[d]) * l->scalar;
    }
}

/* ---- the item ---------------------------------------------------------------------------------------- */

struct softcap_job {
    float *logits;
    float cap;
};

/* logits = cap * tanh(logits / cap), elements [begin, end). */
static void softcap_range(void *ctx, int begin, int end)
{
    const struct softcap_job *j = ctx;
    for (int k = begin; k < end; k++) j->logits[k] = j->cap * tanhf(j->logits[k] / j->cap);
}

void cpu_forward_item(struct cpu_engine *e, const struct engine_item *it, int pos0, enum engine_image_mask mask)
{
    int H = e->H, n = it->n, img = 0;
    for (int i = 0; i < n; i++) {
        float *x = e->x + (size_t)i * H;
        if (it->image_block && it->image_block[i] >= 0) {
            memcpy(x, it->image_rows + (size_t)img++ * H, (size_t)H * sizeof *x); /* spliced unscaled */
            continue;
        }
        const uint16_t *row = e->embed + (size_t)engine_embedding_id(e->model, it->tokens[i]) * H;
        for (int d = 0; d < H; d++) x[d] = bf16_to_f32(row[d]) * e->embed_scale;
    }
    for (int li = 0; li < e->L; li++) layer_forward(e, li, it, pos0, mask);
    if (!it->logits) return;
    for (int i = it->logits_from; i < n; i++)
        cpu_rmsnorm(e->x + (size_t)i * H, H, e->final_norm, e->rms_eps, e->a + (size_t)(i - it->logits_from) * H);
    if (e->bf16_act) cpu_round_bf16(e->a, (size_t)(n - it->logits_from) * H);
    cpu_matmul_bf16(e->pool, e->a, n - it->logits_from, H, e->embed, e->V, NULL, it->logits);
    for (int r = 0; e->has_softcap && r < n - it->logits_from; r++) {
        struct softcap_job sj = {it->logits + (size_t)r * e->V, e->softcap};
        pool_run(e->pool, softcap_range, &sj, e->V);
    }
}
