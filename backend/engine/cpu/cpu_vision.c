/* cpu_vision — the 12B's encoder-free patch embedder in fp32 (spec §4.2): for each merged 48-px patch,
 * LayerNorm → patch_dense (+bias) → LayerNorm → + column and row position rows → LayerNorm → weightless
 * RMSNorm → embedding_projection. Pixels arrive as bytes and are rescaled here by 1/255 (the processor's
 * rescale_factor, applied in fp32), so the wire and the cache carry bytes. */
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/cpu_engine.h"
#include "engine/cpu/cpu_ops.h"
#include "util/util.h"

#define VISION_LN_EPS 1e-5f /* nn.LayerNorm default, used by all three LayerNorms */

struct ln1_job {
    const struct cpu_vision *v;
    const uint8_t *patches;
    float *out; /* (n, P) */
};

static void ln1_range(void *ctx, int begin, int end)
{
    const struct ln1_job *j = ctx;
    const float scale = (float)(1.0 / 255.0);
    int P = j->v->P;
    for (int i = begin; i < end; i++) {
        float *row = j->out + (size_t)i * P;
        for (int k = 0; k < P; k++) row[k] = (float)j->patches[(size_t)i * P + k] * scale;
        cpu_layernorm(row, P, j->v->ln1_w, j->v->ln1_b, VISION_LN_EPS, row);
    }
}

int cpu_vision_embed(struct cpu_engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                     char *err)
{
    const struct cpu_vision *v = &e->vision;
    struct ln1_job j;
    float *pix, *h;
    for (int i = 0; i < n; i++) {
        int x = positions[2 * i], y = positions[2 * i + 1];
        if (x < 0 || y < 0 || x >= v->posemb || y >= v->posemb)
            return g4_errf(err, "image patch %d: position (%d, %d) outside the %d-entry position table", i, x, y,
                           v->posemb);
    }
    pix = g4_malloc((size_t)n * v->P * sizeof *pix);
    h = g4_malloc((size_t)n * v->E * sizeof *h);
    j.v = v;
    j.patches = patches;
    j.out = pix;
    pool_run(e->pool, ln1_range, &j, n);
    if (e->bf16_act) cpu_round_bf16(pix, (size_t)n * v->P);
    cpu_matmul_bf16(e->pool, pix, n, v->P, v->dense, v->E, v->dense_b, h);
    for (int i = 0; i < n; i++) {
        float *r = h + (size_t)i * v->E;
        const float *col = v->pos + ((size_t)positions[2 * i] * 2 + 0) * v->E;
        const float *row = v->pos + ((size_t)positions[2 * i + 1] * 2 + 1) * v->E;
        cpu_layernorm(r, v->E, v->ln2_w, v->ln2_b, VISION_LN_EPS, r);
        for (int k = 0; k < v->E; k++) r[k] += col[k] + row[k];
        cpu_layernorm(r, v->E, v->pos_w, v->pos_b, VISION_LN_EPS, r);
        cpu_rmsnorm(r, v->E, NULL, v->rms_eps, r);
    }
    if (e->bf16_act) cpu_round_bf16(h, (size_t)n * v->E);
    cpu_matmul_bf16(e->pool, h, n, v->E, v->proj, e->H, NULL, out);
    free(pix);
    free(h);
    return 0;
}
