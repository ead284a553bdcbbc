/* sched_req — the scheduler's requests as the other threads see them: creation and reference counts,
 * submission into the queue, cancellation, the outbox the service thread drains (sched_poll), and the
 * statistics snapshot. The engine thread's side (admission, steps, sampling) is in scheduler.c.
 *
 * Everything here takes s->lock for a short, bounded time and never calls the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sched_internal.h"

/* Bucket bounds, seconds. TTFT spans a tiny model on a CPU (ms) to a long prompt behind a queue (s). */
static const double ttft_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double itl_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

void sched_prompt_free(struct sched_prompt *p)
{
    for (int i = 0; i < p->n_images; i++) {
        free(p->images[i].patches);
        free(p->images[i].positions);
    }
    free(p->images);
    free(p->ids);
    memset(p, 0, sizeof *p);
}

void sched_stats_init(struct sched_stats *st)
{
    memset(st, 0, sizeof *st);
    st->ttft.bounds = ttft_bounds;
    st->ttft.n_bounds = (int)(sizeof ttft_bounds / sizeof ttft_bounds[0]);
    st->itl.bounds = itl_bounds;
    st->itl.n_bounds = (int)(sizeof itl_bounds / sizeof itl_bounds[0]);
    G4_CHECK(st->ttft.n_bounds <= SCHED_HIST_MAX && st->itl.n_bounds <= SCHED_HIST_MAX, "histogram bounds");
}

void sched_hist_observe(struct sched_hist *h, double v)
{
    int b = 0;
    while (b < h->n_bounds && v > h->bounds[b]) b++;
    h->counts[b]++;
    h->sum += v;
    h->total++;
}

void sched_error_result(struct sched_result *res, const char *code, const char *message)
{
    memset(res, 0, sizeof *res);
    res->is_error = 1;
    snprintf(res->code, sizeof res->code, "%s", code);
    snprintf(res->message, sizeof res->message, "%s", message);
}

/* ---- reference counts ---------------------------------------------------------------------------------- */

struct sched_req *sched_req_create(struct sched *s)
{
    struct sched_req *r = g4_calloc(1, sizeof *r);
    r->refs = 1;
    r->state = SCHED_REQ_NEW;
    pthread_mutex_lock(&s->lock);
    s->live++;
    pthread_mutex_unlock(&s->lock);
    return r;
}

void sched_req_ref(struct sched *s, struct sched_req *r)
{
    pthread_mutex_lock(&s->lock);
    G4_CHECK(r->refs > 0, "ref of a freed request");
    r->refs++;
    pthread_mutex_unlock(&s->lock);
}

void sched_req_unref_locked(struct sched *s, struct sched_req *r)
{
    G4_CHECK(r->refs > 0, "unref of a freed request");
    if (--r->refs) return;
    G4_CHECK(r->state == SCHED_REQ_NEW || r->state == SCHED_REQ_ENDED, "request freed while queued or running");
    sched_prompt_free(&r->prompt);
    sbuf_free(&r->text);
    free(r);
    s->live--;
}

void sched_req_unref(struct sched *s, struct sched_req *r)
{
    if (!r) return;
    pthread_mutex_lock(&s->lock);
    sched_req_unref_locked(s, r);
    pthread_mutex_unlock(&s->lock);
}

/* ---- ending -------------------------------------------------------------------------------------------- */

/* Records r's final result (first one wins), counts it, and frees its prompt. The caller removes r from the
 * queue or its slot and drops the scheduler's reference. */
void sched_req_end_locked(struct sched *s, struct sched_req *r, const struct sched_result *res)
{
    if (r->has_result) return;
    r->result = *res;
    r->result.seed = r->params.seed;
    r->has_result = 1;
    r->state = SCHED_REQ_ENDED;
    if (res->is_error) s->st.ended_error++;
    else if (res->cancelled) s->st.ended_cancelled++;
    else if (res->finish == SAMP_FINISH_LENGTH) s->st.ended_length++;
    else s->st.ended_stop++;
    sched_prompt_free(&r->prompt);
}

void sched_req_fail(struct sched *s, struct sched_req *r, const char *code, const char *message)
{
    struct sched_result res;
    sched_error_result(&res, code, message);
    pthread_mutex_lock(&s->lock);
    if (r->state == SCHED_REQ_NEW) sched_req_end_locked(s, r, &res);
    pthread_mutex_unlock(&s->lock);
    if (s->o.wake) s->o.wake(s->o.wake_ctx);
}

/* ---- submission and cancellation ----------------------------------------------------------------------- */

void sched_submit(struct sched *s, struct sched_req *r, struct sched_prompt *prompt, const struct samp_params *p)
{
    struct sched_result res;
    int failed = 1;
    pthread_mutex_lock(&s->lock);
    G4_CHECK(r->state == SCHED_REQ_NEW, "request submitted twice");
    r->params = *p;
    r->prompt = *prompt;
    memset(prompt, 0, sizeof *prompt);
    r->t_submit = util_now();
    if (s->stopping) {
        sched_error_result(&res, "shutdown", s->stop_msg);
    } else if (s->q_len >= s->o.max_queue) {
        char msg[G4_ERR_MAX];
        snprintf(msg, sizeof msg, "the queue is full (%d requests waiting, the limit); try again later", s->q_len);
        sched_error_result(&res, "queue_full", msg);
    } else {
        failed = 0;
        r->state = SCHED_REQ_QUEUED;
        r->refs++; /* the scheduler's reference, dropped when the request ends */
        r->next = NULL;
        if (s->q_tail) s->q_tail->next = r;
        else s->q_head = r;
        s->q_tail = r;
        s->q_len++;
        pthread_cond_signal(&s->cond);
    }
    if (failed) sched_req_end_locked(s, r, &res);
    pthread_mutex_unlock(&s->lock);
    if (failed && s->o.wake) s->o.wake(s->o.wake_ctx);
}

void sched_cancel(struct sched *s, struct sched_req *r)
{
    pthread_mutex_lock(&s->lock);
    r->cancel = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

int sched_req_cancelled(struct sched *s, struct sched_req *r)
{
    int c;
    pthread_mutex_lock(&s->lock);
    c = r->cancel;
    pthread_mutex_unlock(&s->lock);
    return c;
}

void sched_shutdown(struct sched *s, const char *msg)
{
    pthread_mutex_lock(&s->lock);
    if (!s->stopping) snprintf(s->stop_msg, sizeof s->stop_msg, "%s", msg);
    s->stopping = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* ---- outbox -------------------------------------------------------------------------------------------- */

static int has_output_locked(const struct sched_req *r)
{
    return (r->position_dirty && r->state == SCHED_REQ_QUEUED) || r->text.n > 0 ||
           (r->has_result && !r->result_taken);
}

int sched_poll(struct sched *s, struct sched_req *r, struct sched_out *out, struct sbuf *text)
{
    int got = 1;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    if (r->position_dirty && r->state == SCHED_REQ_QUEUED) {
        out->kind = SCHED_OUT_QUEUED;
        out->position = r->position;
        r->position_dirty = 0;
    } else if (r->text.n > 0) {
        int was_full = r->text.n >= s->o.max_pending_bytes;
        out->kind = SCHED_OUT_TEXT;
        out->n = r->n_generated;
        sbuf_append(text, r->text.p, r->text.n);
        r->text.n = 0;
        r->text.p[0] = '\0';
        if (was_full) pthread_cond_signal(&s->cond); /* a paused stream may run again */
    } else if (r->has_result && !r->result_taken) {
        out->kind = SCHED_OUT_END;
        out->result = r->result;
        r->result_taken = 1;
    } else {
        got = 0;
    }
    r->position_dirty = r->position_dirty && r->state == SCHED_REQ_QUEUED;
    pthread_mutex_unlock(&s->lock);
    return got;
}

int sched_req_has_output(struct sched *s, struct sched_req *r)
{
    int h;
    pthread_mutex_lock(&s->lock);
    h = has_output_locked(r);
    pthread_mutex_unlock(&s->lock);
    return h;
}

int sched_req_ended(struct sched *s, struct sched_req *r)
{
    int e;
    pthread_mutex_lock(&s->lock);
    e = r->result_taken;
    pthread_mutex_unlock(&s->lock);
    return e;
}

/* ---- statistics ---------------------------------------------------------------------------------------- */

/* Adds a row-counter sample (engine thread): after a step at most every 1/8 of the rate window, and always
 * when the engine goes idle (force), so that the gauges fall to zero once nothing runs. */
void sched_rate_sample_locked(struct sched *s, double now, int force)
{
    const struct sched_rate_sample *last =
        s->rate_n ? &s->rate[(s->rate_head + SCHED_RATE_SAMPLES - 1) % SCHED_RATE_SAMPLES] : NULL;
    if (last && !force && now - last->t < SCHED_RATE_WINDOW_S / 8) return;
    if (last && force && last->prefill_rows == s->st.prefill_rows && last->decode_rows == s->st.decode_rows) return;
    s->rate[s->rate_head] = (struct sched_rate_sample){now, s->st.prefill_rows, s->st.decode_rows};
    s->rate_head = (s->rate_head + 1) % SCHED_RATE_SAMPLES;
    if (s->rate_n < SCHED_RATE_SAMPLES) s->rate_n++;
}

/* Rows per second over the window ending now: from the newest sample at least a window old (or the oldest
 * one) to the current counters. */
static void rates_locked(const struct sched *s, double now, double *prefill, double *decode)
{
    const struct sched_rate_sample *base = NULL;
    *prefill = *decode = 0;
    for (int i = 0; i < s->rate_n; i++) {
        const struct sched_rate_sample *x = &s->rate[(s->rate_head + SCHED_RATE_SAMPLES - 1 - i) % SCHED_RATE_SAMPLES];
        base = x;
        if (now - x->t >= SCHED_RATE_WINDOW_S) break;
    }
    if (!base || now - base->t <= 0) return;
    *prefill = (double)(s->st.prefill_rows - base->prefill_rows) / (now - base->t);
    *decode = (double)(s->st.decode_rows - base->decode_rows) / (now - base->t);
}

void sched_stats(struct sched *s, struct sched_stats *out)
{
    double now = util_now();
    pthread_mutex_lock(&s->lock);
    *out = s->st;
    out->running = s->running;
    out->paused = 0;
    for (int i = 0; i < s->o.max_streams; i++) out->paused += s->slots[i].r && s->slots[i].paused_since > 0;
    out->waiting = s->q_len;
    out->max_streams = s->o.max_streams;
    out->max_queue = s->o.max_queue;
    rates_locked(s, now, &out->prefill_tps, &out->decode_tps);
    out->kv_usage = (double)s->kv_held / ((double)s->o.max_streams * (double)s->o.context);
    pthread_mutex_unlock(&s->lock);
}
