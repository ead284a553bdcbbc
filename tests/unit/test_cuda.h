/* What the CUDA kernel tests (test_cuda_kernels.c, test_cuda_wgmma.c) share: the real products they check,
 * a seeded generator for their operands, and whether there is a GPU to run on. Only for builds with CUDA. */
#ifndef G4_TEST_CUDA_H
#define G4_TEST_CUDA_H

#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime.h>

/* A product y (M, N) = x (M, K) · w (N, K)ᵀ, named by what it is in a model. */
struct gemm_shape {
    const char *what;
    int N, K;
};

/* Every product of the 12B (q|k|v sliding and full, o sliding and full, gate|up, down), the 31B's segmented
 * ones and a small odd one (K % 32 == 16, N not a multiple of any tile). */
static const struct gemm_shape GEMM_SHAPES[] = {
    {"12B q|k|v sliding", 8192, 3840}, {"12B q|k|v full", 8704, 3840}, {"12B o sliding", 3840, 4096},
    {"12B o full", 3840, 8192},        {"12B gate|up", 30720, 3840},   {"12B down", 3840, 15360},
    {"31B o sliding", 5376, 8192},     {"31B down", 5376, 21504},      {"odd", 100, 48},
};
#define N_GEMM_SHAPES ((int)(sizeof GEMM_SHAPES / sizeof *GEMM_SHAPES))

static uint64_t test_rng_state = 88172645463325252ull;

/* xorshift64, uniform in [-1, 1): the same operands on every run. */
static inline double test_uniform(void)
{
    test_rng_state ^= test_rng_state << 13;
    test_rng_state ^= test_rng_state >> 7;
    test_rng_state ^= test_rng_state << 17;
    return (double)(test_rng_state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* 1 with a usable GPU; else 0 and why not, in why. */
static inline int test_gpu_present(char *why, size_t len)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
        snprintf(why, len, "%s", rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device");
        return 0;
    }
    return 1;
}

#endif
