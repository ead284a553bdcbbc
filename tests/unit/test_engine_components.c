/* Component tests of the CPU engine: each checks one piece of Gemma 4's arithmetic by a property that
 * holds only when that piece is right, on the 12B-style fixture checkpoint (tests/fixtures/engine/unified)
 * with its config changed in memory where needed.
 *
 *   RoPE: proportional frequencies of the 12B full layers (64 of 256 pairs rotate, denominator 512) and
 *         untouched channels; default frequencies of the sliding layers.
 *   window: with every layer sliding (W = 8, L = 6), the logits at p depend on tokens p-L(W-1) … p only:
 *         changing token 0 changes row L(W-1) and leaves every later row bit-identical.
 *   K = V: a full layer with attention_k_eq_v equals the same layer given a v_proj that is a copy of k_proj.
 *   soft-cap: logits with the cap are c·tanh(raw / c) of the logits without it.
 *   image block: image rows (engine_item.image_rows, one chunk; two images of 4 rows, text around them).
 *         Every layer sliding: changing an image's last row changes its first row's logits (bidirectional
 *         within the image), and changing the other image's last row leaves every row before that image
 *         bit-identical. Every layer full: causal under SLIDING_ONLY (an image row never sees its image's
 *         later rows), bidirectional within the image under ALL_LAYERS. One sliding layer and an image longer
 *         than the window: the image's last row sees its first row (past the window) under ALL_LAYERS only. */
#include <math.h>

#include "engine/cpu/cpu_ops.h"
#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "test.h"

#define FIXTURE "tests/fixtures/engine/unified"

static struct g4_model *load(void)
{
    char err[G4_ERR_MAX];
    struct g4_model *m = model_load(FIXTURE, 0, err);
    EXPECTF(m, "%s", err);
    return m;
}

/* Logits (T, V) of ids on model m (a fresh engine; one chunk). */
static float *logits_of(struct g4_model *m, const int32_t *ids, int T)
{
    struct engine_opts o = {ENGINE_CPU, 1, T, 1, ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    float *l = g4_calloc((size_t)T * m->cfg.text.vocab, sizeof *l);
    EXPECTF(e, "%s", err);
    if (e) EXPECTF(prefill_run(e, engine_stream_open(e), ids, T, NULL, 0, ENGINE_CHUNK_ROWS, l, 1, err) == 0, "%s", err);
    engine_destroy(e);
    return l;
}

static void some_ids(int32_t *ids, int T)
{
    ids[0] = 2;
    for (int i = 1; i < T; i++) ids[i] = 3 + (i * 37) % 480;
}

static void test_rope_frequencies(void)
{
    struct cfg_layer full = {0}, sliding = {0};
    float f[256], x[512], y[512];
    full.head_dim = 512;
    full.rope_type = CFG_ROPE_PROPORTIONAL;
    full.rope_theta = 1e6;
    full.rope_factor = 1.0;
    full.rope_pairs = 64;      /* int(0.25 * 512 // 2) */
    full.rope_denom = 512;     /* the whole head dim, not the 128 rotary dims */
    cfg_rope_inv_freq(&full, f);
    EXPECT(f[0] == 1.0f);
    EXPECTF(fabsf(f[63] - 0.03338f) < 1e-5f, "last rotating frequency %g, spec 0.03338", f[63]);
    EXPECTF(fabs(f[1] - pow(1e6, -2.0 / 512)) < 1e-7, "f[1] = %g", f[1]);
    for (int i = 64; i < 256; i++) EXPECT(f[i] == 0.0f);
    for (int i = 0; i < 512; i++) x[i] = y[i] = (float)sin(i * 0.7);
    cpu_rope(y, 512, f, 1000);
    for (int i = 0; i < 512; i++) {
        int pair = i % 256;
        if (pair >= 64) EXPECTF(y[i] == x[i], "channel %d must not rotate", i);
        else if (pair > 0) EXPECTF(y[i] != x[i], "channel %d must rotate", i);
    }
    /* rotate-half pairing: (i, i + D/2) keeps each pair's norm */
    for (int i = 0; i < 64; i++)
        EXPECT(fabsf(hypotf(y[i], y[i + 256]) - hypotf(x[i], x[i + 256])) < 1e-5f);
    sliding.head_dim = 256;
    sliding.rope_type = CFG_ROPE_DEFAULT;
    sliding.rope_theta = 10000;
    sliding.rope_factor = 1.0;
    sliding.rope_pairs = 128;
    sliding.rope_denom = 256;
    cfg_rope_inv_freq(&sliding, f);
    EXPECT(f[0] == 1.0f);
    EXPECTF(fabs(f[127] - pow(10000.0, -254.0 / 256)) < 1e-9, "f[127] = %g", f[127]);
}

static void test_sliding_window_edge(void)
{
    struct g4_model *m = load();
    int32_t a[48], b[48];
    int T = 48, V, L, W, edge;
    float *la, *lb;
    if (!m) return;
    V = m->cfg.text.vocab;
    L = m->cfg.text.n_layers;
    W = m->cfg.text.sliding_window;
    for (int i = 0; i < L; i++)
        if (m->cfg.text.layer[i].is_full) {
            m->cfg.text.layer[i].is_full = 0;
            m->cfg.text.layer[i].window = W;
        }
    edge = L * (W - 1); /* the last row that still sees token 0 through the stacked windows */
    EXPECT(edge + 1 < T);
    some_ids(a, T);
    memcpy(b, a, sizeof a);
    b[0] = 77; /* the BOS slot changes: only rows within L(W-1) of it may notice */
    la = logits_of(m, a, T);
    lb = logits_of(m, b, T);
    EXPECTF(memcmp(la + (size_t)edge * V, lb + (size_t)edge * V, (size_t)V * sizeof *la) != 0,
            "row %d should still see token 0", edge);
    EXPECTF(!memcmp(la + (size_t)(edge + 1) * V, lb + (size_t)(edge + 1) * V, (size_t)(T - edge - 1) * V * sizeof *la),
            "rows from %d on must not see token 0", edge + 1);
    free(la);
    free(lb);
    model_free(m);
}

/* Copies the fixture into dir with, for every K=V layer, a v_proj tensor that is a copy of its k_proj. */
static int write_with_v_proj(const struct g4_model *m, const char *dir, char *err)
{
    int n = st_count(m->weights), k = 0, nn = 0, rc;
    struct st_write_tensor *t = g4_calloc((size_t)n + 64, sizeof *t);
    char (*names)[256] = g4_calloc(64, sizeof *names), path[512];
    size_t len;
    char *cfg;
    for (int i = 0; i < n; i++) {
        const struct st_tensor *s = st_at(m->weights, i);
        t[k].name = s->name;
        t[k].dtype = s->dtype;
        t[k].ndim = s->ndim;
        memcpy(t[k].shape, s->shape, sizeof t[k].shape);
        t[k++].data = s->data;
        if (strstr(s->name, "self_attn.k_proj.weight")) {
            int layer = atoi(strstr(s->name, "layers.") + 7);
            if (!m->cfg.text.layer[layer].k_eq_v) continue;
            G4_CHECK(nn < 64, "too many K=V layers for the test");
            snprintf(names[nn], sizeof names[nn], "%slayers.%d.self_attn.v_proj.weight", m->cfg.text_prefix, layer);
            t[k] = t[k - 1];
            t[k++].name = names[nn++];
        }
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = st_write(path, t, k, NULL, err);
    snprintf(path, sizeof path, "%s/config.json", FIXTURE);
    cfg = util_read_file(path, 1 << 20, &len, err);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (rc == 0) rc = cfg ? util_write_file(path, cfg, len, err) : -1;
    free(cfg);
    free(t);
    free(names);
    return rc;
}

static void test_k_eq_v(void)
{
    struct g4_model *m = load(), *m2 = NULL;
    int32_t ids[20];
    const char *dir = test_tmpdir();
    char err[G4_ERR_MAX] = "";
    int V, n_keqv = 0;
    if (!m) return;
    V = m->cfg.text.vocab;
    some_ids(ids, 20);
    EXPECTF(write_with_v_proj(m, dir, err) == 0, "%s", err);
    m2 = model_load(dir, 0, err);
    EXPECTF(m2, "%s", err);
    if (m2) {
        float *a = logits_of(m, ids, 20), *b;
        /* the copy runs its full layers through an explicit v_proj equal to k_proj */
        for (int i = 0; i < m2->cfg.text.n_layers; i++)
            if (m2->cfg.text.layer[i].k_eq_v) {
                m2->cfg.text.layer[i].k_eq_v = 0;
                n_keqv++;
            }
        EXPECT(n_keqv == 2);
        b = logits_of(m2, ids, 20);
        EXPECTF(!memcmp(a, b, (size_t)20 * V * sizeof *a), "K=V must take V from the raw K projection");
        free(a);
        free(b);
    }
    /* turning K=V off where there is no v_proj is refused by name, never computed with garbage */
    for (int i = 0; i < m->cfg.text.n_layers; i++) m->cfg.text.layer[i].k_eq_v = 0;
    {
        struct engine_opts o = {ENGINE_CPU, 1, 20, 1, ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_FP32};
        struct engine *e = engine_create(m, &o, err);
        EXPECT(e == NULL);
        EXPECT_STR_HAS(err, "v_proj");
        engine_destroy(e);
    }
    model_free(m2);
    model_free(m);
}

static void test_softcap(void)
{
    struct g4_model *m = load();
    int32_t ids[12];
    float *capped, *raw, c;
    int V, big = 0;
    if (!m) return;
    V = m->cfg.text.vocab;
    c = (float)m->cfg.text.final_softcap;
    EXPECT(m->cfg.text.has_softcap && c == 30.0f);
    some_ids(ids, 12);
    capped = logits_of(m, ids, 12);
    m->cfg.text.has_softcap = 0;
    raw = logits_of(m, ids, 12);
    for (size_t k = 0; k < (size_t)12 * V; k++) {
        float want = c * tanhf(raw[k] / c);
        if (fabsf(raw[k]) > c) big++;
        if (fabsf(capped[k] - want) > 1e-5f * c) {
            EXPECTF(0, "logit %zu: capped %g, c*tanh(raw/c) %g", k, capped[k], want);
            break;
        }
        if (capped[k] < -c || capped[k] > c) {
            EXPECTF(0, "logit %zu = %g outside (-%g, %g)", k, capped[k], c, c);
            break;
        }
    }
    EXPECTF(big > 0, "the fixture should have raw logits beyond the cap, to exercise it");
    free(capped);
    free(raw);
    model_free(m);
}

/* ---- image blocks ---------------------------------------------------------------------------------------- */

/* Makes every layer of m sliding (window W of the model) or full; the weights are unchanged. */
static void set_layers(struct g4_model *m, int full)
{
    for (int i = 0; i < m->cfg.text.n_layers; i++) {
        m->cfg.text.layer[i].is_full = full;
        m->cfg.text.layer[i].window = full ? 0 : m->cfg.text.sliding_window;
    }
}

/* A prompt with image rows: ids (T), block numbers (T, -1 for text) and embedding rows img (n_img, H) in row
 * order. */
struct img_prompt {
    int32_t ids[32];
    int block[32];
    float img[32 * 64];
    int T, n_img;
};

/* Rows [a0, a0 + na) image 0, [b0, b0 + nb) image 1 (nb may be 0), the rest text; deterministic embeddings. */
static void img_prompt_init(struct img_prompt *p, const struct g4_model *m, int T, int a0, int na, int b0, int nb)
{
    int H = m->cfg.text.hidden;
    G4_CHECK(T <= 32 && H <= 64 && a0 + na <= T && (!nb || (a0 + na <= b0 && b0 + nb <= T)),
             "image prompt does not fit");
    memset(p, 0, sizeof *p);
    p->T = T;
    some_ids(p->ids, T);
    for (int i = 0; i < T; i++) {
        p->block[i] = i >= a0 && i < a0 + na ? 0 : nb && i >= b0 && i < b0 + nb ? 1 : -1;
        if (p->block[i] < 0) continue;
        p->ids[i] = m->cfg.image_token_id;
        for (int d = 0; d < H; d++) p->img[(size_t)p->n_img * H + d] = (float)sin(0.37 * (p->n_img * H + d) + 1.0);
        p->n_img++;
    }
}

/* Changes the embedding of prompt row `row` (an image row). */
static void img_prompt_change(struct img_prompt *p, const struct g4_model *m, int row)
{
    int k = 0, H = m->cfg.text.hidden;
    for (int i = 0; i < row; i++) k += p->block[i] >= 0;
    G4_CHECK(p->block[row] >= 0, "row %d is not an image row", row);
    for (int d = 0; d < H; d++) p->img[(size_t)k * H + d] = -2.0f * p->img[(size_t)k * H + d] + 0.25f;
}

/* Logits (T, V) of the prompt, in one item of one step, under the image mask. */
static float *img_logits(const struct g4_model *m, const struct img_prompt *p, enum engine_image_mask mask)
{
    struct engine_opts o = {ENGINE_CPU, 1, p->T, 1, mask, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    float *l = g4_calloc((size_t)p->T * m->cfg.text.vocab, sizeof *l);
    EXPECTF(e, "%s", err);
    if (e) {
        struct engine_item it = {.stream = engine_stream_open(e), .n = p->T, .tokens = p->ids, .image_rows = p->img,
                                 .n_image_rows = p->n_img, .image_block = p->block, .logits = l};
        EXPECTF(engine_step(e, &it, 1, err) == 0, "%s", err);
    }
    engine_destroy(e);
    return l;
}

/* Whether rows [from, to) of a and b are bit-identical. */
static int rows_same(const float *a, const float *b, int from, int to, int V)
{
    return !memcmp(a + (size_t)from * V, b + (size_t)from * V, (size_t)(to - from) * V * sizeof *a);
}

/* Compares the logits of the base prompt with those after changing image row `changed`: rows before
 * `same_to` must be bit-identical, row `differs` must change. */
static void expect_change(const struct g4_model *m, const struct img_prompt *base, enum engine_image_mask mask,
                          int changed, int same_to, int differs, const char *what)
{
    struct img_prompt p = *base;
    int V = m->cfg.text.vocab;
    float *a = img_logits(m, base, mask), *b;
    img_prompt_change(&p, m, changed);
    b = img_logits(m, &p, mask);
    EXPECTF(rows_same(a, b, 0, same_to, V), "%s: changing row %d must leave rows 0..%d bit-identical", what, changed,
            same_to - 1);
    EXPECTF(!rows_same(a, b, differs, differs + 1, V), "%s: changing row %d must change row %d", what, changed,
            differs);
    free(a);
    free(b);
}

static void test_image_block(void)
{
    struct g4_model *m = load();
    struct img_prompt two, one;
    int W;
    if (!m) return;
    W = m->cfg.text.sliding_window;
    /* rows: 0 BOS, 1-2 text, 3-6 image 0, 7 text, 8-11 image 1, 12-15 text */
    img_prompt_init(&two, m, 16, 3, 4, 8, 4);
    EXPECT(two.n_img == 8 && W >= 5);

    set_layers(m, 0);
    for (int k = 0; k < 2; k++) {
        enum engine_image_mask mask = k ? ENGINE_IMAGE_MASK_ALL_LAYERS : ENGINE_IMAGE_MASK_SLIDING_ONLY;
        const char *what = k ? "all sliding, ALL_LAYERS" : "all sliding, SLIDING_ONLY";
        expect_change(m, &two, mask, 6, 3, 3, what);   /* image 0's first row sees its last row */
        expect_change(m, &two, mask, 11, 8, 8, what);  /* image 0 never sees image 1; image 1's first row does */
    }
    set_layers(m, 1);
    expect_change(m, &two, ENGINE_IMAGE_MASK_SLIDING_ONLY, 6, 6, 6, "all full, SLIDING_ONLY"); /* causal */
    expect_change(m, &two, ENGINE_IMAGE_MASK_SLIDING_ONLY, 11, 11, 11, "all full, SLIDING_ONLY");
    expect_change(m, &two, ENGINE_IMAGE_MASK_ALL_LAYERS, 6, 3, 3, "all full, ALL_LAYERS");
    expect_change(m, &two, ENGINE_IMAGE_MASK_ALL_LAYERS, 11, 8, 8, "all full, ALL_LAYERS");

    /* one sliding layer (no stacking of windows) and an image of W + 4 rows from row 1: a row p sees row 1
     * through the window while 1 > p - W, i.e. up to p = W; past that only the ALL_LAYERS mask lets the
     * image block reach it, and never the text row after the image */
    set_layers(m, 0);
    m->cfg.text.n_layers = 1;
    img_prompt_init(&one, m, W + 6, 1, W + 4, 0, 0);
    {
        struct img_prompt p = one;
        int V = m->cfg.text.vocab, last = W + 4;
        float *a = img_logits(m, &one, ENGINE_IMAGE_MASK_SLIDING_ONLY), *b, *c, *d;
        img_prompt_change(&p, m, 1);
        b = img_logits(m, &p, ENGINE_IMAGE_MASK_SLIDING_ONLY);
        c = img_logits(m, &one, ENGINE_IMAGE_MASK_ALL_LAYERS);
        d = img_logits(m, &p, ENGINE_IMAGE_MASK_ALL_LAYERS);
        EXPECTF(!rows_same(a, b, W, W + 1, V), "SLIDING_ONLY: row %d has row 1 in its window", W);
        EXPECTF(rows_same(a, b, W + 1, W + 6, V), "SLIDING_ONLY: rows %d.. must not see row 1 past the window", W + 1);
        EXPECTF(!rows_same(c, d, last, last + 1, V), "ALL_LAYERS: row %d sees row 1 of its image", last);
        EXPECTF(rows_same(c, d, last + 1, W + 6, V), "ALL_LAYERS: the text row after the image is outside the block");
        EXPECTF(rows_same(c, d, 0, 1, V) && rows_same(a, b, 0, 1, V), "row 0 precedes the image");
        free(a);
        free(b);
        free(c);
        free(d);
    }
    model_free(m);
}

int main(void)
{
    RUN_TEST(test_rope_frequencies);
    RUN_TEST(test_sliding_window_edge);
    RUN_TEST(test_k_eq_v);
    RUN_TEST(test_softcap);
    RUN_TEST(test_image_block);
    return test_report();
}
