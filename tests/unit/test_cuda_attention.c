/* The attention kernels against each other and against double precision on the host. Skips, saying so, where
 * there is no GPU (CI).
 *
 * One stream's prompt chunk of R rows at context ctx (its own keys from the step's k_new/v_new, older ones from
 * the cache ring at slot pos % cap, the ring wrapped), random bf16 queries, keys and values, at the 12B's
 * sliding (head dim 256, 16 query heads over 8, window 1,024) and full (512, 16 over 1) layers and the wide
 * model's full one (512, 8 over 1), with an image block in the chunk under both mask rules: every way
 * kern_attention can run a pass must give the same bits for every row (kernels.h, "the mode never changes a
 * bit") — attention.cu's 8-warp kernel (also with its keys and values by tensor boxes), the warpgroup
 * prompt kernel (attention_wg.cu; also with its outputs by mma.sync steps, which tells a wrong N-major
 * wgmma step from the rest), attention.cu's 4-warp decode kernel, and the warpgroup kernel with its
 * partials over 4 and 16 CTAs and merged — and the outputs of a
 * sample of rows must be within bf16 rounding of a double-precision softmax over the same bf16 inputs (so
 * kernels that agree but are wrong fail too). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#ifdef G4_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels.h"
#include "test_cuda.h"
#include "util/util.h"

#define CK(call) EXPECTF((call) == cudaSuccess, "%s", #call)

/* A chunk: R rows from position ctx; rows [20, 60) an image block where image is set. */
struct attn_case {
    const char *what;
    int D, n_heads, n_kv, is_full, window, R, ctx, image, mask_all;
};

static const struct attn_case CASES[] = {
    {"12B sliding, first chunk", 256, 16, 8, 0, 1024, 300, 0, 0, 0},
    {"12B sliding, chunk at 1,500 (ring wrapped)", 256, 16, 8, 0, 1024, 300, 1500, 0, 0},
    {"12B full, chunk at 700", 512, 16, 1, 1, 0, 200, 700, 0, 0},
    {"wide full, image block", 512, 8, 1, 1, 0, 150, 100, 1, 0},
    {"12B sliding, image block, mask_all", 256, 16, 8, 0, 1024, 150, 100, 1, 1},
    {"12B full, image block, mask_all", 512, 16, 1, 1, 0, 150, 100, 1, 1},
};

/* The ways a pass can run: a mode, the warpgroup kernel on or off (and its outputs by mma.sync steps, a
 * diagnostic), the partials forced over CTAs or not. The first is the reference the others must equal. */
struct attn_way {
    const char *what;
    int mode, wg, pv_mma, boxes, groups;
};

static const struct attn_way WAYS[] = {
    {"prompt, 8-warp kernel", KERN_ATTN_PROMPT, 0, 0, 0, 0},
    {"prompt, warpgroup kernel", KERN_ATTN_PROMPT, 1, 0, 0, 0},
    {"prompt, warpgroup kernel, outputs by mma.sync", KERN_ATTN_PROMPT, 1, 1, 0, 0},
    {"prompt, 8-warp kernel, tensor boxes", KERN_ATTN_PROMPT, 0, 0, 1, 0},
    {"wide (8 warps)", KERN_ATTN_WIDE, 1, 0, 0, 0},
    {"narrow (4-warp decode kernel)", KERN_ATTN_NARROW, 1, 0, 0, 0},
    {"prompt, warpgroup kernel, partials over 4 CTAs", KERN_ATTN_PROMPT, 1, 0, 0, 4},
    {"prompt, warpgroup kernel, partials over 16 CTAs", KERN_ATTN_PROMPT, 1, 0, 0, 16},
};
#define N_WAYS ((int)(sizeof WAYS / sizeof *WAYS))

/* The inputs of a case on the host and the device. */
struct attn_data {
    int cap, kvd, qd;
    uint16_t *q, *k_new, *v_new, *cache_k, *cache_v;                 /* host */
    uint16_t *d_q, *d_k_new, *d_v_new, *d_cache_k, *d_cache_v, *d_out; /* device */
    struct kern_row *meta, *d_meta;
    struct kern_tile *d_tiles;
    int *d_n_tiles;
    float *d_part_acc, *d_part_ml;
};

static uint16_t *rand_bf16(size_t n, double scale)
{
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16((float)(test_uniform() * scale));
    return h;
}

static void *upload(const void *host, size_t bytes)
{
    void *d = NULL;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void data_make(struct attn_data *a, const struct attn_case *c)
{
    memset(a, 0, sizeof *a);
    a->kvd = c->n_kv * c->D, a->qd = c->n_heads * c->D;
    /* the ring holds more than a sliding layer sees, less than the context: chunks past it wrap */
    a->cap = c->is_full ? c->ctx + 64 : c->window + 63;
    a->q = rand_bf16((size_t)c->R * a->qd, 0.25);
    a->k_new = rand_bf16((size_t)c->R * a->kvd, 1.0);
    a->v_new = rand_bf16((size_t)c->R * a->kvd, 1.0);
    a->cache_k = rand_bf16((size_t)a->cap * a->kvd, 1.0);
    a->cache_v = rand_bf16((size_t)a->cap * a->kvd, 1.0);
    a->meta = calloc((size_t)c->R, sizeof *a->meta);
    for (int i = 0; i < c->R; i++) {
        struct kern_row *m = &a->meta[i];
        m->stream = 0, m->pos = c->ctx + i, m->pos0 = c->ctx, m->base = 0, m->item_end = c->R;
        m->block = c->image && i >= 20 && i < 60 ? 0 : -1;
    }
    a->d_q = upload(a->q, (size_t)c->R * a->qd * 2);
    a->d_k_new = upload(a->k_new, (size_t)c->R * a->kvd * 2);
    a->d_v_new = upload(a->v_new, (size_t)c->R * a->kvd * 2);
    a->d_cache_k = upload(a->cache_k, (size_t)a->cap * a->kvd * 2);
    a->d_cache_v = upload(a->cache_v, (size_t)a->cap * a->kvd * 2);
    a->d_meta = upload(a->meta, (size_t)c->R * sizeof *a->meta);
    CK(cudaMalloc((void **)&a->d_out, (size_t)c->R * a->qd * 2));
    CK(cudaMalloc((void **)&a->d_tiles, (size_t)c->R * sizeof(struct kern_tile)));
    CK(cudaMalloc((void **)&a->d_n_tiles, sizeof(int)));
    CK(cudaMalloc((void **)&a->d_part_acc, (size_t)c->R * c->n_heads * KERN_ATTN_PARTIALS * c->D * sizeof(float)));
    CK(cudaMalloc((void **)&a->d_part_ml, (size_t)c->R * c->n_heads * KERN_ATTN_PARTIALS * 2 * sizeof(float)));
}

static void data_free(struct attn_data *a)
{
    void *h[] = {a->q, a->k_new, a->v_new, a->cache_k, a->cache_v, a->meta};
    void *d[] = {a->d_q, a->d_k_new, a->d_v_new, a->d_cache_k, a->d_cache_v, a->d_out, a->d_meta, a->d_tiles,
                 a->d_n_tiles, a->d_part_acc, a->d_part_ml};
    for (size_t i = 0; i < sizeof h / sizeof *h; i++) free(h[i]);
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) CK(cudaFree(d[i]));
}

/* The outputs (R, n_heads, D) bf16 of case c run way w, into out. */
static void run_way(const struct attn_case *c, struct attn_data *a, const struct attn_way *w, uint16_t *out,
                    cudaStream_t s)
{
    int was_wg = kern_attention_wg();
    kern_set_attention_wg(w->wg);
    kern_set_attention_wg_pv_mma(w->pv_mma);
    kern_set_attention_prompt_boxes(w->boxes);
    kern_attention_force_partial_groups(w->groups);
    int rows = kern_attention_tile_rows(c->D, c->n_heads / c->n_kv, w->mode), n = 0;
    struct kern_tile *tiles = calloc((size_t)c->R, sizeof *tiles);
    for (int r = 0; r < c->R; r += rows, n++) tiles[n].row0 = r, tiles[n].nrows = c->R - r < rows ? c->R - r : rows;
    CK(cudaMemcpy(a->d_tiles, tiles, (size_t)n * sizeof *tiles, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(a->d_n_tiles, &n, sizeof n, cudaMemcpyHostToDevice));
    CK(cudaMemset(a->d_out, 0xff, (size_t)c->R * a->qd * 2));
    int merge = kern_attention(a->d_q, a->d_k_new, a->d_v_new, a->d_cache_k, a->d_cache_v, a->d_meta, a->d_tiles,
                               a->d_n_tiles, n, n, c->R, c->n_heads, c->n_kv, c->D, a->cap, c->is_full, c->window,
                               c->mask_all, w->mode, a->d_part_acc, a->d_part_ml, a->d_out, s);
    if (merge) kern_attention_merge(a->d_part_acc, a->d_part_ml, c->R, c->n_heads, c->D, a->d_out, NULL, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(out, a->d_out, (size_t)c->R * a->qd * 2, cudaMemcpyDeviceToHost));
    kern_attention_force_partial_groups(0);
    kern_set_attention_wg_pv_mma(0);
    kern_set_attention_prompt_boxes(0);
    kern_set_attention_wg(was_wg);
    free(tiles);
}

/* Whether row i may see key position kp (attention.cu's mask). */
static int visible(const struct attn_case *c, const struct kern_row *meta, int i, int kp)
{
    int p = c->ctx + i, blk = meta[i].block;
    int same = blk >= 0 && kp >= c->ctx && kp < c->ctx + c->R && meta[kp - c->ctx].block == blk;
    int W = c->window;
    int vis = c->is_full ? (kp <= p || (same && c->mask_all))
                         : (c->mask_all ? ((kp > p - W && kp <= p) || same) : (kp > p - W && (kp <= p || same)));
    return vis && kp >= 0 && kp < c->ctx + c->R;
}

/* Row i, head h's output in double, and for each dimension the scale of its terms (the weighted mean of |v|),
 * for the tolerance. */
static void reference(const struct attn_case *c, const struct attn_data *a, int i, int h, double *out, double *scale)
{
    int kvh = h / (c->n_heads / c->n_kv), n = c->ctx + c->R;
    double *sc = malloc((size_t)n * sizeof *sc), mx = -INFINITY, sum = 0.0;
    const uint16_t *qv = a->q + ((size_t)i * c->n_heads + h) * c->D;
    for (int kp = 0; kp < n; kp++) {
        sc[kp] = -INFINITY;
        if (!visible(c, a->meta, i, kp)) continue;
        const uint16_t *k = kp >= c->ctx ? a->k_new + (size_t)(kp - c->ctx) * a->kvd : a->cache_k + (size_t)(kp % a->cap) * a->kvd;
        double s = 0.0;
        for (int d = 0; d < c->D; d++) s += (double)bf16_to_f32(qv[d]) * bf16_to_f32(k[kvh * c->D + d]);
        sc[kp] = s;
        mx = s > mx ? s : mx;
    }
    for (int d = 0; d < c->D; d++) out[d] = scale[d] = 0.0;
    for (int kp = 0; kp < n; kp++) {
        if (sc[kp] == -INFINITY) continue;
        double p = exp(sc[kp] - mx);
        const uint16_t *v = kp >= c->ctx ? a->v_new + (size_t)(kp - c->ctx) * a->kvd : a->cache_v + (size_t)(kp % a->cap) * a->kvd;
        for (int d = 0; d < c->D; d++) {
            out[d] += p * bf16_to_f32(v[kvh * c->D + d]);
            scale[d] += p * fabs(bf16_to_f32(v[kvh * c->D + d]));
        }
        sum += p;
    }
    for (int d = 0; d < c->D; d++) out[d] /= sum, scale[d] /= sum;
    free(sc);
}

static void check_case(const struct attn_case *c, cudaStream_t s)
{
    struct attn_data a;
    data_make(&a, c);
    size_t n = (size_t)c->R * a.qd;
    uint16_t *first = malloc(n * 2), *other = malloc(n * 2);
    int all_same = 1;
    run_way(c, &a, &WAYS[0], first, s);
    for (int w = 1; w < N_WAYS; w++) {
        run_way(c, &a, &WAYS[w], other, s);
        size_t differ = 0, at = 0;
        for (size_t e = 0; e < n; e++)
            if (first[e] != other[e] && !differ++) at = e;
        all_same &= differ == 0;
        EXPECTF(differ == 0, "%s: %s differs from %s in %zu of %zu outputs, first at row %zu head %zu dim %zu",
                c->what, WAYS[w].what, WAYS[0].what, differ, n, at / a.qd, at % a.qd / c->D, at % c->D);
    }
    /* a sample of rows against double precision: the first, one in the image block, the middle, the last */
    int rows[] = {0, 30, c->R / 2, c->R - 1};
    double worst = 0.0, *ref = malloc((size_t)c->D * sizeof *ref), *scale = malloc((size_t)c->D * sizeof *scale);
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (int h = 0; h < c->n_heads; h++) {
            reference(c, &a, rows[r], h, ref, scale);
            for (int d = 0; d < c->D; d++) {
                double got = bf16_to_f32(first[((size_t)rows[r] * c->n_heads + h) * c->D + d]);
                /* the output's bf16 rounding (2^-9 relative), and the weights' (2^-9 each) on the mean |v|: twice */
                double err = fabs(got - ref[d]) / (fabs(ref[d]) * 0x1p-8 + scale[d] * 0x1p-8 + 1e-6);
                worst = err > worst ? err : worst;
            }
        }
    EXPECTF(worst <= 1.0, "%s: outputs off double precision by %.2f of the bf16 tolerance", c->what, worst);
    printf("  %-45s %d rows: %d ways bit-identical: %s; sampled rows within %.2f of the bf16 tolerance\n", c->what,
           c->R, N_WAYS, all_same ? "yes" : "NO", worst);
    free(ref);
    free(scale);
    free(first);
    free(other);
    data_free(&a);
}

static void test_cases(void)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) check_case(&CASES[i], s);
    CK(cudaStreamDestroy(s));
}

int main(void)
{
    char why[256];
    if (!test_gpu_present(why, sizeof why)) return test_skip_no_gpu("test_cuda_attention: no usable GPU here (%s)", why);
    RUN_TEST(test_cases);
    return test_report();
}

#else

int main(void)
{
    return test_skip_no_gpu("test_cuda_attention: built without CUDA (no nvcc)");
}

#endif
