/* scheduler — the engine thread: many requests over one engine, by continuous batching.
 *
 * Why: the server has one engine (one device, one set of KV caches) and many clients. The scheduler owns the
 * engine from its own thread. Every engine step mixes one decode row per running stream with prompt chunks of
 * the streams still prefilling (chunks cut by prefill_next_end, ≤ ENGINE_CHUNK_ROWS prompt rows per step but
 * ENGINE_SOLO_CHUNK_ROWS of text alone, never splitting an image), samples each stream's next token with
 * samp_sample keyed by (seed, position), detokenizes it, applies stop strings and posts the text into the
 * request's outbox. Requests past the stream count wait in a bounded FIFO queue whose positions are reported.
 *
 * Exactness: a request's tokens depend only on its own prompt and parameters: the engine computes each item
 * independently, a row's results do not depend on the chunk it runs in (so a prompt may be cut into longer
 * chunks when it runs alone), and every draw is keyed by (seed, position). So a reply beside 63 others equals
 * the same request alone (design.md, "Exactness contract").
 *
 * Outboxes: the engine thread never waits for a reader. Each request has an outbox (a queue position, pending
 * text, a final result) that the server's service thread drains with sched_poll. Consecutive text coalesces;
 * when more than max_pending_bytes are unread, the stream pauses (skips its decode rows), and once paused for
 * slow_reader_ms it ends with the error "slow_reader". After posting, the engine thread calls the wake hook
 * (the server's lws_cancel_service) once per step.
 *
 * Threads: sched_create starts the engine thread; every other function may be called from any thread (one
 * mutex guards the queue, the outboxes and the statistics; the engine is only touched by the engine thread).
 * Requests are reference-counted: whoever holds a pointer holds a reference.
 *
 * What it must not do: parse JSON, touch sockets, or let a client-caused condition abort (those end that
 * request with an error result; only broken invariants abort). */
#ifndef G4_SCHEDULER_H
#define G4_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/sampler.h"
#include "util/util.h"

#define SCHED_DEFAULT_MAX_PENDING_BYTES (64u << 10) /* unread reply bytes before a stream pauses */
#define SCHED_DEFAULT_SLOW_READER_MS 30000          /* paused this long: the stream ends with slow_reader */
#define SCHED_RATE_WINDOW_S 2.0                      /* tokens/s gauges average over this window */
#define SCHED_CODE_MAX 32                            /* bytes of an error code, NUL included */

/* One image of a prompt: its merged patches (the engine embeds them when the chunk holding the image's
 * placeholder run is prefilled). */
struct sched_image {
    uint8_t *patches;   /* (n, 6912) uint8, HWC 48x48 blocks; owned */
    int32_t *positions; /* (n, 2) (x, y); owned */
    int n;              /* soft tokens = rows of the image's placeholder run */
};

/* A tokenized prompt. ids hold one run of n image-token ids per image, in order (prefill_image_blocks). */
struct sched_prompt {
    int32_t *ids;               /* (n) token ids; owned */
    int n;
    struct sched_image *images; /* (n_images); owned, each image's buffers too */
    int n_images;
};

/* Frees what p owns and zeroes it. */
void sched_prompt_free(struct sched_prompt *p);

struct sched_opts {
    int max_streams;          /* requests running at once (≤ the engine's max_streams) */
    int max_queue;            /* requests waiting; past it a submission fails with queue_full */
    int context;              /* positions per stream (the engine's max_context), for kv_usage */
    size_t max_pending_bytes; /* 0: SCHED_DEFAULT_MAX_PENDING_BYTES */
    int slow_reader_ms;       /* 0: SCHED_DEFAULT_SLOW_READER_MS */
    const struct tok *tok;    /* detokenizer for the replies (the model's) */
    void (*wake)(void *ctx);  /* called (engine/prep thread, no lock held) after posting output; may be NULL */
    void *wake_ctx;
};

/* How a request ended (the final outbox event). */
struct sched_result {
    int is_error;              /* 1: failed (code, message); 0: finished or cancelled */
    int cancelled;             /* 1: ended by sched_cancel (is_error 0) */
    enum samp_finish finish;   /* finished: STOP_ID, STOP_STRING or LENGTH */
    char code[SCHED_CODE_MAX]; /* error code: queue_full, shutdown, slow_reader, engine_error, or the caller's */
    char message[G4_ERR_MAX];  /* error message for the client */
    int prompt_tokens;         /* prompt length */
    int completion_tokens;     /* tokens generated (a final stop id included) */
    double ttft_s;             /* submission to first token, queue included; 0 if none */
    double tokens_per_s;       /* decode rate after the first token; 0 with fewer than 2 tokens */
    uint64_t seed;             /* the seed the request ran with */
};

enum sched_out_kind {
    SCHED_OUT_NONE = 0,
    SCHED_OUT_QUEUED, /* position: 1 = next to start */
    SCHED_OUT_TEXT,   /* text appended to the caller's buffer; n = tokens generated so far */
    SCHED_OUT_END,    /* result */
};

struct sched_out {
    enum sched_out_kind kind;
    int position;              /* QUEUED */
    int n;                     /* TEXT */
    struct sched_result result;/* END */
};

/* Per-histogram bucket upper bounds (seconds) and counts; the last count is the +Inf bucket. */
#define SCHED_HIST_MAX 16
struct sched_hist {
    const double *bounds;                 /* (n_bounds) ascending, static */
    int n_bounds;
    uint64_t counts[SCHED_HIST_MAX + 1];  /* per bucket, not cumulative; counts[n_bounds] = above the last */
    double sum;                           /* seconds */
    uint64_t total;
};

/* A snapshot of the scheduler's counters (sched_stats). */
struct sched_stats {
    uint64_t prompt_tokens;       /* prompt tokens of requests that started */
    uint64_t generated_tokens;    /* tokens sampled */
    uint64_t ended_stop, ended_length, ended_cancelled, ended_error; /* requests ended, by how */
    uint64_t steps;               /* engine steps run */
    uint64_t prefill_rows, decode_rows;
    uint64_t draft_proposed, draft_accepted, cache_hits; /* 0 until drafting and the prompt cache land */
    int running, waiting;         /* streams held; requests queued */
    int paused;                   /* running streams paused because their client left too much reply unread */
    int max_streams, max_queue;
    double kv_usage;              /* positions held / (max_streams × context) */
    double prefill_tps, decode_tps; /* rows per second over the last SCHED_RATE_WINDOW_S */
    struct sched_hist ttft, itl;  /* time to first token; inter-token latency */
};

struct sched;
struct sched_req;

/* Starts the engine thread over e (which the caller keeps alive until sched_destroy). NULL with err when the
 * options do not fit the engine. */
struct sched *sched_create(struct engine *e, const struct sched_opts *o, char *err);

/* Ends every request (error "shutdown"), stops the thread and frees the scheduler. Every request must have
 * been released by its other holders before (checked). */
void sched_destroy(struct sched *s);

/* Stop accepting: running and queued requests end with the error "shutdown" and message msg at the next step,
 * later submissions likewise. Any thread. */
void sched_shutdown(struct sched *s, const char *msg);

/* A new request in the "preparing" state, with one reference held by the caller. */
struct sched_req *sched_req_create(struct sched *s);
void sched_req_ref(struct sched *s, struct sched_req *r);
void sched_req_unref(struct sched *s, struct sched_req *r);

/* Queues r with its prompt (moved: *prompt is zeroed) and parameters (validated by the caller with
 * samp_params_validate). Never fails in the caller's eyes: a full queue or a stopping scheduler becomes r's
 * final error result (queue_full / shutdown). */
void sched_submit(struct sched *s, struct sched_req *r, struct sched_prompt *prompt, const struct samp_params *p);

/* Ends r before submission with an error result (code, message): how the caller reports a prompt it could
 * not build. No effect on a request that already has a result. Calls the wake hook. */
void sched_req_fail(struct sched *s, struct sched_req *r, const char *code, const char *message);

/* Asks r to end: a queued or running request ends at the engine's next step with result.cancelled = 1; a
 * request not yet submitted ends when it is submitted. */
void sched_cancel(struct sched *s, struct sched_req *r);
int sched_req_cancelled(struct sched *s, struct sched_req *r);

/* Takes r's next outbox event into out (text appended to *text). Returns 1 with an event, 0 when there is
 * none now. Order: a changed queue position, then pending text, then the final result (once). */
int sched_poll(struct sched *s, struct sched_req *r, struct sched_out *out, struct sbuf *text);

/* 1 if sched_poll would return an event now. */
int sched_req_has_output(struct sched *s, struct sched_req *r);

/* 1 once the final result has been taken by sched_poll. */
int sched_req_ended(struct sched *s, struct sched_req *r);

/* Counters and gauges now. */
void sched_stats(struct sched *s, struct sched_stats *out);

#endif
