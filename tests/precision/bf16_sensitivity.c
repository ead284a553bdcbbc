/* bf16_sensitivity — how far a model's bf16-activation logits move for a difference at the level of fp32
 * rounding alone. tests/precision/bf16_sensitivity.sh builds this program against two builds of the library
 * that differ only in floating-point contraction (plain, and -mfma -ffp-contract=fast, which fuses a * b + c
 * as the GPU compiler does) and compares what they print.
 *
 * Why: test_cuda_engine holds the CUDA path to the CPU path with the GPU's rounding points (engine.h,
 * ENGINE_CPU_BF16_ACTIVATIONS) by a share of the network's own bf16 error. On the wide model that share was
 * 0.76, which the summation orders were thought too small to explain. If the contraction alone, with every
 * rounding point the same, moves the bf16-activation logits by a like share, the GPU's difference needs no
 * missing rounding point to explain it.
 *
 *   bf16_sensitivity run MODEL_DIR T OUT   logits of a T-token prompt (the ids test_cuda_engine uses), CPU
 *                                          engine, fp32 and bf16 activations: OUT.fp32 and OUT.bf16 (T x V floats)
 *   bf16_sensitivity compare A B T V       one line: the largest and mean over rows of (max |a - b| / max |b|),
 *                                          as test_cuda_engine's compare, and how many rows' argmax agree */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "util/util.h"

static float *prompt_logits(struct g4_model *m, enum engine_precision prec, const int32_t *ids, int T)
{
    struct engine_opts o = {ENGINE_CPU, 4, T + 32, 0, ENGINE_IMAGE_MASK_SLIDING_ONLY, prec};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    float *l = g4_calloc((size_t)T * m->cfg.text.vocab, sizeof *l);
    G4_CHECK(e, "%s", err);
    G4_CHECK(prefill_run(e, engine_stream_open(e), ids, T, NULL, 0, ENGINE_CHUNK_ROWS, l, 1, err) == 0, "%s", err);
    engine_destroy(e);
    return l;
}

static int run(const char *dir, int T, const char *out)
{
    char err[G4_ERR_MAX], path[4096];
    struct g4_model *m = model_load(dir, MODEL_CHECK_TENSORS, err);
    if (!m) {
        fprintf(stderr, "bf16_sensitivity: %s\n", err);
        return 1;
    }
    int V = m->cfg.text.vocab;
    int32_t *ids = g4_malloc((size_t)T * sizeof *ids);
    for (int i = 0; i < T; i++) ids[i] = i ? 10 + (int32_t)((i * 2654435761u) % (uint32_t)(V - 10)) : 2;
    for (int p = 0; p < 2; p++) {
        float *l = prompt_logits(m, p ? ENGINE_CPU_BF16_ACTIVATIONS : ENGINE_FP32, ids, T);
        snprintf(path, sizeof path, "%s.%s", out, p ? "bf16" : "fp32");
        FILE *f = fopen(path, "wb");
        G4_CHECK(f && fwrite(l, sizeof *l, (size_t)T * V, f) == (size_t)T * V && fclose(f) == 0, "writing %s", path);
        free(l);
    }
    free(ids);
    model_free(m);
    return 0;
}

static float *read_floats(const char *path, size_t n)
{
    float *x = g4_malloc(n * sizeof *x);
    FILE *f = fopen(path, "rb");
    G4_CHECK(f && fread(x, sizeof *x, n, f) == n, "reading %zu floats from %s", n, path);
    fclose(f);
    return x;
}

static int compare(const char *pa, const char *pb, int T, int V)
{
    float *a = read_floats(pa, (size_t)T * V), *b = read_floats(pb, (size_t)T * V);
    double worst = 0, sum = 0;
    int agree = 0;
    for (int t = 0; t < T; t++) {
        const float *x = a + (size_t)t * V, *y = b + (size_t)t * V;
        double md = 0, mr = 0;
        int ia = 0, ib = 0;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)x[v] - y[v]);
            md = d > md || isnan(d) ? d : md;
            mr = fabs(y[v]) > mr ? fabs(y[v]) : mr;
            ia = x[v] > x[ia] ? v : ia;
            ib = y[v] > y[ib] ? v : ib;
        }
        worst = md / mr > worst || isnan(md) ? md / mr : worst;
        sum += md / mr;
        agree += ia == ib;
    }
    printf("| %s | %s | %.3e | %.3e | %d / %d |\n", pa, pb, worst, sum / T, agree, T);
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "run") && atoi(argv[3]) > 0) return run(argv[2], atoi(argv[3]), argv[4]);
    if (argc == 6 && !strcmp(argv[1], "compare") && atoi(argv[4]) > 0 && atoi(argv[5]) > 0)
        return compare(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
    fprintf(stderr, "usage: bf16_sensitivity run MODEL_DIR T OUT | compare A B T V\n");
    return 2;
}
