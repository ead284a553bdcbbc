/* Tokens drawn by the engine (engine_item.sample / sampled) against samp_sample on the engine's own logits,
 * on the CPU engine with the 12B-style fixture checkpoint. The CUDA engine draws on the device and
 * test_cuda_engine holds it to the same rule; here the host draw of engine.c is checked:
 *
 *   every row of a prompt chunk, at the position after the row, for greedy, top-k, top-p, min-p, full
 *   vocabulary and suppressed ids; two items of one step with different parameters (one also asking for
 *   logits, which must be the plain logits); a decode window; and the refusals (no sampled array, parameters
 *   out of range), which leave the streams as they were. */
#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "test.h"

#define FIXTURE "tests/fixtures/engine/unified"
#define T 24

static struct engine *open_engine(struct g4_model *m, int streams)
{
    struct engine_opts o = {ENGINE_CPU, streams, 64, 1, ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_FP32};
    char err[G4_ERR_MAX];
    struct engine *e = engine_create(m, &o, err);
    EXPECTF(e, "%s", err);
    return e;
}

static void prompt_ids(int32_t *ids, int n, int salt)
{
    ids[0] = 2;
    for (int i = 1; i < n; i++) ids[i] = 3 + (i * 37 + salt * 11) % 480;
}

/* The parameter sets every check runs: greedy, top-k, top-p, min-p over the whole vocabulary, greedy with
 * the argmax of row 0 suppressed, and the Gemma 4 defaults. */
static int param_sets(struct samp_params *p, int32_t argmax0)
{
    int n = 0;
    samp_params_init(&p[n]);
    p[n++].temperature = 0.0f;
    samp_params_init(&p[n]);
    p[n].temperature = 0.7f, p[n].top_k = 5, p[n++].seed = 11;
    samp_params_init(&p[n]);
    p[n].temperature = 1.3f, p[n].top_p = 0.5f, p[n++].seed = 12;
    samp_params_init(&p[n]);
    p[n].temperature = 1.0f, p[n].min_p = 0.02f, p[n++].seed = 13;
    samp_params_init(&p[n]);
    p[n].temperature = 0.0f, p[n].suppress_ids[0] = argmax0, p[n++].n_suppress_ids = 1;
    samp_params_gemma4(&p[n]);
    p[n].suppress_ids[0] = 300, p[n].suppress_ids[1] = 301; /* the real ids are past the fixture's vocabulary */
    p[n++].seed = 14;
    return n;
}

static int32_t argmax(const float *x, int V)
{
    int32_t best = 0;
    for (int i = 1; i < V; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Every row of one prompt chunk: drawn == samp_sample(row's logits, row + 1). */
static void test_prompt_rows(void)
{
    char err[G4_ERR_MAX];
    struct g4_model *m = model_load(FIXTURE, 0, err);
    struct samp_params p[8];
    int32_t ids[T], drawn[T];
    float *logits;
    int V, np, differs = 0;
    EXPECTF(m, "%s", err);
    if (!m) return;
    V = m->cfg.text.vocab;
    prompt_ids(ids, T, 0);
    logits = g4_malloc((size_t)T * V * sizeof *logits);
    {
        struct engine *e = open_engine(m, 1);
        EXPECTF(prefill_run(e, engine_stream_open(e), ids, T, NULL, 0, ENGINE_CHUNK_ROWS, logits, 1, err) == 0, "%s", err);
        engine_destroy(e);
    }
    np = param_sets(p, argmax(logits, V));
    samp_ws *ws = samp_ws_create(V);
    for (int k = 0; k < np; k++) {
        struct engine *e = open_engine(m, 1);
        struct engine_item it = {.stream = engine_stream_open(e), .n = T, .tokens = ids, .sample = &p[k], .sampled = drawn};
        EXPECTF(engine_step(e, &it, 1, err) == 0, "%s", err);
        for (int r = 0; r < T; r++) {
            int32_t want = samp_sample(&p[k], logits + (size_t)r * V, (uint64_t)r + 1, ws);
            EXPECTF(drawn[r] == want, "set %d row %d: drew %d, samp_sample %d", k, r, drawn[r], want);
            differs += k > 0 && drawn[r] != samp_sample(&p[0], logits + (size_t)r * V, (uint64_t)r + 1, ws);
        }
        engine_destroy(e);
    }
    EXPECTF(differs > 0, "no parameter set ever drew other than greedy: the sets test nothing");
    samp_ws_destroy(ws);
    free(logits);
    model_free(m);
}

/* Two streams in one step with different parameters, then a decode window on each. */
static void test_step_and_window(void)
{
    char err[G4_ERR_MAX];
    struct g4_model *m = model_load(FIXTURE, 0, err);
    struct samp_params p[8];
    int32_t a[T + 4], b[T + 4], da[4], db[4];
    float *ref_a, *ref_b, *got_b;
    int V;
    EXPECTF(m, "%s", err);
    if (!m) return;
    V = m->cfg.text.vocab;
    prompt_ids(a, T + 4, 1);
    prompt_ids(b, T + 4, 2);
    ref_a = g4_malloc((size_t)(T + 4) * V * sizeof *ref_a);
    ref_b = g4_malloc((size_t)(T + 4) * V * sizeof *ref_b);
    got_b = g4_malloc((size_t)4 * V * sizeof *got_b);
    {
        struct engine *e = open_engine(m, 2);
        EXPECTF(prefill_run(e, engine_stream_open(e), a, T + 4, NULL, 0, ENGINE_CHUNK_ROWS, ref_a, 1, err) == 0, "%s", err);
        EXPECTF(prefill_run(e, engine_stream_open(e), b, T + 4, NULL, 0, ENGINE_CHUNK_ROWS, ref_b, 1, err) == 0, "%s", err);
        engine_destroy(e);
    }
    param_sets(p, 0);
    samp_ws *ws = samp_ws_create(V);
    struct engine *e = open_engine(m, 2);
    int sa = engine_stream_open(e), sb = engine_stream_open(e);
    /* the prompts, last row drawn; stream b also asks for its last row's logits */
    struct engine_item its[2] = {
        {.stream = sa, .n = T, .tokens = a, .logits_from = T - 1, .sample = &p[1], .sampled = da},
        {.stream = sb, .n = T, .tokens = b, .logits_from = T - 1, .logits = got_b, .sample = &p[5], .sampled = db},
    };
    EXPECTF(engine_step(e, its, 2, err) == 0, "%s", err);
    EXPECT(da[0] == samp_sample(&p[1], ref_a + (size_t)(T - 1) * V, T, ws));
    EXPECT(db[0] == samp_sample(&p[5], ref_b + (size_t)(T - 1) * V, T, ws));
    EXPECTF(!memcmp(got_b, ref_b + (size_t)(T - 1) * V, (size_t)V * sizeof *got_b), "logits asked beside a draw differ");
    /* a window of 4 rows on each stream: rows T … T+3, drawn for every row */
    its[0] = (struct engine_item){.stream = sa, .n = 4, .tokens = a + T, .sample = &p[2], .sampled = da};
    its[1] = (struct engine_item){.stream = sb, .n = 4, .tokens = b + T, .logits_from = 1, .sample = &p[3], .sampled = db};
    EXPECTF(engine_step(e, its, 2, err) == 0, "%s", err);
    for (int r = 0; r < 4; r++) {
        EXPECTF(da[r] == samp_sample(&p[2], ref_a + (size_t)(T + r) * V, (uint64_t)(T + r + 1), ws), "window a row %d", r);
        if (r >= 1)
            EXPECTF(db[r - 1] == samp_sample(&p[3], ref_b + (size_t)(T + r) * V, (uint64_t)(T + r + 1), ws),
                    "window b row %d", r);
    }
    engine_destroy(e);
    samp_ws_destroy(ws);
    free(ref_a);
    free(ref_b);
    free(got_b);
    model_free(m);
}

/* Refused draws: the step does nothing and says why. */
static void test_refusals(void)
{
    char err[G4_ERR_MAX];
    struct g4_model *m = model_load(FIXTURE, 0, err);
    struct samp_params p;
    int32_t ids[4] = {2, 10, 11, 12}, drawn[4];
    EXPECTF(m, "%s", err);
    if (!m) return;
    struct engine *e = open_engine(m, 1);
    int s = engine_stream_open(e);
    samp_params_init(&p);
    struct engine_item it = {.stream = s, .n = 4, .tokens = ids, .sample = &p};
    EXPECT(engine_step(e, &it, 1, err) == -1 && strstr(err, "sampled"));
    it.sampled = drawn;
    p.temperature = -1.0f;
    EXPECT(engine_step(e, &it, 1, err) == -1 && strstr(err, "temperature"));
    samp_params_init(&p);
    p.suppress_ids[0] = m->cfg.text.vocab, p.n_suppress_ids = 1;
    EXPECT(engine_step(e, &it, 1, err) == -1 && strstr(err, "suppress_ids[0]"));
    it.logits_from = 4;
    samp_params_init(&p);
    EXPECT(engine_step(e, &it, 1, err) == -1 && strstr(err, "logits_from"));
    EXPECT(engine_stream_length(e, s) == 0);
    it.logits_from = 3;
    EXPECTF(engine_step(e, &it, 1, err) == 0, "%s", err);
    EXPECT(engine_stream_length(e, s) == 4 && drawn[0] >= 0 && drawn[0] < m->cfg.text.vocab);
    engine_destroy(e);
    model_free(m);
}

int main(void)
{
    RUN_TEST(test_prompt_rows);
    RUN_TEST(test_step_and_window);
    RUN_TEST(test_refusals);
    return test_report();
}
