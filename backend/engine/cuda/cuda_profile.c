/* cuda_profile — where a pass's device time goes, for tuning (G4_CUDA_PROFILE=1; `g4 bench` prints it).
 *
 * The step code marks the stream after each kind of kernel (cuda_prof_mark); after the pass's sync the time
 * between consecutive marks is added to the later mark's kind — launch gaps included, which is the point:
 * what a kernel costs the step, not only its own run time. Passes are grouped by their row count. Graphs are
 * off while profiling (events inside a graph are not what the eager pass sees).
 *
 * What a kind costs a graphed step, with programmatic launch and early loads as served, no event can say:
 * G4_CUDA_PROFILE_SKIP (a comma list of prep, attention, norms) leaves those kernels out of every pass,
 * graphs on, so `g4 bench` with and without it gives their cost by difference. Every result is then wrong
 * (every device buffer starts zeroed, so the values stay finite): a timing diagnostic, said loudly at engine
 * create. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/cuda_engine.h"
#include "util/util.h"

static const char *const KIND_NAMES[PROF_KINDS] = {
    "start", "embed+norm", "q|k|v product", "q/k/v norms, rope", "attention, sliding layers",
    "attention, full layers", "attention merge", "kv store", "o product", "residual+norm", "gate|up product",
    "geglu (prompt passes)", "down product", "head (norm, product, cap)", "draw (select, copy)",
};

/* The G4_CUDA_PROFILE_SKIP names and the kinds each leaves out. */
static const struct {
    const char *name;
    unsigned kinds;
} SKIP_NAMES[] = {
    {"prep", 1u << PROF_QKV_PREP},
    {"attention", 1u << PROF_ATTN_SLIDING | 1u << PROF_ATTN_FULL | 1u << PROF_ATTN_MERGE | 1u << PROF_KV_STORE},
    {"norms", 1u << PROF_RESID},
};

static void skip_create(struct cuda_engine *e)
{
    const char *v = getenv("G4_CUDA_PROFILE_SKIP");
    char list[128], *save = NULL;
    if (!v || !*v) return;
    snprintf(list, sizeof list, "%s", v);
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof SKIP_NAMES / sizeof *SKIP_NAMES && strcmp(tok, SKIP_NAMES[i].name)) i++;
        G4_CHECK(i < sizeof SKIP_NAMES / sizeof *SKIP_NAMES, "G4_CUDA_PROFILE_SKIP: %s is not prep, attention or norms", tok);
        e->prof_skip |= SKIP_NAMES[i].kinds;
    }
    fprintf(stderr, "g4: warning: G4_CUDA_PROFILE_SKIP=%s leaves kernels out of every pass: every result of this "
                    "engine is wrong (a timing diagnostic)\n", v);
}

int cuda_prof_skips(const struct cuda_engine *e, enum cuda_prof_kind kind) { return (e->prof_skip >> kind) & 1u; }

void cuda_prof_create(struct cuda_engine *e)
{
    const char *v = getenv("G4_CUDA_PROFILE");
    skip_create(e);
    if (!v || strcmp(v, "1")) return;
    e->prof = g4_calloc(1, sizeof *e->prof);
    for (int i = 0; i < CUDA_PROF_EVENTS; i++) CUDA_CHECK(cudaEventCreate(&e->prof->ev[i]));
    e->use_graphs = 0;
}

void cuda_prof_mark(struct cuda_engine *e, enum cuda_prof_kind kind)
{
    struct cuda_prof *p = e->prof;
    if (!p || p->n == CUDA_PROF_EVENTS) return;
    CUDA_CHECK(cudaEventRecord(p->ev[p->n], e->stream));
    p->kind[p->n++] = kind;
}

void cuda_prof_pass_done(struct cuda_engine *e, int rows)
{
    struct cuda_prof *p = e->prof;
    int s = 0;
    if (!p) return;
    while (s < p->n_shapes && p->rows[s] != rows) s++;
    if (s == p->n_shapes && p->n_shapes < CUDA_PROF_SHAPES) p->rows[p->n_shapes++] = rows;
    if (s < p->n_shapes) {
        for (int i = 1; i < p->n; i++) {
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]));
            p->ms[s][p->kind[i]] += ms;
        }
        p->passes[s]++;
    }
    p->n = 0;
}

void cuda_prof_report_free(struct cuda_engine *e)
{
    struct cuda_prof *p = e->prof;
    if (!p) return;
    for (int s = 0; s < p->n_shapes; s++) {
        double total = 0;
        for (int k = 1; k < PROF_KINDS; k++) total += p->ms[s][k];
        fprintf(stderr, "\ng4 cuda profile: passes of %d rows (%ld passes), device ms per pass\n", p->rows[s],
                p->passes[s]);
        fprintf(stderr, "| kernel | ms | %% |\n|---|---|---|\n");
        for (int k = 1; k < PROF_KINDS; k++)
            fprintf(stderr, "| %s | %.3f | %.1f |\n", KIND_NAMES[k], p->ms[s][k] / (double)p->passes[s],
                    total > 0 ? 100 * p->ms[s][k] / total : 0);
        fprintf(stderr, "| total | %.3f | 100 |\n", total / (double)p->passes[s]);
    }
    for (int i = 0; i < CUDA_PROF_EVENTS; i++) cudaEventDestroy(p->ev[i]);
    free(p);
    e->prof = NULL;
}
