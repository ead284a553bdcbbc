/* scheduler — the engine thread (scheduler.h): admission from the queue, the plan of each step (one decode
 * row per running stream, prompt chunks up to ENGINE_CHUNK_ROWS rows, ENGINE_SOLO_CHUNK_ROWS of text alone),
 * the engine step, sampling and detokenizing, and posting results into the outboxes. Requests, outboxes and
 * statistics as other threads see them are in sched_req.c.
 *
 * Locking: the engine thread holds s->lock while it plans and posts, and drops it for the engine step and for
 * sampling, so the service thread's polls never wait for the engine. Slots are the engine thread's alone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/prefill.h"
#include "engine/sched_internal.h"
#include "model/model.h"

/* Per-slot results of one step, made without the lock and posted with it. */
struct step_out {
    int rows;                /* rows this slot ran */
    int prefill;             /* 1: a prompt chunk */
    int sampled;             /* 1: a token was sampled */
    enum samp_finish fin;
    int failed;
    char code[SCHED_CODE_MAX];
    char msg[G4_ERR_MAX];
    struct sbuf text;        /* text to post */
    double ttft, itl;        /* observations, < 0 when none */
};

struct sched_loop {
    struct engine_item *items; /* (max_streams) */
    int *item_slot;            /* (max_streams) slot of each item */
    struct step_out *out;      /* (max_streams) by slot */
    uint64_t admit_seq;
    uint64_t *seq;             /* (max_streams) admission order of each slot */
};

/* ---- slots --------------------------------------------------------------------------------------------- */

/* Ends the request in slot i with res, closes its engine stream and frees the slot. Lock held. */
static void slot_end_locked(struct sched *s, int i, const struct sched_result *res)
{
    struct sched_slot *sl = &s->slots[i];
    struct sched_req *r = sl->r;
    sched_req_end_locked(s, r, res);
    engine_stream_close(s->e, sl->stream);
    if (sl->stop_live) samp_stop_free(&sl->stop);
    sl->stop_live = 0;
    tok_stream_reset(sl->ts);
    free(sl->blocks);
    free(sl->img_rows);
    sl->blocks = NULL;
    sl->img_rows = NULL;
    sl->img_rows_cap = 0;
    sl->r = NULL;
    sl->stream = -1;
    sl->paused_since = 0;
    s->running--;
    sched_req_unref_locked(s, r);
    s->posted = 1;
}

/* The result of a request that ran: how it finished, with its counts and timings. */
static void run_result(const struct sched_slot *sl, enum samp_finish fin, int cancelled, struct sched_result *res)
{
    memset(res, 0, sizeof *res);
    res->finish = fin;
    res->cancelled = cancelled;
    res->prompt_tokens = sl->r->prompt.n;
    res->completion_tokens = sl->n_gen;
    if (sl->n_gen > 0) res->ttft_s = sl->t_first - sl->r->t_submit;
    if (sl->n_gen > 1 && sl->t_last > sl->t_first) res->tokens_per_s = (sl->n_gen - 1) / (sl->t_last - sl->t_first);
}

/* Pops queued requests into free slots: opens a stream, maps image rows, sets up the detokenizer and the
 * stop-string matcher. A prompt that cannot run (context, image runs) ends here with an error. Lock held. */
static void admit_locked(struct sched *s, struct sched_loop *L)
{
    while (s->running < s->o.max_streams && s->q_head) {
        struct sched_req *r = s->q_head;
        struct sched_slot *sl = NULL;
        int i;
        char err[G4_ERR_MAX];
        s->q_head = r->next;
        if (!s->q_head) s->q_tail = NULL;
        s->q_len--;
        r->next = NULL;
        for (i = 0; i < s->o.max_streams; i++)
            if (!s->slots[i].r) break;
        G4_CHECK(i < s->o.max_streams, "no free slot with %d of %d running", s->running, s->o.max_streams);
        sl = &s->slots[i];
        sl->stream = engine_stream_open(s->e);
        G4_CHECK(sl->stream >= 0, "engine has fewer streams than the scheduler's %d", s->o.max_streams);
        sl->r = r;
        sl->fed = sl->n_gen = 0;
        sl->paused_since = 0;
        r->state = SCHED_REQ_RUNNING;
        s->running++;
        L->seq[i] = L->admit_seq++;
        s->st.prompt_tokens += (uint64_t)r->prompt.n;
        samp_stop_init(&sl->stop, &r->params);
        sl->stop_live = 1;
        if (r->prompt.n < 1 || r->prompt.n + r->params.max_tokens > s->o.context) {
            struct sched_result res;
            snprintf(err, sizeof err, "the prompt (%d tokens) plus max_tokens (%d) exceeds the context of %d positions",
                     r->prompt.n, r->params.max_tokens, s->o.context);
            sched_error_result(&res, "prompt_too_long", err);
            slot_end_locked(s, i, &res);
            continue;
        }
        if (r->prompt.n_images > 0) {
            struct prefill_image imgs[64];
            int n = r->prompt.n_images;
            G4_CHECK(n <= 64, "%d images in one prompt", n);
            for (int k = 0; k < n; k++)
                imgs[k] = (struct prefill_image){r->prompt.images[k].patches, r->prompt.images[k].positions,
                                                 r->prompt.images[k].n};
            sl->blocks = g4_malloc((size_t)r->prompt.n * sizeof *sl->blocks);
            if (prefill_image_blocks(r->prompt.ids, r->prompt.n, s->image_token, imgs, n, sl->blocks, err)) {
                struct sched_result res;
                sched_error_result(&res, "image_error", err);
                slot_end_locked(s, i, &res);
            }
        }
    }
}

/* Reports each queued request's position when it changed. Lock held. */
static void positions_locked(struct sched *s)
{
    int pos = 1;
    for (struct sched_req *r = s->q_head; r; r = r->next, pos++) {
        if (r->position == pos) continue;
        r->position = pos;
        r->position_dirty = 1;
        s->posted = 1;
    }
}

/* Ends cancelled requests (queued or running), slow readers, and, when stopping, everything. Lock held. */
static void end_requests_locked(struct sched *s, double now)
{
    struct sched_req **pp = &s->q_head, *prev = NULL;
    struct sched_result res;
    while (*pp) {
        struct sched_req *r = *pp;
        if (!r->cancel && !s->stopping) {
            prev = r;
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        if (s->q_tail == r) s->q_tail = prev;
        s->q_len--;
        r->next = NULL;
        if (s->stopping) {
            sched_error_result(&res, "shutdown", s->stop_msg);
        } else {
            memset(&res, 0, sizeof res);
            res.cancelled = 1;
            res.prompt_tokens = r->prompt.n;
        }
        sched_req_end_locked(s, r, &res);
        sched_req_unref_locked(s, r);
        s->posted = 1;
    }
    for (int i = 0; i < s->o.max_streams; i++) {
        struct sched_slot *sl = &s->slots[i];
        double limit = s->o.slow_reader_ms / 1000.0;
        if (!sl->r) continue;
        if (s->stopping) {
            sched_error_result(&res, "shutdown", s->stop_msg);
            slot_end_locked(s, i, &res);
        } else if (sl->r->cancel) {
            run_result(sl, SAMP_FINISH_NONE, 1, &res);
            slot_end_locked(s, i, &res);
        } else if (sl->paused_since > 0 && now - sl->paused_since >= limit) {
            char msg[G4_ERR_MAX];
            snprintf(msg, sizeof msg,
                     "the client left %zu bytes of reply unread for %.0f s (limits: %zu bytes, %d ms); the stream was ended",
                     sl->r->text.n, now - sl->paused_since, s->o.max_pending_bytes, s->o.slow_reader_ms);
            sched_error_result(&res, "slow_reader", msg);
            slot_end_locked(s, i, &res);
        }
    }
}

/* ---- the step ------------------------------------------------------------------------------------------ */

/* Chooses this step's items: a decode row for every running stream whose outbox has room (others pause),
 * then prompt chunks, oldest request first, while the step holds at most ENGINE_CHUNK_ROWS prompt rows (a
 * first chunk may be longer to hold a whole image, or ENGINE_SOLO_CHUNK_ROWS of text in a step of its own).
 * Marks slots and their chunk ends; returns the number of items. Lock held. */
static int plan_locked(struct sched *s, struct sched_loop *L, double now)
{
    int n = 0, prefill_rows = 0;
    for (int i = 0; i < s->o.max_streams; i++) {
        struct sched_slot *sl = &s->slots[i];
        sl->in_step = 0;
        if (!sl->r || sl->fed < sl->r->prompt.n) continue;
        if (sl->r->text.n >= s->o.max_pending_bytes) {
            if (sl->paused_since == 0) sl->paused_since = now;
            continue;
        }
        sl->paused_since = 0;
        sl->in_step = 1;
        L->item_slot[n++] = i;
    }
    for (;;) {
        int best = -1, rows;
        for (int i = 0; i < s->o.max_streams; i++) {
            struct sched_slot *sl = &s->slots[i];
            if (!sl->r || sl->in_step || sl->fed >= sl->r->prompt.n) continue;
            if (best < 0 || L->seq[i] < L->seq[best]) best = i;
        }
        if (best < 0) break;
        {
            struct sched_slot *sl = &s->slots[best];
            /* a chunk alone in its step (no decode rows) may be longer when it is text: prefill_next_end */
            sl->chunk_end = prefill_next_end(sl->r->prompt.ids, sl->r->prompt.n, sl->fed, s->image_token, n == 0);
            rows = sl->chunk_end - sl->fed;
            if (prefill_rows > 0 && prefill_rows + rows > ENGINE_CHUNK_ROWS) break;
            prefill_rows += rows;
            sl->in_step = 1;
            L->item_slot[n++] = best;
        }
    }
    return n;
}

/* Asks the engine to draw the token after the item's last row: with the request's parameters, plus
 * generation_config's begin_suppress_tokens for the first new token. */
static void set_draw(struct sched *s, struct sched_slot *sl, struct engine_item *it)
{
    const struct cfg_gen *g = &engine_model(s->e)->gen;
    sl->draw = sl->r->params;
    if (sl->n_gen == 0)
        for (int k = 0; k < g->n_begin_suppress && sl->draw.n_suppress_ids < SAMP_MAX_SUPPRESS_IDS; k++)
            sl->draw.suppress_ids[sl->draw.n_suppress_ids++] = g->begin_suppress_ids[k];
    sl->drawn = -1;
    it->sample = &sl->draw;
    it->sampled = &sl->drawn;
}

/* Fills item k for slot i: a decode row, or the next prompt chunk with its image rows embedded. Returns 0,
 * or -1 with the slot's step_out marked failed (an image the engine refuses). Engine thread, no lock. */
static int build_item(struct sched *s, struct sched_loop *L, int k, int i)
{
    struct sched_slot *sl = &s->slots[i];
    struct sched_req *r = sl->r;
    struct engine_item *it = &L->items[k];
    struct step_out *o = &L->out[i];
    memset(it, 0, sizeof *it);
    it->stream = sl->stream;
    set_draw(s, sl, it);
    if (sl->fed >= r->prompt.n) {
        it->n = 1;
        it->tokens = &sl->next_token;
        o->rows = 1;
        return 0;
    }
    {
        int start = sl->fed, end = sl->chunk_end;
        int n_img = 0;
        it->n = end - start;
        it->tokens = r->prompt.ids + start;
        if (end == r->prompt.n) it->logits_from = it->n - 1;
        else it->sample = NULL;
        o->rows = it->n;
        o->prefill = 1;
        if (!sl->blocks) return 0;
        it->image_block = sl->blocks + start;
        for (int row = start; row < end; row++) n_img += sl->blocks[row] >= 0;
        if (!n_img) return 0;
        if ((size_t)n_img * s->H > sl->img_rows_cap) {
            free(sl->img_rows);
            sl->img_rows_cap = (size_t)n_img * s->H;
            sl->img_rows = g4_malloc(sl->img_rows_cap * sizeof *sl->img_rows);
        }
        for (int row = start, done = 0; row < end; row++) {
            int b = sl->blocks[row];
            const struct sched_image *im;
            if (b < 0 || (row > 0 && sl->blocks[row - 1] == b)) continue;
            im = &r->prompt.images[b];
            if (engine_embed_image(s->e, im->patches, im->positions, im->n, sl->img_rows + (size_t)done * s->H, o->msg)) {
                o->failed = 1;
                snprintf(o->code, sizeof o->code, "image_error");
                return -1;
            }
            done += im->n;
        }
        it->image_rows = sl->img_rows;
        it->n_image_rows = n_img;
    }
    return 0;
}

/* Takes slot i's next token, drawn by the engine, detokenizes it and feeds the stop-string matcher, staging
 * the text in its step_out (as cmd_generate does for one stream). Engine thread, no lock. */
static void sample_slot(struct sched *s, struct sched_loop *L, int i, double now)
{
    struct sched_slot *sl = &s->slots[i];
    struct sched_req *r = sl->r;
    struct step_out *o = &L->out[i];
    const struct samp_params *p = &sl->draw;
    const char *piece, *text;
    size_t plen, tlen;
    int matched = 0;
    int32_t tok = sl->drawn;
    if (tok < 0) {
        o->failed = 1;
        snprintf(o->code, sizeof o->code, "engine_error");
        snprintf(o->msg, sizeof o->msg, "no token can be sampled (every candidate suppressed or not finite)");
        return;
    }
    o->sampled = 1;
    sl->n_gen++;
    if (sl->n_gen == 1) {
        sl->t_first = now;
        o->ttft = now - r->t_submit;
    } else {
        o->itl = now - sl->t_last;
    }
    sl->t_last = now;
    sl->next_token = tok;
    o->fin = samp_finish_after_token(p, tok, sl->n_gen);
    if (o->fin != SAMP_FINISH_STOP_ID) {
        if (tok_stream_push(sl->ts, tok, &piece, &plen, o->msg)) {
            o->failed = 1;
            snprintf(o->code, sizeof o->code, "engine_error");
            return;
        }
        tlen = samp_stop_feed(&sl->stop, piece, plen, &text, &matched);
        sbuf_append(&o->text, text, tlen);
        if (matched) o->fin = SAMP_FINISH_STOP_STRING;
    }
    if (o->fin != SAMP_FINISH_NONE && o->fin != SAMP_FINISH_STOP_STRING) {
        tok_stream_flush(sl->ts, &text, &tlen);
        if (tlen) {
            tlen = samp_stop_feed(&sl->stop, text, tlen, &text, &matched);
            sbuf_append(&o->text, text, tlen);
        }
        tlen = samp_stop_flush(&sl->stop, &text);
        sbuf_append(&o->text, text, tlen);
    }
}

/* Runs the planned items: embeds images, one engine_step for all of them, or, if the engine refuses the
 * batch, each item alone so that only the refused ones fail. Then samples every row with logits. Engine
 * thread, no lock. */
static void run_step(struct sched *s, struct sched_loop *L, int n_items)
{
    char err[G4_ERR_MAX];
    int n = 0;
    double now;
    for (int k = 0; k < n_items; k++) {
        int i = L->item_slot[k];
        struct step_out *o = &L->out[i];
        o->rows = o->prefill = o->sampled = o->failed = 0;
        o->fin = SAMP_FINISH_NONE;
        o->text.n = 0;
        o->ttft = o->itl = -1;
        if (build_item(s, L, n, i) == 0) L->item_slot[n++] = i;
    }
    if (n && engine_step(s->e, L->items, n, err)) {
        for (int k = 0; k < n; k++) {
            struct step_out *o = &L->out[L->item_slot[k]];
            if (engine_step(s->e, &L->items[k], 1, o->msg)) {
                o->failed = 1;
                snprintf(o->code, sizeof o->code, "engine_error");
            }
        }
    }
    now = util_now();
    for (int k = 0; k < n; k++) {
        int i = L->item_slot[k];
        struct step_out *o = &L->out[i];
        if (o->failed) continue;
        if (o->prefill) s->slots[i].fed += o->rows;
        if (L->items[k].sample) sample_slot(s, L, i, now);
    }
}

/* Posts the step's results into the outboxes and statistics; ends finished and failed requests. Lock held. */
static void post_locked(struct sched *s, struct sched_loop *L, int n_items)
{
    long held = 0;
    for (int i = 0; i < s->o.max_streams; i++) {
        struct sched_slot *sl = &s->slots[i];
        struct step_out *o = &L->out[i];
        struct sched_result res;
        if (!sl->r || !sl->in_step) continue;
        sl->in_step = 0;
        if (!o->failed) {
            if (o->prefill) s->st.prefill_rows += (uint64_t)o->rows;
            else s->st.decode_rows += (uint64_t)o->rows;
        }
        if (o->text.n) {
            sbuf_append(&sl->r->text, o->text.p, o->text.n);
            s->posted = 1;
        }
        if (o->sampled) {
            s->st.generated_tokens++;
            sl->r->n_generated = sl->n_gen;
            if (o->ttft >= 0) sched_hist_observe(&s->st.ttft, o->ttft);
            if (o->itl >= 0) sched_hist_observe(&s->st.itl, o->itl);
        }
        if (o->failed) {
            sched_error_result(&res, o->code, o->msg);
            slot_end_locked(s, i, &res);
        } else if (o->fin != SAMP_FINISH_NONE) {
            run_result(sl, o->fin, 0, &res);
            slot_end_locked(s, i, &res);
        }
    }
    for (int i = 0; i < s->o.max_streams; i++)
        if (s->slots[i].r) held += s->slots[i].fed + s->slots[i].n_gen;
    s->kv_held = held;
    if (n_items) s->st.steps++;
}

/* ---- the thread ---------------------------------------------------------------------------------------- */

static void wake_if_posted(struct sched *s)
{
    if (s->posted && s->o.wake) s->o.wake(s->o.wake_ctx);
    s->posted = 0;
}

/* Waits (lock held) until something changes: a submission, cancel, drained outbox or shutdown signals the
 * condition; a paused stream's slow-reader deadline bounds the wait. */
static void wait_locked(struct sched *s, double now)
{
    double deadline = 0;
    for (int i = 0; i < s->o.max_streams; i++) {
        const struct sched_slot *sl = &s->slots[i];
        double d;
        if (!sl->r || sl->paused_since == 0) continue;
        d = sl->paused_since + s->o.slow_reader_ms / 1000.0;
        if (deadline == 0 || d < deadline) deadline = d;
    }
    if (deadline == 0) {
        pthread_cond_wait(&s->cond, &s->lock);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double wait = deadline - now + 0.001;
        if (wait < 0.001) wait = 0.001;
        ts.tv_sec += (time_t)wait;
        ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
        G4_CHECK(rc == 0 || rc == ETIMEDOUT, "pthread_cond_timedwait: %d", rc);
    }
}

static void *engine_main(void *arg)
{
    struct sched *s = arg;
    struct sched_loop L = {0};
    int M = s->o.max_streams;
    L.items = g4_calloc((size_t)M, sizeof *L.items);
    L.item_slot = g4_calloc((size_t)M, sizeof *L.item_slot);
    L.out = g4_calloc((size_t)M, sizeof *L.out);
    L.seq = g4_calloc((size_t)M, sizeof *L.seq);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        double now = util_now();
        int n;
        end_requests_locked(s, now);
        if (s->quit) break;
        admit_locked(s, &L);
        positions_locked(s);
        n = plan_locked(s, &L, now);
        if (n == 0) {
            sched_rate_sample_locked(s, now, 1);
            if (s->posted) { /* wake the service thread, then look again: something may have come meanwhile */
                pthread_mutex_unlock(&s->lock);
                wake_if_posted(s);
                pthread_mutex_lock(&s->lock);
                continue;
            }
            wait_locked(s, now);
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        wake_if_posted(s);
        run_step(s, &L, n);
        pthread_mutex_lock(&s->lock);
        post_locked(s, &L, n);
        sched_rate_sample_locked(s, util_now(), 0);
        pthread_mutex_unlock(&s->lock);
        wake_if_posted(s);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    wake_if_posted(s);
    for (int i = 0; i < M; i++) sbuf_free(&L.out[i].text);
    free(L.items);
    free(L.item_slot);
    free(L.out);
    free(L.seq);
    return NULL;
}

/* ---- lifecycle ----------------------------------------------------------------------------------------- */

struct sched *sched_create(struct engine *e, const struct sched_opts *o, char *err)
{
    const struct g4_model *m = engine_model(e);
    pthread_condattr_t ca;
    struct sched *s;
    if (o->max_streams < 1 || o->max_queue < 0 || o->context < 1 || !o->tok) {
        g4_errf(err, "scheduler: max_streams %d, max_queue %d, context %d, tokenizer %s: invalid", o->max_streams,
                o->max_queue, o->context, o->tok ? "given" : "missing");
        return NULL;
    }
    s = g4_calloc(1, sizeof *s);
    s->e = e;
    s->o = *o;
    if (!s->o.max_pending_bytes) s->o.max_pending_bytes = SCHED_DEFAULT_MAX_PENDING_BYTES;
    if (!s->o.slow_reader_ms) s->o.slow_reader_ms = SCHED_DEFAULT_SLOW_READER_MS;
    s->V = m->cfg.text.vocab;
    s->H = m->cfg.text.hidden;
    s->image_token = m->cfg.image_token_id;
    s->slots = g4_calloc((size_t)o->max_streams, sizeof *s->slots);
    for (int i = 0; i < o->max_streams; i++) {
        s->slots[i].stream = -1;
        s->slots[i].ts = tok_stream_create(o->tok, TOK_DEC_SKIP_SPECIAL);
    }
    sched_stats_init(&s->st);
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    G4_CHECK(pthread_create(&s->thread, NULL, engine_main, s) == 0, "cannot start the engine thread");
    return s;
}

void sched_destroy(struct sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    if (!s->stopping) snprintf(s->stop_msg, sizeof s->stop_msg, "the server is shutting down");
    s->stopping = 1;
    s->quit = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    G4_CHECK(s->running == 0 && s->q_len == 0, "scheduler ended with %d running, %d queued", s->running, s->q_len);
    G4_CHECK(s->live == 0, "%d requests still referenced at scheduler shutdown", s->live);
    for (int i = 0; i < s->o.max_streams; i++) {
        tok_stream_destroy(s->slots[i].ts);
    }
    free(s->slots);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}
