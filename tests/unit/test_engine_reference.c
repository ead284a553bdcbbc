/* The CPU engine against Hugging Face transformers: the fixtures of tests/reference/make_engine_fixtures.py
 * (two tiny random checkpoints saved by transformers 5.17, fp32 logits for every prompt position, greedy
 * continuations, an image prompt under both image-mask variants).
 *
 * For every case and several ways of feeding the prompt (one chunk, chunks of 5, one row at a time) the
 * logits of every row must be within 1e-4 of the reference (max |Δ| / max |ref| per row), the rows must be
 * bit-identical across the feeds (the exactness contract), and greedy decoding must reproduce transformers'
 * tokens and per-step logits. A table of the worst errors is printed.
 *
 * Threads: on the unified fixture, every case under both image masks gives bit-identical logits (every
 * prompt row, then decode steps) with engine_opts.n_threads 1, 2 and 3 (the pool's work split must never
 * change a sum). */
#include <cJSON.h>
#include <float.h>

#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "test.h"

#define FIXTURES "tests/fixtures/engine"
#define TOLERANCE 1e-4

static void *read_all(const char *dir, const char *name, size_t *len)
{
    char path[1024], err[G4_ERR_MAX];
    void *p;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    p = util_read_file(path, 64u << 20, len, err);
    if (!p) fprintf(stderr, "  %s\n", err);
    return p;
}

/* Worst per-row relative error of got against ref over T rows of V. */
static double worst_rel(const float *got, const float *ref, int T, int V)
{
    double worst = 0;
    for (int t = 0; t < T; t++) {
        double md = 0, mr = 0;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)got[(size_t)t * V + v] - ref[(size_t)t * V + v]);
            if (!(d <= md)) md = d; /* NaN propagates */
            if (fabs(ref[(size_t)t * V + v]) > mr) mr = fabs(ref[(size_t)t * V + v]);
        }
        if (!(md / mr <= worst)) worst = md / mr;
    }
    return worst;
}

static int argmax_suppressed(const float *l, int V, const cJSON *suppress)
{
    int best = -1;
    for (int v = 0; v < V; v++) {
        int skip = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, suppress) skip |= (int)s->valuedouble == v;
        if (!skip && (best < 0 || l[v] > l[best])) best = v;
    }
    return best;
}

struct fixture_images {
    struct prefill_image img[4];
    void *buf[8];
    int n;
};

static int load_images(const char *dir, const cJSON *c, struct fixture_images *fi)
{
    const cJSON *f;
    memset(fi, 0, sizeof *fi);
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(c, "images")) {
        char name[256];
        size_t lp, lq;
        snprintf(name, sizeof name, "%s.patches.u8", f->valuestring);
        fi->buf[2 * fi->n] = read_all(dir, name, &lp);
        snprintf(name, sizeof name, "%s.pos.i32", f->valuestring);
        fi->buf[2 * fi->n + 1] = read_all(dir, name, &lq);
        if (!fi->buf[2 * fi->n] || !fi->buf[2 * fi->n + 1]) return -1;
        fi->img[fi->n].patches = fi->buf[2 * fi->n];
        fi->img[fi->n].positions = fi->buf[2 * fi->n + 1];
        fi->img[fi->n].n = (int)(lq / 8);
        EXPECT(lp == (size_t)fi->img[fi->n].n * 6912);
        fi->n++;
    }
    return 0;
}

/* Runs one case under one image mask with prompt chunks of `chunk` rows; returns (T, V) logits. */
static float *run_prompt(struct g4_model *m, const int32_t *ids, int T, const struct fixture_images *fi,
                         enum engine_image_mask mask, int chunk)
{
    struct engine_opts o = {ENGINE_CPU, 1, T + 16, 2, mask, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    float *logits = g4_malloc((size_t)T * m->cfg.text.vocab * sizeof *logits);
    int s;
    EXPECTF(e, "%s", err);
    if (!e) return logits;
    s = engine_stream_open(e);
    EXPECTF(prefill_run(e, s, ids, T, fi->img, fi->n, chunk, logits, 1, err) == 0, "%s", err);
    engine_destroy(e);
    return logits;
}

#define THREAD_DECODE_STEPS 4

/* One case on an engine of n_threads workers: (T + THREAD_DECODE_STEPS, V) logits, every prompt row (one
 * chunk) and then decode steps fed the prompt's own ids 1, 2, ... (any fixed tokens do). */
static float *run_threads(struct g4_model *m, const int32_t *ids, int T, const struct fixture_images *fi,
                          enum engine_image_mask mask, int n_threads)
{
    struct engine_opts o = {ENGINE_CPU, 1, T + THREAD_DECODE_STEPS, n_threads, mask, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    size_t V = (size_t)m->cfg.text.vocab;
    float *logits = g4_calloc((size_t)(T + THREAD_DECODE_STEPS) * V, sizeof *logits);
    int s;
    EXPECTF(e, "%s", err);
    if (!e) return logits;
    s = engine_stream_open(e);
    EXPECTF(prefill_run(e, s, ids, T, fi->img, fi->n, ENGINE_CHUNK_ROWS, logits, 1, err) == 0, "%s", err);
    for (int g = 0; g < THREAD_DECODE_STEPS; g++) {
        int32_t tok = ids[1 + g % (T - 1)];
        struct engine_item it = {.stream = s, .n = 1, .tokens = &tok, .logits = logits + (size_t)(T + g) * V};
        EXPECTF(engine_step(e, &it, 1, err) == 0, "%s", err);
    }
    engine_destroy(e);
    return logits;
}

/* Greedy decoding after the prompt: tokens and per-step logits against transformers' generate(). */
static void check_greedy(struct g4_model *m, const char *dir, const char *name, const int32_t *ids, int T,
                         const struct fixture_images *fi, const cJSON *c)
{
    const cJSON *greedy = cJSON_GetObjectItem(c, "greedy"), *suppress = cJSON_GetObjectItem(c, "suppress");
    int G = cJSON_GetArraySize(greedy), V = m->cfg.text.vocab, s, ok = 1;
    struct engine_opts o = {ENGINE_CPU, 1, T + G + 1, 2, ENGINE_IMAGE_MASK_ALL_LAYERS, ENGINE_FP32};
    char err[G4_ERR_MAX], fname[256];
    float *logits = g4_malloc((size_t)V * sizeof *logits), *dec = g4_malloc((size_t)G * V * sizeof *dec), *ref;
    struct engine *e = engine_create(m, &o, err);
    size_t len;
    snprintf(fname, sizeof fname, "%s", cJSON_GetObjectItem(cJSON_GetObjectItem(c, "decode_logits"), "file")->valuestring);
    ref = read_all(dir, fname, &len);
    EXPECT(e && ref && len == (size_t)G * V * 4);
    if (!e || !ref) goto done;
    s = engine_stream_open(e);
    EXPECTF(prefill_run(e, s, ids, T, fi->img, fi->n, ENGINE_CHUNK_ROWS, logits, 0, err) == 0, "%s", err);
    memcpy(dec, logits, (size_t)V * sizeof *dec);
    for (int g = 0; g < G; g++) {
        int32_t tok = argmax_suppressed(dec + (size_t)g * V, V, suppress);
        struct engine_item it = {.stream = s, .n = 1, .tokens = &tok};
        if (tok != cJSON_GetArrayItem(greedy, g)->valueint) ok = 0;
        EXPECTF(tok == cJSON_GetArrayItem(greedy, g)->valueint, "%s greedy step %d: %d, transformers %d", name, g,
                tok, cJSON_GetArrayItem(greedy, g)->valueint);
        if (g + 1 == G) break;
        it.logits = dec + (size_t)(g + 1) * V;
        EXPECTF(engine_step(e, &it, 1, err) == 0, "%s", err);
    }
    /* dec[g] holds the logits that chose token g (dec[0] is the prompt's last row) */
    {
        double r = worst_rel(dec, ref, G, V);
        printf("  %-8s %-14s %-8s rel %.2e  greedy %d tokens %s\n", name, "decode steps", "-", r, G,
               ok ? "identical" : "DIFFER");
        EXPECTF(r <= TOLERANCE, "%s decode logits rel error %.3g", name, r);
    }
done:
    engine_destroy(e);
    free(logits);
    free(dec);
    free(ref);
}

static void run_fixture(const char *model_name)
{
    char dir[512], err[G4_ERR_MAX];
    size_t len;
    char *json;
    cJSON *root, *c;
    struct g4_model *m;
    snprintf(dir, sizeof dir, "%s/%s", FIXTURES, model_name);
    m = model_load(dir, MODEL_CHECK_TENSORS, err);
    EXPECTF(m, "%s", err);
    json = read_all(dir, "cases.json", &len);
    root = json ? cJSON_Parse(json) : NULL;
    EXPECT(root);
    if (!m || !root) goto done;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const cJSON *ids_j = cJSON_GetObjectItem(c, "ids"), *lj = cJSON_GetObjectItem(c, "logits"), *variant;
        int T = cJSON_GetArraySize(ids_j), V = m->cfg.text.vocab, k = 0;
        int32_t *ids = g4_malloc((size_t)T * sizeof *ids);
        struct fixture_images fi;
        const cJSON *ide;
        cJSON_ArrayForEach(ide, ids_j) ids[k++] = ide->valueint;
        EXPECT(load_images(dir, c, &fi) == 0);
        /* text cases have one logits object; image cases one per mask variant */
        for (variant = cJSON_GetObjectItem(lj, "file") ? lj : lj->child; variant;
             variant = cJSON_GetObjectItem(lj, "file") ? NULL : variant->next) {
            const char *vname = variant == lj ? "-" : variant->string;
            enum engine_image_mask mask = !strcmp(vname, "generate") ? ENGINE_IMAGE_MASK_SLIDING_ONLY
                                                                      : ENGINE_IMAGE_MASK_ALL_LAYERS;
            float *ref = read_all(dir, cJSON_GetObjectItem(variant, "file")->valuestring, &len), *first = NULL;
            static const int chunks[] = {ENGINE_CHUNK_ROWS, 5, 1};
            EXPECT(ref && len == (size_t)T * V * 4);
            for (size_t ci = 0; ref && ci < sizeof chunks / sizeof *chunks; ci++) {
                float *got = run_prompt(m, ids, T, &fi, mask, chunks[ci]);
                double r = worst_rel(got, ref, T, V);
                char how[32];
                snprintf(how, sizeof how, "chunks of %d", chunks[ci]);
                printf("  %-8s %-14s %-8s rel %.2e  (T=%d V=%d)\n", name, how, vname, r, T, V);
                EXPECTF(r <= TOLERANCE, "%s/%s %s: rel error %.3g over %g", model_name, name, how, r, TOLERANCE);
                if (!first) first = got;
                else {
                    EXPECTF(!memcmp(first, got, (size_t)T * V * sizeof *got), "%s %s: rows differ from one chunk",
                            name, how);
                    free(got);
                }
            }
            free(first);
            free(ref);
        }
        check_greedy(m, dir, name, ids, T, &fi, c);
        for (int i = 0; i < 8; i++) free(fi.buf[i]);
        free(ids);
    }
done:
    cJSON_Delete(root);
    free(json);
    model_free(m);
}

static void test_unified_12b_style(void)
{
    run_fixture("unified");
}

/* The unified fixture's cases with 1, 2 and 3 worker threads: bit-identical logits. */
static void test_threads_bit_identical(void)
{
    char err[G4_ERR_MAX];
    size_t len;
    const char *dir = FIXTURES "/unified";
    struct g4_model *m = model_load(dir, MODEL_CHECK_TENSORS, err);
    char *json = read_all(dir, "cases.json", &len);
    cJSON *root = json ? cJSON_Parse(json) : NULL, *c;
    int n_cases = 0, n_images = 0;
    EXPECTF(m, "%s", err);
    EXPECT(root);
    if (!m || !root) goto done;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const cJSON *ids_j = cJSON_GetObjectItem(c, "ids"), *ide;
        int T = cJSON_GetArraySize(ids_j), k = 0, same = 1;
        size_t bytes = (size_t)(T + THREAD_DECODE_STEPS) * m->cfg.text.vocab * sizeof(float);
        int32_t *ids = g4_malloc((size_t)T * sizeof *ids);
        struct fixture_images fi;
        cJSON_ArrayForEach(ide, ids_j) ids[k++] = ide->valueint;
        EXPECT(T >= 2 && load_images(dir, c, &fi) == 0);
        n_images += fi.n;
        for (int mk = 0; mk < 2; mk++) {
            enum engine_image_mask mask = mk ? ENGINE_IMAGE_MASK_ALL_LAYERS : ENGINE_IMAGE_MASK_SLIDING_ONLY;
            float *one = run_threads(m, ids, T, &fi, mask, 1);
            for (int nt = 2; nt <= 3; nt++) {
                float *many = run_threads(m, ids, T, &fi, mask, nt);
                if (memcmp(one, many, bytes)) same = 0;
                EXPECTF(!memcmp(one, many, bytes), "%s, %s mask: %d threads differ from 1", name,
                        mk ? "all-layers" : "sliding-only", nt);
                free(many);
            }
            free(one);
        }
        printf("  %-8s T=%d images=%d: 1, 2, 3 threads %s\n", name, T, fi.n, same ? "bit-identical" : "DIFFER");
        n_cases++;
        for (int i = 0; i < 8; i++) free(fi.buf[i]);
        free(ids);
    }
    EXPECTF(n_cases >= 2 && n_images >= 1, "the fixture should have a text and an image case (%d cases, %d images)",
            n_cases, n_images);
done:
    cJSON_Delete(root);
    free(json);
    model_free(m);
}

static void test_text_31b_style(void)
{
    run_fixture("text31");
}

int main(void)
{
    RUN_TEST(test_unified_12b_style);
    RUN_TEST(test_text_31b_style);
    RUN_TEST(test_threads_bit_identical);
    return test_report();
}
