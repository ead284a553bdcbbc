/* bench_cuda_attention — decode attention alone (kern_attention with decode tiles, then kern_attention_merge with the
 * new keys' store, as a step runs them), and prompt attention, at the 12B's two layer shapes: sliding (head dim 256, 16 query heads over 8
 * kv heads, window 1,024) and full (head dim 512, 16 query heads over 1). Decode attention is bound by reading each
 * stream's keys and values once per step, so the table gives microseconds per layer, GB/s of keys and values read
 * and that rate as a share of the copy rate (a 2 GiB device copy, read + write bytes per second, as in
 * bench_cuda_products and `g4 bench`'s floor), at 1, 4, 16 and 64 streams of one row, contexts 1k and 8k, and for one
 * stream's window of 16 rows. A second table times a prompt chunk of 1,024 rows of one stream (its keys: the
 * chunk's own and, at context 7,168, those of the 8k prompt's earlier chunks in the cache) on attention.cu's 8-warp
 * kernel and on the warpgroup kernel (attention_wg.cu, kern_set_attention_wg), in µs and TFLOP/s (4 D flops a
 * visible (row, head, key): scores and outputs).
 *
 * Each case cycles through enough copies of its caches (256 MB or more in all, up to 16) that a layer's keys are not
 * in the 50 MB L2 when read again, as in a real step. Launches follow each other on one stream with programmatic
 * dependent launch. Times: the median of 5 rounds of 20 layers. The cache values are constant (every score the
 * same), which changes no work the kernel does. `bench_cuda_attention LAYER STREAMS CONTEXT ROWS` runs one case
 * (for ncu). Without a GPU (or a CUDA build) it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if G4_HAVE_CUDA
#include "bench_cuda.h"
#include "engine/engine.h"
#include "kernels.h"

#define LAUNCHES 20
#define MAX_COPIES 16

/* A 12B attention layer shape. */
struct layer_shape {
    const char *what;
    int D, n_heads, n_kv, is_full, window;
};

static const struct layer_shape SHAPES[] = {
    {"sliding", 256, 16, 8, 0, 1024},
    {"full", 512, 16, 1, 1, 0},
};

/* A case: `streams` streams at context ctx, each `rows` rows (1: decode; more: a draft window). */
struct bench_case {
    int streams, ctx, rows;
};

static const struct bench_case CASES[] = {
    {1, 1024, 1}, {4, 1024, 1}, {16, 1024, 1}, {64, 1024, 1}, {1, 8192, 1},
    {4, 8192, 1}, {16, 8192, 1}, {64, 8192, 1}, {1, 1024, 16},
};

/* prompt chunks: the first of a prompt, and the last of an 8k one */
static const struct bench_case PROMPT_CASES[] = {{1, 0, 1024}, {1, 7168, 1024}};

/* The device buffers of one case. */
struct attn_bufs {
    uint16_t *q, *k_new, *v_new, *out, *cache_k[MAX_COPIES], *cache_v[MAX_COPIES];
    struct kern_row *meta;
    struct kern_tile *tiles;
    int *n_tiles, n_tiles_host, copies, cap, R, mode;
    float *part_acc, *part_ml;
};

static void *dev_alloc(size_t bytes, int fill)
{
    void *p;
    BENCH_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    BENCH_CUDA_CHECK(cudaMemset(p, fill, bytes ? bytes : 1));
    return p;
}

/* Rows, tiles and caches of case c at shape l, for a pass of this mode (KERN_ATTN_*). */
static void bufs_make(struct attn_bufs *b, const struct layer_shape *l, const struct bench_case *c, int mode)
{
    int R = c->streams * c->rows, kvd = l->n_kv * l->D, qd = l->n_heads * l->D;
    int tile_rows = kern_attention_tile_rows(l->D, l->n_heads / l->n_kv, mode);
    struct kern_row *meta = calloc((size_t)R, sizeof *meta);
    struct kern_tile *tiles = calloc((size_t)R, sizeof *tiles);
    int max_context = c->ctx + ENGINE_MAX_WINDOW;
    memset(b, 0, sizeof *b);
    b->R = R, b->mode = mode;
    b->cap = l->is_full ? max_context : l->window - 1 + ENGINE_MAX_WINDOW;
    if (b->cap > max_context) b->cap = max_context;
    for (int s = 0, n = 0; s < c->streams; s++) {
        for (int i = 0; i < c->rows; i++) {
            struct kern_row *m = &meta[s * c->rows + i];
            m->stream = s, m->pos = c->ctx + i, m->pos0 = c->ctx, m->base = s * c->rows, m->block = -1;
            m->item_end = (s + 1) * c->rows;
        }
        for (int r = 0; r < c->rows; r += tile_rows, n++) {
            tiles[n].row0 = s * c->rows + r;
            tiles[n].nrows = c->rows - r < tile_rows ? c->rows - r : tile_rows;
            b->n_tiles_host = n + 1;
        }
    }
    size_t cache_bytes = (size_t)c->streams * b->cap * kvd * 2;
    b->copies = (int)(((size_t)256 << 20) / (2 * cache_bytes)) + 1;
    if (b->copies > MAX_COPIES) b->copies = MAX_COPIES;
    for (int i = 0; i < b->copies; i++) {
        b->cache_k[i] = dev_alloc(cache_bytes, 0x3c);
        b->cache_v[i] = dev_alloc(cache_bytes, 0x3c);
    }
    b->q = dev_alloc((size_t)R * qd * 2, 0x3c);
    b->out = dev_alloc((size_t)R * qd * 2, 0);
    b->k_new = dev_alloc((size_t)R * kvd * 2, 0x3c);
    b->v_new = dev_alloc((size_t)R * kvd * 2, 0x3c);
    b->part_acc = dev_alloc((size_t)R * l->n_heads * KERN_ATTN_PARTIALS * l->D * sizeof(float), 0);
    b->part_ml = dev_alloc((size_t)R * l->n_heads * KERN_ATTN_PARTIALS * 2 * sizeof(float), 0);
    b->meta = dev_alloc((size_t)R * sizeof *meta, 0);
    b->tiles = dev_alloc((size_t)R * sizeof *tiles, 0);
    b->n_tiles = dev_alloc(sizeof(int), 0);
    BENCH_CUDA_CHECK(cudaMemcpy(b->meta, meta, (size_t)R * sizeof *meta, cudaMemcpyHostToDevice));
    BENCH_CUDA_CHECK(cudaMemcpy(b->tiles, tiles, (size_t)R * sizeof *tiles, cudaMemcpyHostToDevice));
    BENCH_CUDA_CHECK(cudaMemcpy(b->n_tiles, &b->n_tiles_host, sizeof(int), cudaMemcpyHostToDevice));
    free(meta);
    free(tiles);
}

static void bufs_free(struct attn_bufs *b)
{
    for (int i = 0; i < b->copies; i++) {
        BENCH_CUDA_CHECK(cudaFree(b->cache_k[i]));
        BENCH_CUDA_CHECK(cudaFree(b->cache_v[i]));
    }
    void *p[] = {b->q, b->out, b->k_new, b->v_new, b->part_acc, b->part_ml, b->meta, b->tiles, b->n_tiles};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) BENCH_CUDA_CHECK(cudaFree(p[i]));
}

/* One layer's decode attention on cache copy i: attention, then the merge with the store (as cuda_step.c), or the
 * store alone where the attention folded its partials itself. */
static void layer(const struct attn_bufs *b, const struct layer_shape *l, int i, cudaStream_t s)
{
    struct kern_kv_new kv = {b->k_new, b->v_new, b->meta, l->n_kv * l->D, b->cap, b->cache_k[i], b->cache_v[i]};
    int merge = kern_attention(b->q, b->k_new, b->v_new, b->cache_k[i], b->cache_v[i], b->meta, b->tiles, b->n_tiles,
                               b->n_tiles_host, b->n_tiles_host, b->R, l->n_heads, l->n_kv, l->D, b->cap, l->is_full,
                               l->window, 0, b->mode, b->part_acc, b->part_ml, b->out, s);
    if (merge) kern_attention_merge(b->part_acc, b->part_ml, b->R, l->n_heads, l->D, b->out, &kv, s);
    else kern_kv_store(&kv, b->R, s);
}

/* One layer on copy `copy` of the caches (bench_cuda_median_us). */
struct layer_run {
    const struct attn_bufs *b;
    const struct layer_shape *l;
    cudaStream_t s;
};

static void layer_launch(void *ctx, int copy)
{
    const struct layer_run *r = ctx;
    layer(r->b, r->l, copy, r->s);
}

int main(int argc, char **argv)
{
    double rate;
    if (!bench_cuda_open("bench_cuda_attention", &rate)) return 0;
    printf("| layer | streams | context | rows each | partial CTAs per tile | µs | MB of keys+values | GB/s | %% of copy rate |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    cudaStream_t s;
    BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t li = 0; li < sizeof SHAPES / sizeof *SHAPES; li++) {
        const struct layer_shape *l = &SHAPES[li];
        for (size_t ci = 0; ci < sizeof CASES / sizeof *CASES; ci++) {
            const struct bench_case *c = &CASES[ci];
            struct attn_bufs b;
            if (argc == 5 && (strcmp(argv[1], l->what) || atoi(argv[2]) != c->streams || atoi(argv[3]) != c->ctx ||
                              atoi(argv[4]) != c->rows))
                continue;
            bufs_make(&b, l, c, KERN_ATTN_NARROW);
            struct layer_run run = {&b, l, s};
            double us = bench_cuda_median_us(layer_launch, &run, b.copies, LAUNCHES, s);
            int seen = l->is_full || c->ctx < l->window ? c->ctx : l->window;
            double bytes = 2.0 * c->streams * (double)seen * l->n_kv * l->D * 2;
            printf("| %s | %d | %d | %d | %d | %.1f | %.1f | %.0f | %.0f |\n", l->what, c->streams, c->ctx, c->rows,
                   kern_attention_groups(b.n_tiles_host, l->n_kv, l->D, KERN_ATTN_NARROW), us, bytes / 1e6, bytes / (us * 1e-6) / 1e9,
                   100.0 * bytes / (us * 1e-6) / rate);
            fflush(stdout);
            bufs_free(&b);
        }
    }
    printf("\n| layer | prompt rows | context before them | kernel | µs | TFLOP/s |\n|---|---|---|---|---|---|\n");
    for (size_t li = 0; li < sizeof SHAPES / sizeof *SHAPES; li++) {
        const struct layer_shape *l = &SHAPES[li];
        for (size_t ci = 0; ci < sizeof PROMPT_CASES / sizeof *PROMPT_CASES; ci++) {
            const struct bench_case *c = &PROMPT_CASES[ci];
            if (argc == 5 && (strcmp(argv[1], l->what) || atoi(argv[2]) != c->streams || atoi(argv[3]) != c->ctx ||
                              atoi(argv[4]) != c->rows))
                continue;
            double keys = 0; /* visible (row, key) pairs */
            for (int i = 0; i < c->rows; i++) {
                int p = c->ctx + i;
                keys += l->is_full || p + 1 < l->window ? p + 1 : l->window;
            }
            int was = kern_attention_wg();
            for (int wg = 0; wg <= 1; wg++) {
                struct attn_bufs b;
                kern_set_attention_wg(wg);
                bufs_make(&b, l, c, KERN_ATTN_PROMPT);
                struct layer_run run = {&b, l, s};
                double us = bench_cuda_median_us(layer_launch, &run, b.copies, LAUNCHES, s);
                printf("| %s | %d | %d | %s | %.1f | %.1f |\n", l->what, c->rows, c->ctx,
                       wg ? "warpgroups (attention_wg.cu)" : "8 warps (attention.cu)", us,
                       4.0 * l->D * l->n_heads * keys / (us * 1e-6) / 1e12);
                fflush(stdout);
                bufs_free(&b);
            }
            kern_set_attention_wg(was);
        }
    }
    BENCH_CUDA_CHECK(cudaStreamDestroy(s));
    return 0;
}
#else
int main(void)
{
    printf("bench_cuda_attention: built without CUDA; nothing to measure\n");
    return 0;
}
#endif
