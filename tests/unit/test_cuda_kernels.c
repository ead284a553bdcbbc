/* CUDA kernels against references on the host. Skips, saying so, where there is no GPU (CI).
 *
 * Matrix products at the 12B's and 31B's real shapes: the decode kernel (kern_gemm_skinny, M <= 64) and the
 * prompt kernel (kern_gemm_bf16) must give bit-identical rows, whatever M is and whichever kernel runs
 * (kernels.h, "the reduction rule": K segments chosen by N and K only), and both must be within fp32
 * accumulation error of a double-precision product.
 *
 * The draw's candidate selection (kern_topk): for rows with ties, -inf, NaN and suppressed ids, at every k
 * from greedy to KERN_TOPK_MAX and past the number of candidates, with one row under the launch's largest k,
 * in batches of two rows, and at vocabularies of one chunk, two and several levels: exactly the sampler's
 * rank order (a host sort of the rank keys).
 *
 * The product tails (kernels.h): the product with its residual update or q/k/v preparation run by its last
 * CTAs equals the product then the standalone kernel, bit for bit.
 *
 * Shapes: every product of the 12B (q|k|v sliding and full, o sliding and full, gate|up, down), the 31B's
 * segmented ones, a small odd one (K % 32 == 16, N not a multiple of the tile) and the head at 64 rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#ifdef G4_HAVE_CUDA
#include <cuda_runtime.h>

#include "engine/sampler_core.h"
#include "kernels.h"
#include "test_cuda.h"
#include "util/util.h"

#define MAX_M 300

#define CK(call) EXPECTF((call) == cudaSuccess, "%s", #call)

static void check_shape(const struct gemm_shape *sh)
{
    int N = sh->N, K = sh->K, nseg = kern_gemm_segments(N, K);
    size_t nx = (size_t)MAX_M * K, nw = (size_t)N * K, ny = (size_t)MAX_M * N;
    uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *dx, *dw;
    float *hbias = malloc((size_t)N * 4), *ref = malloc(ny * 4), *got = malloc(ny * 4), *dbias, *dy, *dref;
    struct kern_gemm_ws ws = {0};
    long wsf = kern_gemm_ws_floats(MAX_M, N, K);
    static const int Ms[] = {1, 5, 8, 9, 16, 17, 33, 64};
    int exact = 1;
    double worst = 0;
    for (size_t i = 0; i < nx; i++) hx[i] = f32_to_bf16((float)test_uniform());
    for (size_t i = 0; i < nw; i++) hw[i] = f32_to_bf16((float)(test_uniform() * 0.05));
    for (int i = 0; i < N; i++) hbias[i] = (float)test_uniform();
    CK(cudaMalloc((void **)&dx, nx * 2));
    CK(cudaMalloc((void **)&dw, nw * 2));
    CK(cudaMalloc((void **)&dbias, (size_t)N * 4));
    CK(cudaMalloc((void **)&dy, ny * 4));
    CK(cudaMalloc((void **)&dref, ny * 4));
    CK(cudaMalloc((void **)&ws.partial, (size_t)(wsf ? wsf : 1) * 4));
    CK(cudaMalloc((void **)&ws.counters, (size_t)kern_gemm_ws_counters(MAX_M, N) * 4));
    CK(cudaMemset(ws.counters, 0, (size_t)kern_gemm_ws_counters(MAX_M, N) * 4));
    CK(cudaMemcpy(dx, hx, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw, nw * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, hbias, (size_t)N * 4, cudaMemcpyHostToDevice));
    /* the reference rows: the prompt kernel over MAX_M rows */
    kern_gemm_bf16(dx, dw, dbias, dref, NULL, MAX_M, N, K, &ws, NULL);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ref, dref, ny * 4, cudaMemcpyDeviceToHost));
    /* decode kernel at each M in every block shape (variant 0: its own choice), prompt kernel at M = 65 and
     * 130: rows equal to the reference's, bit for bit */
    for (int mi = 0; mi < (int)(sizeof Ms / sizeof *Ms) + 2; mi++) {
        int M = mi < (int)(sizeof Ms / sizeof *Ms) ? Ms[mi] : (mi == (int)(sizeof Ms / sizeof *Ms) ? 65 : 130);
        for (int v = 0; v < (M <= 64 ? KERN_SKINNY_VARIANTS : 1); v++) {
            CK(cudaMemset(dy, 0xff, ny * 4));
            if (M <= 64) kern_gemm_skinny_variant(v, dx, dw, dbias, dy, NULL, M, N, K, &ws, NULL);
            else kern_gemm_bf16(dx, dw, dbias, dy, NULL, M, N, K, &ws, NULL);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(got, dy, (size_t)M * N * 4, cudaMemcpyDeviceToHost));
            if (memcmp(got, ref, (size_t)M * N * 4)) {
                exact = 0;
                EXPECTF(0, "%s: M = %d (%s kernel, variant %d) differs from the 300-row prompt kernel", sh->what, M,
                        M <= 64 ? "decode" : "prompt", v);
            }
        }
    }
    /* against double precision on a few rows */
    for (int r = 0; r < MAX_M; r += 97) {
        double md = 0, mr = 0;
        for (int n = 0; n < N; n++) {
            double acc = hbias[n];
            for (int k = 0; k < K; k++) acc += (double)bf16_to_f32(hx[(size_t)r * K + k]) * bf16_to_f32(hw[(size_t)n * K + k]);
            md = fmax(md, fabs(acc - ref[(size_t)r * N + n]));
            mr = fmax(mr, fabs(acc));
        }
        worst = fmax(worst, md / mr);
    }
    /* fp32 accumulation over K up to 21504: ~1e-5 of the row's largest value; a wrong chunk, segment or order
     * of operands is off by whole terms (1e-2 and more) */
    EXPECTF(worst < 1e-4, "%s: %.3g relative to double precision", sh->what, worst);
    printf("  %-18s N %5d K %5d: %d segment(s); M 1..64 decode (%d block shapes) = M 65, 130 prompt = M 300 "
           "prompt: %s; vs double %.2e\n",
           sh->what, N, K, nseg, KERN_SKINNY_VARIANTS - 1, exact ? "bit-identical" : "DIFFER", worst);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dbias);
    cudaFree(dy);
    cudaFree(dref);
    cudaFree(ws.partial);
    cudaFree(ws.counters);
    free(hx);
    free(hw);
    free(hbias);
    free(ref);
    free(got);
}

static void test_shapes(void)
{
    for (int i = 0; i < N_GEMM_SHAPES; i++) check_shape(&GEMM_SHAPES[i]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One row kind: 0 normal logits, 1 heavy ties (values on a grid of 1/4), 2 with -inf and NaN sprinkled. */
static void fill_row(float *row, int V, int kind)
{
    for (int i = 0; i < V; i++) {
        double u = test_uniform();
        float x = (float)(u * 8.0);
        if (kind == 1) x = (float)(floor(u * 16.0) / 4.0);
        if (kind == 2 && i % 7 == 3) x = -INFINITY;
        if (kind == 2 && i % 11 == 5) x = NAN;
        row[i] = x;
    }
}

static void check_topk(int V, int k)
{
    enum { ROWS = 6 };
    struct kern_select_row sel[ROWS];
    float *h = malloc((size_t)ROWS * V * 4), *d, *dl, *got_l = malloc((size_t)ROWS * KERN_TOPK_MAX * 4);
    int32_t *di, *dn, *got_i = malloc((size_t)ROWS * KERN_TOPK_MAX * 4), got_n[ROWS];
    uint64_t *keys = malloc((size_t)V * 8);
    struct kern_select_row *dsel;
    uint64_t *dws = NULL;
    size_t ws_keys = kern_topk_ws_keys(V, 2, k); /* two rows a batch: the six run in three */
    int bad = 0;
    for (int r = 0; r < ROWS; r++) {
        fill_row(h + (size_t)r * V, V, r % 3);
        sel[r].k = r == 4 && k > 1 ? k / 2 : k; /* a row under the launch's largest k */
        sel[r].n_supp = r < 3 ? 0 : 3;
        sel[r].supp[0] = 5;
        sel[r].supp[1] = V / 2;
        sel[r].supp[2] = V - 1;
    }
    CK(cudaMalloc((void **)&d, (size_t)ROWS * V * 4));
    CK(cudaMalloc((void **)&dl, (size_t)ROWS * KERN_TOPK_MAX * 4));
    CK(cudaMalloc((void **)&di, (size_t)ROWS * KERN_TOPK_MAX * 4));
    CK(cudaMalloc((void **)&dn, ROWS * 4));
    CK(cudaMalloc((void **)&dsel, sizeof sel));
    if (ws_keys) CK(cudaMalloc((void **)&dws, ws_keys * 8));
    CK(cudaMemcpy(d, h, (size_t)ROWS * V * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsel, sel, sizeof sel, cudaMemcpyHostToDevice));
    CK(cudaMemset(dn, 0xff, ROWS * 4)); /* every count must be written */
    kern_topk(d, V, dsel, ROWS, k, dws, ws_keys, di, dl, dn, NULL);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got_i, di, (size_t)ROWS * KERN_TOPK_MAX * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got_l, dl, (size_t)ROWS * KERN_TOPK_MAX * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got_n, dn, sizeof got_n, cudaMemcpyDeviceToHost));
    for (int r = 0; r < ROWS && !bad; r++) {
        const float *row = h + (size_t)r * V;
        int n = 0, want;
        for (int i = 0; i < V; i++) {
            int sup = 0;
            for (int j = 0; j < sel[r].n_supp; j++) sup |= sel[r].supp[j] == i;
            if (row[i] > -INFINITY && !sup) keys[n++] = ((uint64_t)samp_core_desc_key(row[i]) << 32) | (uint32_t)i;
        }
        qsort(keys, (size_t)n, 8, cmp_u64);
        want = n < sel[r].k ? n : sel[r].k;
        if (got_n[r] != want) {
            EXPECTF(0, "V %d k %d row %d: %d candidates, want %d", V, k, r, got_n[r], want);
            bad = 1;
            break;
        }
        for (int j = 0; j < want; j++) {
            int32_t id = (int32_t)(keys[j] & 0xffffffffu);
            float x = samp_core_key_logit((uint32_t)(keys[j] >> 32));
            if (got_i[(size_t)r * KERN_TOPK_MAX + j] != id || memcmp(&got_l[(size_t)r * KERN_TOPK_MAX + j], &x, 4)) {
                EXPECTF(0, "V %d k %d row %d rank %d: device id %d logit %g, host id %d logit %g", V, k, r, j,
                        got_i[(size_t)r * KERN_TOPK_MAX + j], got_l[(size_t)r * KERN_TOPK_MAX + j], id, x);
                bad = 1;
                break;
            }
        }
    }
    printf("  topk V %6d k %4d: 6 rows (plain, ties, -inf/NaN; with and without suppressed ids): %s\n", V, k,
           bad ? "DIFFER" : "rank order exact");
    cudaFree(d);
    cudaFree(dl);
    cudaFree(di);
    cudaFree(dn);
    cudaFree(dsel);
    cudaFree(dws);
    free(h);
    free(got_l);
    free(got_i);
    free(keys);
}

static void test_topk(void)
{
    static const int ks[] = {1, 2, 64, 500, 512, 1000, 1024};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) check_topk(512, ks[i]);
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) check_topk(262144, ks[i]);
    check_topk(5000, 64);   /* two chunks, the last one short */
    check_topk(20000, 1024); /* three levels: 5 chunks, then 2, then 1 */
}

/* The rule is a function of (N, K): what the 12B's products get (a change here changes every result). */
/* ---- product tails (kernels.h): the product with its tail against the product then the standalone kernel,
 * bit for bit, at every row count the tail takes (the limits raised to 3 and 5 rows for the test, so that the
 * loops over rows run), twice in a row (the counters reset), and the tail refused past the limits. */

static void *dev_upload(const void *host, size_t bytes)
{
    void *d = NULL;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void *dev_bf16(size_t n, double scale)
{
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16((float)(test_uniform() * scale));
    void *d = dev_upload(h, n * 2);
    free(h);
    return d;
}

static void *dev_f32(size_t n, double scale, double offset)
{
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (float)(test_uniform() * scale + offset);
    void *d = dev_upload(h, n * 4);
    free(h);
    return d;
}

/* 1 when the n bytes at device a and b are equal. */
static int dev_same(const void *a, const void *b, size_t n)
{
    unsigned char *ha = malloc(n), *hb = malloc(n);
    CK(cudaMemcpy(ha, a, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb, b, n, cudaMemcpyDeviceToHost));
    int same = !memcmp(ha, hb, n);
    free(ha);
    free(hb);
    return same;
}

static struct kern_gemm_ws tail_ws(int N, int K, int **tail_counters)
{
    struct kern_gemm_ws ws = {0};
    long f = kern_gemm_ws_floats(64, N, K);
    CK(cudaMalloc((void **)&ws.partial, (size_t)(f ? f : 1) * 4));
    CK(cudaMalloc((void **)&ws.counters, (size_t)kern_gemm_ws_counters(64, N) * 4));
    CK(cudaMemset(ws.counters, 0, (size_t)kern_gemm_ws_counters(64, N) * 4));
    CK(cudaMalloc((void **)tail_counters, KERN_TAIL_COUNTERS * 4));
    CK(cudaMemset(*tail_counters, 0, KERN_TAIL_COUNTERS * 4));
    return ws;
}

static void check_residual_tail(const char *what, int N, int K, int with_next)
{
    const int max_m = kern_tail_rows(KERN_TAIL_RESIDUAL);
    int *tc, exact = 1;
    struct kern_gemm_ws ws = tail_ws(N, K, &tc);
    uint16_t *x = dev_bf16((size_t)(max_m + 1) * K, 1.0), *w = dev_bf16((size_t)N * K, 0.05), *xn_a, *xn_b;
    float *norm = dev_f32(N, 0.5, 1.0), *next = dev_f32(N, 0.5, 1.0), *res0 = dev_f32((size_t)(max_m + 1) * N, 4.0, 0);
    float *res_a, *res_b, *t_a, *t_b;
    size_t rb = (size_t)(max_m + 1) * N * 4;
    CK(cudaMalloc((void **)&res_a, rb));
    CK(cudaMalloc((void **)&res_b, rb));
    CK(cudaMalloc((void **)&t_a, rb));
    CK(cudaMalloc((void **)&t_b, rb));
    CK(cudaMalloc((void **)&xn_a, rb / 2));
    CK(cudaMalloc((void **)&xn_b, rb / 2));
    for (int M = 1; M <= max_m + 1; M++) {
        CK(cudaMemcpy(res_a, res0, rb, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(res_b, res0, rb, cudaMemcpyDeviceToDevice));
        CK(cudaMemset(xn_a, 0, rb / 2));
        CK(cudaMemset(xn_b, 0, rb / 2));
        struct kern_tail tl = {.kind = KERN_TAIL_RESIDUAL, .counters = tc, .eps = 1e-6f, .x = res_b, .w = norm,
                               .w_next = with_next ? next : NULL, .scalar = 0.75f, .xn16 = xn_b};
        for (int rep = 0; rep < 2; rep++) { /* twice: the residual applies twice, by both paths */
            kern_gemm(x, w, NULL, t_a, NULL, M, N, K, &ws, NULL);
            kern_residual_norm_add(res_a, t_a, norm, 1e-6f, 0.75f, with_next ? next : NULL, xn_a, M, N, NULL);
            int took = kern_gemm_tail(x, w, t_b, M, N, K, &ws, &tl, NULL);
            EXPECTF(took == (M <= max_m), "%s: M = %d: tail %s", what, M, took ? "taken past the limit" : "refused");
            if (!took) kern_residual_norm_add(res_b, t_b, norm, 1e-6f, 0.75f, with_next ? next : NULL, xn_b, M, N, NULL);
        }
        CK(cudaDeviceSynchronize());
        if (!dev_same(res_a, res_b, (size_t)M * N * 4) || !dev_same(xn_a, xn_b, (size_t)M * N * 2) ||
            !dev_same(t_a, t_b, (size_t)M * N * 4)) {
            exact = 0;
            EXPECTF(0, "%s: M = %d: the residual tail differs from kern_residual_norm_add", what, M);
        }
    }
    printf("  residual tail, %-16s N %5d K %5d%s: M 1..%d = product + kern_residual_norm_add: %s\n", what, N, K,
           with_next ? " + next norm" : "", max_m, exact ? "bit-identical" : "DIFFER");
    void *bufs[] = {x, w, norm, next, res0, res_a, res_b, t_a, t_b, xn_a, xn_b, ws.partial, ws.counters, tc};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) cudaFree(bufs[i]);
}

static void check_qkv_tail(const char *what, int n_heads, int n_kv, int D, int k_eq_v, int H)
{
    const int max_m = kern_tail_rows(KERN_TAIL_QKV_PREP), qd = n_heads * D, kvd = n_kv * D;
    const int N = qd + (k_eq_v ? 1 : 2) * kvd, v_off = k_eq_v ? qd : qd + kvd, rows = max_m + 1;
    int *tc, exact = 1;
    struct kern_gemm_ws ws = tail_ws(N, H, &tc);
    uint16_t *x = dev_bf16((size_t)rows * H, 1.0), *w = dev_bf16((size_t)N * H, 0.05);
    float *qn = dev_f32(D, 0.5, 1.0), *kn = dev_f32(D, 0.5, 1.0), *y_a, *y_b, *freq;
    float *hf = malloc((size_t)D / 2 * 4);
    struct kern_row meta[8];
    for (int i = 0; i < D / 2; i++) hf[i] = i < D / 8 ? powf(10000.0f, -2.0f * (float)i / (float)D) : 0.0f; /* some pairs still */
    freq = dev_upload(hf, (size_t)D / 2 * 4);
    for (int r = 0; r < rows; r++) meta[r] = (struct kern_row){.stream = r, .pos = 37 + 901 * r, .pos0 = 37 + 901 * r, .base = r, .block = -1, .item_end = r + 1};
    struct kern_row *dmeta = dev_upload(meta, sizeof meta);
    uint16_t *out_a[3], *out_b[3];
    size_t ob[3] = {(size_t)rows * qd * 2, (size_t)rows * kvd * 2, (size_t)rows * kvd * 2};
    for (int i = 0; i < 3; i++) {
        CK(cudaMalloc((void **)&out_a[i], ob[i]));
        CK(cudaMalloc((void **)&out_b[i], ob[i]));
    }
    CK(cudaMalloc((void **)&y_a, (size_t)rows * N * 4));
    CK(cudaMalloc((void **)&y_b, (size_t)rows * N * 4));
    for (int M = 1; M <= rows; M++) {
        for (int i = 0; i < 3; i++) {
            CK(cudaMemset(out_a[i], 0, ob[i]));
            CK(cudaMemset(out_b[i], 0x7f, ob[i]));
        }
        struct kern_tail tl = {.kind = KERN_TAIL_QKV_PREP, .counters = tc, .eps = 1e-6f, .k_off = qd, .v_off = v_off,
                               .n_heads = n_heads, .n_kv = n_kv, .D = D, .q_norm = qn, .k_norm = kn, .inv_freq = freq,
                               .meta = dmeta, .q_out = out_b[0], .k_out = out_b[1], .v_out = out_b[2]};
        kern_gemm(x, w, NULL, y_a, NULL, M, N, H, &ws, NULL);
        kern_qkv_prep(y_a, N, qd, v_off, qn, kn, freq, dmeta, 1e-6f, M, n_heads, n_kv, D, out_a[0], out_a[1], out_a[2], NULL);
        for (int rep = 0; rep < 2; rep++) {
            int took = kern_gemm_tail(x, w, y_b, M, N, H, &ws, &tl, NULL);
            EXPECTF(took == (M <= max_m), "%s: M = %d: tail %s", what, M, took ? "taken past the limit" : "refused");
            if (!took) kern_qkv_prep(y_b, N, qd, v_off, qn, kn, freq, dmeta, 1e-6f, M, n_heads, n_kv, D, out_b[0],
                                     out_b[1], out_b[2], NULL);
        }
        CK(cudaDeviceSynchronize());
        for (int i = 0; i < 3; i++)
            if (!dev_same(out_a[i], out_b[i], (size_t)M * ob[i] / rows)) {
                exact = 0;
                EXPECTF(0, "%s: M = %d: the q|k|v tail's %s differ from kern_qkv_prep's", what, M, i == 0 ? "queries" : i == 1 ? "keys" : "values");
            }
    }
    printf("  q|k|v tail, %-18s %2d heads, %d kv, D %d%s: M 1..%d = product + kern_qkv_prep: %s\n", what, n_heads,
           n_kv, D, k_eq_v ? ", K = V" : "", max_m, exact ? "bit-identical" : "DIFFER");
    void *bufs[] = {x, w, qn, kn, freq, dmeta, y_a, y_b, ws.partial, ws.counters, tc};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) cudaFree(bufs[i]);
    for (int i = 0; i < 3; i++) cudaFree(out_a[i]), cudaFree(out_b[i]);
    free(hf);
}

static void test_tails(void)
{
    check_residual_tail("12B o sliding", 3840, 4096, 1);
    check_residual_tail("12B down", 3840, 15360, 1);
    check_residual_tail("12B down, last", 3840, 15360, 0);
    check_residual_tail("31B o sliding", 5376, 8192, 1);
    check_qkv_tail("12B sliding", 16, 8, 256, 0, 3840);
    check_qkv_tail("12B full", 16, 1, 512, 1, 3840);
    check_qkv_tail("31B full", 32, 4, 512, 1, 5376);
}

static void test_segment_rule(void)
{
    EXPECT(kern_gemm_segments(8192, 3840) == 2);
    EXPECT(kern_gemm_segments(8704, 3840) == 2);
    EXPECT(kern_gemm_segments(3840, 4096) == 4);
    EXPECT(kern_gemm_segments(3840, 15360) == 4);
    EXPECT(kern_gemm_segments(30720, 3840) == 1);
    EXPECT(kern_gemm_segments(262144, 3840) == 1);
    EXPECT(kern_gemm_segments(100, 48) == 1);
}

int main(void)
{
    char why[256];
    RUN_TEST(test_segment_rule);
    if (!test_gpu_present(why, sizeof why)) return test_skip_no_gpu("test_cuda_kernels: no usable GPU here (%s)", why);
    RUN_TEST(test_topk);
    RUN_TEST(test_shapes);
    setenv("G4_CUDA_TAIL_ROWS_RESIDUAL", "3", 1); /* before the first kern_tail_rows: the limits tested */
    setenv("G4_CUDA_TAIL_ROWS_QKV", "5", 1);
    RUN_TEST(test_tails);
    return test_report();
}

#else

int main(void)
{
    return test_skip_no_gpu("test_cuda_kernels: built without CUDA (no nvcc)");
}

#endif
