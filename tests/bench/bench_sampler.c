/* bench_sampler — microseconds per sampled token at Gemma 4's vocabulary (V = 262144), one row at a time on
 * one core, for the sampler's paths: greedy scan, top-k by partial selection, and the full sort that top-p
 * or min-p without top-k needs. Prints a table; the figures go to docs/perf.md under "Sampler".
 *
 * Logits are synthetic but shaped like a language model's: Gaussian noise (sd 2) for the bulk, a few dozen
 * plausible tokens 6-12 above it, soft-capped at 30 as Gemma's head does. Each position draws its own
 * number, so the chosen tokens vary as in a real stream. Times are microseconds per sampled row: the best
 * of ROUNDS rounds, and the mean. */
#include "engine/sampler.h"
#include "util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define V 262144
#define ROUNDS 5

static uint64_t rng_state = 88172645463325252ULL;
static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) * 0x1p-53;
}

/* One case: a name, the parameters and how many rows to time. */
struct bench_case {
    const char *name;
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    int rows;
};

int main(void)
{
    static const struct bench_case cases[] = {
        { "greedy (T=0)", 0.0f, 0, 1.0f, 0.0f, 2000 },
        { "top_k=64", 1.0f, 64, 1.0f, 0.0f, 2000 },
        { "top_k=64 top_p=0.95 (Gemma default)", 1.0f, 64, 0.95f, 0.0f, 2000 },
        { "top_k=256 top_p=0.95", 1.0f, 256, 0.95f, 0.0f, 1000 },
        { "top_k=1000 top_p=0.95", 1.0f, 1000, 0.95f, 0.0f, 500 },
        { "top_k=2048 top_p=0.95", 1.0f, 2048, 0.95f, 0.0f, 300 },
        { "top_k=4096 top_p=0.95", 1.0f, 4096, 0.95f, 0.0f, 300 },
        { "top_p=0.95 (no top_k: full sort)", 1.0f, 0, 0.95f, 0.0f, 100 },
        { "min_p=0.05 (no top_k: full sort)", 1.0f, 0, 1.0f, 0.05f, 100 },
        { "T=1 only (full sort)", 1.0f, 0, 1.0f, 0.0f, 100 },
    };
    float *logits = g4_malloc((size_t)V * sizeof *logits);
    for (int i = 0; i < V; i++) {
        double g = sqrt(-2 * log(rnd())) * cos(2 * M_PI * rnd()) * 2.0;   /* Box-Muller */
        logits[i] = (float)(30.0 * tanh(g / 30.0));
    }
    for (int j = 0; j < 40; j++) logits[(int)(rnd() * V)] = (float)(30.0 * tanh((6 + 6 * rnd()) / 30.0));

    samp_ws *ws = samp_ws_create(V);
    char err[G4_ERR_MAX];
    printf("bench_sampler: V = %d, one row per call, one thread\n", V);
    printf("%-40s %10s %10s %8s\n", "case", "best us", "mean us", "rows");
    long checksum = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct samp_params p;
        samp_params_gemma4(&p);
        p.temperature = cases[c].temperature;
        p.top_k = cases[c].top_k;
        p.top_p = cases[c].top_p;
        p.min_p = cases[c].min_p;
        p.seed = 7;
        G4_CHECK(samp_params_validate(&p, V, err) == 0, "%s", err);
        for (int r = 0; r < 5; r++) checksum += samp_sample(&p, logits, (uint64_t)r, ws);   /* warm up */
        /* Best of ROUNDS rounds: the build machine is shared, and the fastest round is the one least
         * disturbed; the mean is printed beside it. */
        double best = 1e30, total = 0;
        int per = cases[c].rows / ROUNDS;
        for (int round = 0; round < ROUNDS; round++) {
            double t0 = util_now();
            for (int r = 0; r < per; r++)
                checksum += samp_sample(&p, logits, (uint64_t)(round * per + r), ws);
            double us = (util_now() - t0) * 1e6 / per;
            total += us;
            if (us < best) best = us;
        }
        printf("%-40s %10.1f %10.1f %8d\n", cases[c].name, best, total / ROUNDS, per * ROUNDS);
    }
    printf("(checksum %ld)\n", checksum);
    samp_ws_destroy(ws);
    free(logits);
    return 0;
}
