/* bench_cuda_products — the decode products alone (kern_gemm at M <= 64 rows: gemm_skinny.cu), at every product shape
 * of one 12B decode step, against the GPU's copy rate. Decode is bound by reading each weight once per step, so the
 * figure that matters is the weight bytes a product streams per second; the table gives microseconds per product, GB/s
 * of weights read and that rate as a share of the copy rate (a 2 GiB device-to-device copy, read + write bytes per
 * second: the same measure as `g4 bench`'s floor).
 *
 * Each product cycles through enough copies of its weights (over 512 MB in all) that none is still in the 50 MB L2 when
 * it is read again, as in a real step, where the next layer's weights are elsewhere. Launches follow each other on one
 * stream with programmatic dependent launch, as in a step's graph. Times: the median of 5 rounds of 40 launches, for
 * the engine's default (kern_gemm_skinny), the cp.async shapes' choice by M and the grid's waves (variant 0) and each
 * forced shape (kern_gemm_skinny_variant: warps x stages), then the prompt kernel (kern_gemm_wgmma, which kern_gemm
 * takes from G4_CUDA_WGMMA_ROWS rows), so a new choice can be read off the table. Without a GPU
 * (or a CUDA build) it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if G4_HAVE_CUDA
#include "bench_cuda.h"
#include "kernels.h"

#define LAUNCHES 40 /* per round (bench_cuda.h) */

/* A decode product of the 12B, named by what it is; geglu: the gate|up product, which writes h. */
struct product {
    const char *what;
    int N, K, geglu;
};

static const struct product PRODUCTS[] = {
    {"q|k|v sliding", 8192, 3840, 0}, {"q|k|v full", 8704, 3840, 0}, {"o sliding", 3840, 4096, 0},
    {"o full", 3840, 8192, 0},        {"gate|up", 30720, 3840, 1},   {"down", 3840, 15360, 0},
    {"head (tied embedding)", 262144, 3840, 0},
};

/* One product's launch on copy `copy` of the weights, by forced variant v at M rows (-1: kern_gemm_skinny,
 * KERN_SKINNY_VARIANTS: the prompt kernel, kern_gemm_wgmma). */
struct product_run {
    const struct product *p;
    int v, M;
    uint16_t **w;
    const uint16_t *x;
    float *y;
    uint16_t *h;
    const struct kern_gemm_ws *ws;
    cudaStream_t s;
};

static void product_launch(void *ctx, int copy)
{
    const struct product_run *r = ctx;
    float *y = r->p->geglu ? NULL : r->y;
    uint16_t *h = r->p->geglu ? r->h : NULL;
    if (r->v == KERN_SKINNY_VARIANTS) kern_gemm_wgmma(r->x, r->w[copy], NULL, y, h, r->M, r->p->N, r->p->K, r->ws, r->s);
    else if (r->v < 0) kern_gemm_skinny(r->x, r->w[copy], NULL, y, h, r->M, r->p->N, r->p->K, r->ws, r->s);
    else kern_gemm_skinny_variant(r->v, r->x, r->w[copy], NULL, y, h, r->M, r->p->N, r->p->K, r->ws, r->s);
}

int main(void)
{
    static const int ROWS[] = {1, 2, 4, 8, 16, 32, 64};
    double rate;
    if (!bench_cuda_open("bench_cuda_products", &rate)) return 0;
    printf("| product | N | K | segments | rows | µs | GB/s of weights | %% of copy rate | µs, cp.async choice | 4x4 | 8x4 | 4x5 | 8x3 | 4x4, 16 rows | 4 warps by tensor copies | 8 warps by tensor copies | 4 warps of 16 columns | 4 warps of 32 columns | wgmma (prompt kernel) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    cudaStream_t s;
    BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t pi = 0; pi < sizeof PRODUCTS / sizeof *PRODUCTS; pi++) {
        const struct product *p = &PRODUCTS[pi];
        size_t wbytes = (size_t)p->N * p->K * 2;
        int copies = (int)((((size_t)512 << 20) + wbytes - 1) / wbytes);
        if (copies < 1) copies = 1;
        if (copies > 16) copies = 16;
        uint16_t *w[16], *x, *h;
        float *y;
        struct kern_gemm_ws ws;
        for (int i = 0; i < copies; i++) {
            BENCH_CUDA_CHECK(cudaMalloc((void **)&w[i], wbytes));
            BENCH_CUDA_CHECK(cudaMemset(w[i], 0x3c, wbytes)); /* bf16 0x3c3c: 0.0115, finite */
        }
        BENCH_CUDA_CHECK(cudaMalloc((void **)&x, (size_t)64 * p->K * 2));
        BENCH_CUDA_CHECK(cudaMemset(x, 0x3c, (size_t)64 * p->K * 2));
        BENCH_CUDA_CHECK(cudaMalloc((void **)&y, (size_t)64 * p->N * sizeof *y));
        BENCH_CUDA_CHECK(cudaMalloc((void **)&h, (size_t)64 * p->N));
        long ws_floats = kern_gemm_ws_floats(64, p->N, p->K);
        BENCH_CUDA_CHECK(cudaMalloc((void **)&ws.partial, (size_t)(ws_floats ? ws_floats : 1) * sizeof(float)));
        BENCH_CUDA_CHECK(cudaMalloc((void **)&ws.counters, (size_t)kern_gemm_ws_counters(64, p->N) * sizeof(int)));
        BENCH_CUDA_CHECK(cudaMemset(ws.counters, 0, (size_t)kern_gemm_ws_counters(64, p->N) * sizeof(int)));
        for (size_t ri = 0; ri < sizeof ROWS / sizeof *ROWS; ri++) {
            double us[KERN_SKINNY_VARIANTS + 2]; /* us[v + 1]: variant v, us[0] the default, then wgmma */
            for (int v = -1; v <= KERN_SKINNY_VARIANTS; v++) {
                struct product_run run = {p, v, ROWS[ri], w, x, y, h, &ws, s};
                us[v + 1] = bench_cuda_median_us(product_launch, &run, copies, LAUNCHES, s);
            }
            double gbs = wbytes / (us[0] * 1e-6) / 1e9;
            printf("| %s | %d | %d | %d | %d | %.1f | %.0f | %.0f |", p->what, p->N, p->K,
                   kern_gemm_segments(p->N, p->K), ROWS[ri], us[0], gbs, 100.0 * gbs * 1e9 / rate);
            for (int v = 0; v <= KERN_SKINNY_VARIANTS; v++) printf(" %.1f |", us[v + 1]);
            printf("\n");
        }
        for (int i = 0; i < copies; i++) BENCH_CUDA_CHECK(cudaFree(w[i]));
        BENCH_CUDA_CHECK(cudaFree(x));
        BENCH_CUDA_CHECK(cudaFree(y));
        BENCH_CUDA_CHECK(cudaFree(h));
        BENCH_CUDA_CHECK(cudaFree(ws.partial));
        BENCH_CUDA_CHECK(cudaFree(ws.counters));
    }
    BENCH_CUDA_CHECK(cudaStreamDestroy(s));
    return 0;
}
#else
int main(void)
{
    printf("bench_cuda_products: built without CUDA; nothing to measure\n");
    return 0;
}
#endif
