/* The experimental Hopper prompt kernel (kernels/gemm_wgmma.cu) against the kernels in use. Skips, saying so,
 * where there is no GPU (CI) or no CUDA build.
 *
 * Bits: at the 12B's and 31B's real shapes and M from 1 to 1000, every row of kern_gemm_wgmma must equal,
 * bit for bit, the same row from the decode kernel (kern_gemm_skinny, M <= 64) or the prompt kernel
 * (kern_gemm_bf16, M > 64) — the reduction rule of kernels.h — and four rows of the 1000-row product must be
 * within fp32 accumulation error of a double-precision product (so a kernel that is consistent but wrong
 * fails too). Rows past M stay untouched, and the arrival counters are back to zero afterwards. All six
 * variants (gemm_wgmma.cu, head comment: 0 unswizzled, 1 the 128-byte swizzle, 2 the same 128 wide, 3 128 wide
 * with a tile's segments run in order by one CTA; gemm_tma.cu: 4 and 5, variants 1 and 3 with the stages
 * filled by tensor copies from a producer warp) are run and asserted.
 *
 * GeGLU: at three gate|up shapes (one segment, two, and K = 96 where the mma.sync kernel runs) every kernel's
 * fused GeGLU output h must equal the decode/prompt kernel's bit for bit, and that within bf16 rounding of
 * GeGLU in double of the unfused product (so a wrong column pairing fails).
 *
 * Speed: a markdown table of TFLOP/s of kern_gemm_bf16, every wgmma variant and cuBLAS (a ceiling: no bias, its
 * own reduction order) at the 12B's shapes, M = 512 .. 8192. Printed, never asserted. */
#include <math.h>
#include <stdint.h>

#include "test.h"

#ifdef G4_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels.h"
#include "test_cuda.h"
#include "util/util.h"

/* gemm_wgmma.cu's launcher of one variant (0: unswizzled core matrices, 1: the 128-byte swizzle, 2: the same
 * 128 wide, 3: 128 wide, segments in one CTA, 4 and 5: 1 and 3 by tensor copies). Not in kernels.h: only this
 * test chooses one. */
void kern_gemm_wgmma_variant(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                             uint16_t *h, int M, int N, int K, const struct kern_gemm_ws *ws, kern_stream s);

#define MAX_M 1000
#define VARIANTS 6

static const int MS[] = {1, 7, 64, 65, 130, 300, 1000}; /* 7 and 130 run without a bias */
static const int DOUBLE_ROWS[] = {0, 45, 333, 999};    /* of the 1000-row product: both warpgroups, 4 tiles */
#define N_DOUBLE_ROWS ((int)(sizeof DOUBLE_ROWS / sizeof *DOUBLE_ROWS))

static int variant_exact[VARIANTS] = {1, 1, 1, 1, 1, 1}; /* every wgmma shape bit-identical and close to double */

static const char *const VARIANT_NAMES[VARIANTS] = {"unswizzled",
                                                     "128-byte swizzle",
                                                     "swizzled, 128 wide",
                                                     "128 wide, segments in one CTA",
                                                     "tensor copies, 256 wide",
                                                     "tensor copies, 128 wide, segments in one CTA"};

#define CK(call) EXPECTF((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

/* Elements whose bits differ, and the largest absolute difference among them (inf where one is NaN). */
static long count_diff(const float *a, const float *b, size_t n, double *max_abs)
{
    long d = 0;
    for (size_t i = 0; i < n; i++) {
        if (!memcmp(&a[i], &b[i], 4)) continue;
        d++;
        double e = isnan(a[i]) || isnan(b[i]) ? INFINITY : fabs((double)a[i] - b[i]);
        if (e > *max_abs) *max_abs = e;
    }
    return d;
}

/* One shape: the reference kernels and every variant at every M; one line per variant. */
static void check_shape(const struct gemm_shape *sh)
{
    int N = sh->N, K = sh->K, nseg = kern_gemm_segments(N, K), fallback = (K / nseg) % 64 != 0;
    int nctr = kern_gemm_ws_counters(MAX_M, N), n_m = (int)(sizeof MS / sizeof *MS);
    size_t nx = (size_t)MAX_M * K, nw = (size_t)N * K, ny = (size_t)MAX_M * N;
    long wsf = kern_gemm_ws_floats(MAX_M, N, K);
    uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *dx = NULL, *dw = NULL;
    float *hbias = malloc((size_t)N * 4), *ref = malloc(ny * 4), *got = malloc(ny * 4), *tail = malloc((size_t)N * 4);
    float *dbias = NULL, *dy = NULL, *dref = NULL;
    double *dbl = malloc((size_t)N_DOUBLE_ROWS * N * sizeof(double));
    int *hctr = malloc((size_t)nctr * 4);
    struct kern_gemm_ws ws = {0};
    for (size_t i = 0; i < nx; i++) hx[i] = f32_to_bf16((float)test_uniform());
    for (size_t i = 0; i < nw; i++) hw[i] = f32_to_bf16((float)(test_uniform() * 0.05));
    for (int i = 0; i < N; i++) hbias[i] = (float)test_uniform();
    for (int q = 0; q < N_DOUBLE_ROWS; q++)
        for (int n = 0; n < N; n++) {
            const uint16_t *xr = hx + (size_t)DOUBLE_ROWS[q] * K, *wr = hw + (size_t)n * K;
            double acc = hbias[n];
            for (int k = 0; k < K; k++) acc += (double)bf16_to_f32(xr[k]) * bf16_to_f32(wr[k]);
            dbl[(size_t)q * N + n] = acc;
        }
    CK(cudaMalloc((void **)&dx, nx * 2));
    CK(cudaMalloc((void **)&dw, nw * 2));
    CK(cudaMalloc((void **)&dbias, (size_t)N * 4));
    CK(cudaMalloc((void **)&dy, ny * 4));
    CK(cudaMalloc((void **)&dref, ny * 4));
    CK(cudaMalloc((void **)&ws.partial, (size_t)(wsf ? wsf : 1) * 4));
    CK(cudaMalloc((void **)&ws.counters, (size_t)nctr * 4));
    CK(cudaMemset(ws.counters, 0, (size_t)nctr * 4));
    CK(cudaMemcpy(dx, hx, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw, nw * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, hbias, (size_t)N * 4, cudaMemcpyHostToDevice));
    for (int v = 0; v < VARIANTS; v++) {
        char line[1024];
        int len = 0, exact = 1, untouched = 1, ctr_zero = 1;
        double worst = 0;
        for (int mi = 0; mi < n_m; mi++) {
            int M = MS[mi];
            const float *b = M == 7 || M == 130 ? NULL : dbias;
            double max_abs = 0;
            long nd;
            CK(cudaMemset(dref, 0xff, ny * 4));
            CK(cudaMemset(dy, 0xff, ny * 4));
            if (M <= 64) kern_gemm_skinny(dx, dw, b, dref, NULL, M, N, K, &ws, NULL);
            else kern_gemm_bf16(dx, dw, b, dref, NULL, M, N, K, &ws, NULL);
            kern_gemm_wgmma_variant(v, dx, dw, b, dy, NULL, M, N, K, &ws, NULL);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(ref, dref, (size_t)M * N * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(got, dy, (size_t)M * N * 4, cudaMemcpyDeviceToHost));
            nd = count_diff(got, ref, (size_t)M * N, &max_abs);
            if (nd) {
                exact = 0;
                len += snprintf(line + len, sizeof line - (size_t)len, " M %d: %ld of %ld differ, max %.3g;", M, nd,
                                (long)M * N, max_abs);
            }
            if (M < MAX_M) { /* row M must be left as it was */
                CK(cudaMemcpy(tail, dy + (size_t)M * N, (size_t)N * 4, cudaMemcpyDeviceToHost));
                for (int n = 0; n < N; n++) untouched &= ((uint32_t *)tail)[n] == 0xffffffffu;
            }
            if (M == MAX_M)
                for (int q = 0; q < N_DOUBLE_ROWS; q++) {
                    double md = 0, mr = 0;
                    for (int n = 0; n < N; n++) {
                        double want = dbl[(size_t)q * N + n], e = fabs(want - got[(size_t)DOUBLE_ROWS[q] * N + n]);
                        md = fmax(md, isnan(e) ? INFINITY : e);
                        mr = fmax(mr, fabs(want));
                    }
                    worst = fmax(worst, md / mr);
                }
        }
        CK(cudaMemcpy(hctr, ws.counters, (size_t)nctr * 4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < nctr; i++) ctr_zero &= hctr[i] == 0;
        if (!(exact && worst < 1e-4 && untouched && ctr_zero) && !fallback) variant_exact[v] = 0;
        printf("  %-18s N %5d K %5d, %d seg, variant %d%s: %s%s; vs double %.2e%s%s\n", sh->what, N, K, nseg, v,
               fallback ? " (segments not whole stages: kern_gemm_bf16 ran)" : "",
               exact ? "M 1..1000 bit-identical" : "DIFFER:", exact ? "" : line, worst,
               untouched ? "" : "; ROWS PAST M WRITTEN", ctr_zero ? "" : "; COUNTERS LEFT NONZERO");
        fflush(stdout);
        EXPECTF(exact, "%s: kern_gemm_wgmma rows differ from the decode/prompt kernels':%s", sh->what, line);
        /* fp32 accumulation over K up to 21504: ~1e-5 of the row's largest value; a wrong chunk, segment or
         * fragment is off by whole terms (1e-2 and more) */
        EXPECTF(worst < 1e-4, "%s: %.3g relative to double precision", sh->what, worst);
        EXPECTF(untouched, "%s: kern_gemm_wgmma wrote rows past M", sh->what);
        EXPECTF(ctr_zero, "%s: arrival counters not reset to zero", sh->what);
    }
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
    free(tail);
    free(dbl);
    free(hctr);
}

/* ---- the gate|up product's GeGLU epilogue (h, kernels.h) ------------------------------------------------- */
/* gate|up products: the 12B's (one segment), the wide test model's (two: the completing CTA's GeGLU), one whose
 * h rows are not whole 16-byte pieces and whose last tile is partly past N (the shared-memory epilogue's
 * element-wise tail) and the tiny fixtures' (K = 96: segments not whole wgmma stages, the mma.sync kernel). */
static const struct gemm_shape GEGLU_SHAPES[] = {{"12B gate|up", 30720, 3840}, {"wide gate|up", 8192, 1024},
                                                 {"ragged gate|up", 4100, 512}, {"tiny gate|up", 384, 96}};

static double geglu_double(double g, double u)
{
    return 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u;
}

/* Every kernel's h at every M bit-identical to the decode/prompt kernel's; that h within bf16 rounding of
 * GeGLU (in double) of the unfused product y, column pairs as the interleave has them; rows past M untouched. */
static void check_geglu(const struct gemm_shape *sh)
{
    int N = sh->N, K = sh->K, I = N / 2, nctr = kern_gemm_ws_counters(MAX_M, N), n_m = (int)(sizeof MS / sizeof *MS);
    size_t nx = (size_t)MAX_M * K, nw = (size_t)N * K, nh = (size_t)MAX_M * I;
    long wsf = kern_gemm_ws_floats(MAX_M, N, K), differ = 0, far = 0, past = 0;
    uint16_t *hx = malloc(nx * 2), *hw = malloc(nw * 2), *ref = malloc(nh * 2), *got = malloc(nh * 2);
    uint16_t *dx = NULL, *dw = NULL, *dh = NULL, *dref = NULL;
    float *y = malloc((size_t)MAX_M * N * 4), *dy = NULL;
    double worst = 0;
    struct kern_gemm_ws ws = {0};
    for (size_t i = 0; i < nx; i++) hx[i] = f32_to_bf16((float)test_uniform());
    for (size_t i = 0; i < nw; i++) hw[i] = f32_to_bf16((float)(test_uniform() * 0.05));
    CK(cudaMalloc((void **)&dx, nx * 2));
    CK(cudaMalloc((void **)&dw, nw * 2));
    CK(cudaMalloc((void **)&dh, nh * 2));
    CK(cudaMalloc((void **)&dref, nh * 2));
    CK(cudaMalloc((void **)&dy, (size_t)MAX_M * N * 4));
    CK(cudaMalloc((void **)&ws.partial, (size_t)(wsf ? wsf : 1) * 4));
    CK(cudaMalloc((void **)&ws.counters, (size_t)nctr * 4));
    CK(cudaMemset(ws.counters, 0, (size_t)nctr * 4));
    CK(cudaMemcpy(dx, hx, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw, nw * 2, cudaMemcpyHostToDevice));
    kern_gemm_bf16(dx, dw, NULL, dy, NULL, MAX_M, N, K, &ws, NULL);
    CK(cudaMemcpy(y, dy, (size_t)MAX_M * N * 4, cudaMemcpyDeviceToHost));
    for (int mi = 0; mi < n_m; mi++) {
        int M = MS[mi];
        CK(cudaMemset(dref, 0xff, nh * 2));
        if (M <= 64) kern_gemm_skinny(dx, dw, NULL, NULL, dref, M, N, K, &ws, NULL);
        else kern_gemm_bf16(dx, dw, NULL, NULL, dref, M, N, K, &ws, NULL);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(ref, dref, nh * 2, cudaMemcpyDeviceToHost));
        for (int j = 0; j < I; j++) past += M < MAX_M && ref[(size_t)M * I + j] != 0xffff;
        for (int r = 0; r < M; r++)
            for (int j = 0; j < I; j++) {
                int c = (j / 2) * 4 + j % 2;
                double want = geglu_double(y[(size_t)r * N + c], y[(size_t)r * N + c + 2]);
                double e = fabs(bf16_to_f32(ref[(size_t)r * I + j]) - want);
                e = isnan(e) ? INFINITY : e;
                worst = fmax(worst, e / (fabs(want) + 1e-3));
                far += e > 8e-3 * fabs(want) + 1e-4;
            }
        for (int v = 0; v < VARIANTS; v++) {
            CK(cudaMemset(dh, 0xff, nh * 2));
            kern_gemm_wgmma_variant(v, dx, dw, NULL, NULL, dh, M, N, K, &ws, NULL);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(got, dh, nh * 2, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < (size_t)(M < MAX_M ? M + 1 : M) * I; i++) differ += got[i] != ref[i];
        }
    }
    int *hctr = malloc((size_t)nctr * 4), ctr_zero = 1;
    CK(cudaMemcpy(hctr, ws.counters, (size_t)nctr * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < nctr; i++) ctr_zero &= hctr[i] == 0;
    printf("  %-18s N %5d K %5d, %d seg: GeGLU epilogue: %ld elements differ across kernels, %ld far from double "
           "(worst %.2e of the value), %ld written past M%s\n",
           sh->what, N, K, kern_gemm_segments(N, K), differ, far, worst, past, ctr_zero ? "" : ", COUNTERS NONZERO");
    EXPECTF(differ == 0, "%s: GeGLU outputs differ between kernels in %ld elements", sh->what, differ);
    EXPECTF(far == 0, "%s: %ld GeGLU outputs beyond bf16 rounding of the double reference", sh->what, far);
    EXPECTF(past == 0, "%s: %ld GeGLU outputs written past M", sh->what, past);
    EXPECTF(ctr_zero, "%s: arrival counters not reset to zero", sh->what);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dh);
    cudaFree(dref);
    cudaFree(dy);
    cudaFree(ws.partial);
    cudaFree(ws.counters);
    free(hx);
    free(hw);
    free(ref);
    free(got);
    free(y);
    free(hctr);
}

static void test_bits(void)
{
    for (int i = 0; i < N_GEMM_SHAPES; i++) check_shape(&GEMM_SHAPES[i]);
    for (int i = 0; i < (int)(sizeof GEGLU_SHAPES / sizeof *GEGLU_SHAPES); i++) check_geglu(&GEGLU_SHAPES[i]);
    for (int v = 0; v < VARIANTS; v++)
        printf("  layout variant %d (%s): %s\n", v,
               VARIANT_NAMES[v], variant_exact[v] ? "exact on every wgmma shape" : "NOT exact (see the lines above)");
}

/* ---- speed ---------------------------------------------------------------------------------------------- */
#define WARM 3
#define REPS 10
enum { K_BF16, K_WGMMA, K_WGMMA_SW, K_WGMMA_128, K_WGMMA_SEQ, K_TMA, K_TMA_SEQ, K_CUBLAS };

/* Median milliseconds of one product by kernel `kind` (no bias), CUDA events around each launch. */
static double time_gemm(int kind, cublasHandle_t h, const uint16_t *dx, const uint16_t *dw, float *dy, int M, int N,
                        int K, const struct kern_gemm_ws *ws, cudaEvent_t e0, cudaEvent_t e1)
{
    double t[REPS];
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < WARM + REPS; i++) {
        float ms = 0;
        cudaEventRecord(e0, NULL);
        if (kind == K_BF16) kern_gemm_bf16(dx, dw, NULL, dy, NULL, M, N, K, ws, NULL);
        else if (kind >= K_WGMMA && kind <= K_TMA_SEQ)
            kern_gemm_wgmma_variant(kind - K_WGMMA, dx, dw, NULL, dy, NULL, M, N, K, ws, NULL);
        else if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dw, CUDA_R_16BF, K, dx, CUDA_R_16BF, K, &zero,
                              dy, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            return -1;
        cudaEventRecord(e1, NULL);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= WARM) t[i - WARM] = ms;
    }
    return util_median(t, REPS);
}

static void test_speed(void)
{
    static const struct gemm_shape S[] = {
        {"12B q|k|v sliding", 8192, 3840}, {"12B o sliding", 3840, 4096},
        {"12B gate|up", 30720, 3840},      {"12B down", 3840, 15360},
    };
    static const int SM[] = {512, 1024, 2048, 8192};
    const int ns = (int)(sizeof S / sizeof *S), nm = (int)(sizeof SM / sizeof *SM), max_m = 8192;
    size_t nx = 0, nw = 0, ny = 0, nctr = 0, wsf = 0;
    uint16_t *h, *dx = NULL, *dw = NULL;
    float *dy = NULL;
    struct kern_gemm_ws ws = {0};
    cublasHandle_t cb = NULL;
    cudaEvent_t e0, e1;
    for (int i = 0; i < ns; i++) {
        size_t x = (size_t)max_m * S[i].K, w = (size_t)S[i].N * S[i].K, y = (size_t)max_m * S[i].N;
        size_t f = (size_t)kern_gemm_ws_floats(max_m, S[i].N, S[i].K), c = (size_t)kern_gemm_ws_counters(max_m, S[i].N);
        nx = x > nx ? x : nx, nw = w > nw ? w : nw, ny = y > ny ? y : ny, wsf = f > wsf ? f : wsf, nctr = c > nctr ? c : nctr;
    }
    h = malloc((nx > nw ? nx : nw) * 2);
    CK(cudaMalloc((void **)&dx, nx * 2));
    CK(cudaMalloc((void **)&dw, nw * 2));
    CK(cudaMalloc((void **)&dy, ny * 4));
    CK(cudaMalloc((void **)&ws.partial, (wsf ? wsf : 1) * 4));
    CK(cudaMalloc((void **)&ws.counters, nctr * 4));
    CK(cudaMemset(ws.counters, 0, nctr * 4));
    for (size_t i = 0; i < nx; i++) h[i] = f32_to_bf16((float)test_uniform());
    CK(cudaMemcpy(dx, h, nx * 2, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < nw; i++) h[i] = f32_to_bf16((float)(test_uniform() * 0.05));
    CK(cudaMemcpy(dw, h, nw * 2, cudaMemcpyHostToDevice));
    free(h);
    if (cublasCreate(&cb) != CUBLAS_STATUS_SUCCESS) cb = NULL;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    printf("\n| product | N | K | M | kern_gemm_bf16 TFLOP/s | wgmma unswizzled | wgmma 128B swizzle | same, 128 wide | 128 wide, segments in one CTA | tensor copies, 256 wide | tensor copies, 128 wide, segments in one CTA | best / bf16 | cuBLAS TFLOP/s |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nm; j++) {
            int M = SM[j], N = S[i].N, K = S[i].K;
            double fl = 2.0 * M * N * K * 1e-9; /* TFLOP per ms */
            double tb = time_gemm(K_BF16, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            double tw = time_gemm(K_WGMMA, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            double tsw = time_gemm(K_WGMMA_SW, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            double t128 = time_gemm(K_WGMMA_128, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            double tseq = time_gemm(K_WGMMA_SEQ, cb, dx, dw, dy, M, N, K, &ws, e0, e1), best = tsw;
            double ttma = time_gemm(K_TMA, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            double ttseq = time_gemm(K_TMA_SEQ, cb, dx, dw, dy, M, N, K, &ws, e0, e1);
            best = t128 < best ? t128 : best;
            best = tseq < best ? tseq : best;
            best = ttma < best ? ttma : best;
            best = ttseq < best ? ttseq : best;
            double tc = cb ? time_gemm(K_CUBLAS, cb, dx, dw, dy, M, N, K, &ws, e0, e1) : -1;
            printf("| %s | %d | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f | ", S[i].what, N, K, M,
                   fl / tb, fl / tw, fl / tsw, fl / t128, fl / tseq, fl / ttma, fl / ttseq, tb / best);
            if (tc > 0) printf("%.0f |\n", fl / tc);
            else printf("- |\n");
            fflush(stdout);
        }
    CK(cudaGetLastError());
    printf("(median of %d after %d warm-ups, CUDA events around each launch, random data, no bias; printed, not asserted)\n",
           REPS, WARM);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (cb) cublasDestroy(cb);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(ws.partial);
    cudaFree(ws.counters);
}

int main(void)
{
    char why[256];
    struct cudaDeviceProp p;
    if (!test_gpu_present(why, sizeof why)) return test_skip_no_gpu("test_cuda_wgmma: no usable GPU here (%s)", why);
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
        printf("device: %s, compute capability %d.%d, %d multiprocessors\n", p.name, p.major, p.minor,
               p.multiProcessorCount);
        if (p.major != 9) return test_skip_no_gpu("test_cuda_wgmma: wgmma needs compute capability 9.0 (sm_90a)");
    }
    RUN_TEST(test_bits);
    RUN_TEST(test_speed);
    return test_report();
}

#else

int main(void)
{
    return test_skip_no_gpu("test_cuda_wgmma: built without CUDA (no nvcc)");
}

#endif
