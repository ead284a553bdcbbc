/* bench_cuda.h — what the CUDA kernel benchmarks (bench_cuda_products.c, bench_cuda_attention.c) share: the
 * error check that ends the program, the opening (no device: say so and measure nothing; else the device and
 * its copy rate, the floor every figure is set against), and the timing rule: one warm-up launch per copy of the
 * data, then the median over BENCH_CUDA_ROUNDS rounds of µs per launch, each round `launches` launches between
 * two events on one stream (programmatic dependent launch between them, as in a step). Only for C files built
 * with CUDA (G4_HAVE_CUDA). */
#ifndef G4_BENCH_CUDA_H
#define G4_BENCH_CUDA_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "engine/cuda/cuda_engine.h"
#include "util/util.h"

#define BENCH_CUDA_ROUNDS 5

static const char *bench_cuda_name = "bench"; /* the program, for messages (bench_cuda_open) */

#define BENCH_CUDA_CHECK(call)                                                                              \
    do {                                                                                                    \
        cudaError_t rc_ = (call);                                                                           \
        if (rc_ != cudaSuccess) {                                                                           \
            fprintf(stderr, "%s: %s: %s\n", bench_cuda_name, #call, cudaGetErrorString(rc_));                \
            exit(1);                                                                                        \
        }                                                                                                   \
    } while (0)

/* 0 where there is no CUDA device (said so); else 1, the device and copy rate printed, *rate in bytes/s. */
static int bench_cuda_open(const char *name, double *rate)
{
    int n_dev = 0;
    struct cudaDeviceProp prop;
    bench_cuda_name = name;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        printf("%s: no CUDA device here; nothing to measure\n", name);
        return 0;
    }
    BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    *rate = cuda_device_copy_rate();
    printf("%s, copy rate %.0f GB/s (2 GiB device copy, read + write)\n\n", prop.name, *rate / 1e9);
    return 1;
}

/* µs per launch of launch(ctx, copy) by the rule above, copy cycling through 0 .. copies - 1. */
static double bench_cuda_median_us(void (*launch)(void *ctx, int copy), void *ctx, int copies, int launches,
                                   cudaStream_t s)
{
    cudaEvent_t e0, e1;
    double t[BENCH_CUDA_ROUNDS];
    BENCH_CUDA_CHECK(cudaEventCreate(&e0));
    BENCH_CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < copies; i++) launch(ctx, i);
    for (int r = 0; r < BENCH_CUDA_ROUNDS; r++) {
        float ms;
        BENCH_CUDA_CHECK(cudaEventRecord(e0, s));
        for (int i = 0; i < launches; i++) launch(ctx, i % copies);
        BENCH_CUDA_CHECK(cudaEventRecord(e1, s));
        BENCH_CUDA_CHECK(cudaEventSynchronize(e1));
        BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t[r] = 1e3 * ms / launches;
    }
    BENCH_CUDA_CHECK(cudaEventDestroy(e0));
    BENCH_CUDA_CHECK(cudaEventDestroy(e1));
    return util_median(t, BENCH_CUDA_ROUNDS);
}

#endif
