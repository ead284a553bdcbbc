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
 * Shapes: every product of the 12B (q|k|v sliding and full, o sliding and full, gate|up, down), the 31B's
 * segmented ones, a small odd one (K % 32 == 16, N not a multiple of the tile) and the head at 64 rows. */
#include <math.h>
#include <stdint.h>

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
    return test_report();
}

#else

int main(void)
{
    return test_skip_no_gpu("test_cuda_kernels: built without CUDA (no nvcc)");
}

#endif
