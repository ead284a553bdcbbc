/* cuda_sample — the CUDA backend's token draws (engine_backend.h, draws = 1): for every row an item asks a
 * token for, the device selects the sampler's candidates (kern_topk: the top_k best in rank order, or the
 * best one for greedy) and only those cross the bus; the host finishes the draw with samp_pick_sorted at the
 * row's position — the same arithmetic as samp_sample on the whole row, so the CPU and CUDA engines draw the
 * same tokens from the same logits (sampler.h, "THE ALGORITHM"). Rows whose request turns top_k off (or asks
 * for more than KERN_TOPK_MAX) are drawn on the host from their whole logits row, as the CPU engine does.
 *
 * Items that ask for logits get them copied out as well, whether or not they draw. */
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/cuda_engine.h"
#include "util/util.h"

void cuda_sample_alloc(struct cuda_engine *e)
{
    size_t R = (size_t)e->max_rows, C = R * KERN_TOPK_MAX;
    e->select = cuda_alloc(e, R * sizeof *e->select);
    e->cand_ids = cuda_alloc(e, C * sizeof *e->cand_ids);
    e->cand_logits = cuda_alloc(e, C * sizeof *e->cand_logits);
    e->cand_n = cuda_alloc(e, R * sizeof *e->cand_n);
    e->topk_ws_keys = cuda_topk_ws_keys(e->V);
    e->topk_ws = e->topk_ws_keys ? cuda_alloc(e, e->topk_ws_keys * sizeof *e->topk_ws) : NULL;
    e->h_select = cuda_alloc_pinned(R * sizeof *e->h_select);
    e->h_cand_ids = cuda_alloc_pinned(C * sizeof *e->h_cand_ids);
    e->h_cand_logits = cuda_alloc_pinned(C * sizeof *e->h_cand_logits);
    e->h_cand_n = cuda_alloc_pinned(R * sizeof *e->h_cand_n);
    e->draw = g4_calloc(R, sizeof *e->draw);
    e->pick_w = g4_malloc(KERN_TOPK_MAX * sizeof *e->pick_w);
}

void cuda_sample_free(struct cuda_engine *e)
{
    cudaFreeHost(e->h_select);
    cudaFreeHost(e->h_cand_ids);
    cudaFreeHost(e->h_cand_logits);
    cudaFreeHost(e->h_cand_n);
    free(e->draw);
    free(e->host_logits);
    free(e->pick_w);
    samp_ws_destroy(e->ws);
}

/* What the device selects for a row drawn with p: 1 for greedy, top_k when it is on and small enough, else 0
 * (a host draw). */
static int select_k(const struct samp_params *p, int V)
{
    if (p->temperature == 0.0f) return 1;
    if (p->top_k > 0 && p->top_k <= KERN_TOPK_MAX) return p->top_k < V ? p->top_k : V;
    return 0;
}

void cuda_sample_plan(struct cuda_engine *e, const struct engine_item *items, int n_items, int n_logits)
{
    int j = 0, host_rows = 0, kmax = 1;
    for (int i = 0; i < n_items; i++) {
        const struct engine_item *it = &items[i];
        int k = it->sample ? select_k(it->sample, e->V) : 0;
        if (!it->logits && !it->sample) continue;
        if (it->sample && k == 0 && !it->logits) host_rows += it->n - it->logits_from;
        if (k > kmax) kmax = k;
    }
    if ((size_t)host_rows * e->V > e->host_logits_cap) {
        free(e->host_logits);
        e->host_logits_cap = (size_t)host_rows * e->V;
        e->host_logits = g4_malloc(e->host_logits_cap * sizeof *e->host_logits);
    }
    e->n_host_rows = host_rows;
    e->cand_stride = kmax;
    host_rows = 0;
    for (int i = 0; i < n_items; i++) {
        const struct engine_item *it = &items[i];
        int k = it->sample ? select_k(it->sample, e->V) : 0;
        if (!it->logits && !it->sample) continue;
        for (int r = 0; r < it->n - it->logits_from; r++, j++) {
            struct kern_select_row *s = &e->h_select[j];
            struct cuda_draw_row *d = &e->draw[j];
            d->item = i;
            d->row = r;
            d->dst = it->logits ? it->logits + (size_t)r * e->V
                     : (it->sample && k == 0) ? e->host_logits + (size_t)host_rows++ * e->V : NULL;
            s->k = k;
            s->n_supp = k ? it->sample->n_suppress_ids : 0;
            for (int q = 0; q < s->n_supp; q++) s->supp[q] = it->sample->suppress_ids[q];
        }
    }
    G4_CHECK(j == n_logits, "sample plan: %d logits rows, %d listed", j, n_logits);
}

void cuda_sample_upload(struct cuda_engine *e, int n_logits)
{
    if (n_logits)
        CUDA_CHECK(cudaMemcpyAsync(e->select, e->h_select, (size_t)n_logits * sizeof *e->select,
                                   cudaMemcpyHostToDevice, e->stream));
}

/* Rows [first, first + n) of the pass's logits list, whose logits are in e->logits. */
void cuda_sample_chunk(struct cuda_engine *e, int first, int n)
{
    size_t stride = (size_t)e->cand_stride;
    kern_topk(e->logits, e->V, e->select + first, n, e->cand_stride, e->topk_ws, e->topk_ws_keys,
              e->cand_ids + (size_t)first * KERN_TOPK_MAX, e->cand_logits + (size_t)first * KERN_TOPK_MAX,
              e->cand_n + first, e->stream);
    /* candidates of rows first.. (the kernel writes KERN_TOPK_MAX apart; copy the first `stride` of each) */
    CUDA_CHECK(cudaMemcpy2DAsync(e->h_cand_ids + (size_t)first * KERN_TOPK_MAX, KERN_TOPK_MAX * sizeof(int32_t),
                                 e->cand_ids + (size_t)first * KERN_TOPK_MAX, KERN_TOPK_MAX * sizeof(int32_t),
                                 stride * sizeof(int32_t), (size_t)n, cudaMemcpyDeviceToHost, e->stream));
    CUDA_CHECK(cudaMemcpy2DAsync(e->h_cand_logits + (size_t)first * KERN_TOPK_MAX, KERN_TOPK_MAX * sizeof(float),
                                 e->cand_logits + (size_t)first * KERN_TOPK_MAX, KERN_TOPK_MAX * sizeof(float),
                                 stride * sizeof(float), (size_t)n, cudaMemcpyDeviceToHost, e->stream));
    CUDA_CHECK(cudaMemcpyAsync(e->h_cand_n + first, e->cand_n + first, (size_t)n * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, e->stream));
    /* whole rows for items that asked for logits and for host draws, in runs of consecutive rows */
    for (int a = first; a < first + n;) {
        int b = a + 1;
        if (!e->draw[a].dst) {
            a++;
            continue;
        }
        while (b < first + n && e->draw[b].dst == e->draw[b - 1].dst + e->V) b++;
        CUDA_CHECK(cudaMemcpyAsync(e->draw[a].dst, e->logits + (size_t)(a - first) * e->V,
                                   (size_t)(b - a) * e->V * sizeof(float), cudaMemcpyDeviceToHost, e->stream));
        a = b;
    }
}

void cuda_sample_finish(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths,
                        int n_logits)
{
    (void)n_items;
    for (int j = 0; j < n_logits; j++) {
        const struct cuda_draw_row *d = &e->draw[j];
        const struct engine_item *it = &items[d->item];
        const struct samp_params *p = it->sample;
        uint64_t position;
        int32_t tok;
        if (!p) continue;
        position = (uint64_t)lengths[d->item] + (uint64_t)(it->logits_from + d->row) + 1;
        if (e->h_select[j].k == 0) {
            if (!e->ws) e->ws = samp_ws_create(e->V);
            tok = samp_sample(p, d->dst, position, e->ws);
        } else {
            const int32_t *ids = e->h_cand_ids + (size_t)j * KERN_TOPK_MAX;
            const float *xs = e->h_cand_logits + (size_t)j * KERN_TOPK_MAX;
            int32_t n = e->h_cand_n[j];
            G4_CHECK(n >= 0 && n <= e->h_select[j].k, "row %d: %d candidates for k %d", j, n, e->h_select[j].k);
            if (n == 0) tok = -1;
            else if (p->temperature == 0.0f || n == 1) tok = ids[0];
            else tok = samp_pick_sorted(p, xs, ids, n, samp_uniform(p->seed, position), e->pick_w);
        }
        it->sampled[d->row] = tok;
    }
}
