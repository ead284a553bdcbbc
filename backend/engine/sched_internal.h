/* sched_internal — the scheduler's structures, shared by scheduler.c (the engine thread and its steps) and
 * sched_req.c (requests, outboxes, statistics). Nothing outside backend/engine/sched*.c includes this. */
#ifndef G4_SCHED_INTERNAL_H
#define G4_SCHED_INTERNAL_H

#include <pthread.h>

#include "engine/scheduler.h"
#include "model/tokenizer.h"

enum sched_state {
    SCHED_REQ_NEW,     /* created, being prepared by the caller */
    SCHED_REQ_QUEUED,  /* in the FIFO queue */
    SCHED_REQ_RUNNING, /* holds an engine stream (slot) */
    SCHED_REQ_ENDED,   /* has its result */
};

/* A request. Fields marked (lock) are read and written under s->lock; (engine) only by the engine thread
 * while the request is queued or running. */
struct sched_req {
    int refs;                    /* (lock) holders */
    enum sched_state state;      /* (lock) */
    int cancel;                  /* (lock) sched_cancel was called */
    struct sched_prompt prompt;  /* (engine) owned from submission until the request ends */
    struct samp_params params;   /* (engine) */
    double t_submit;             /* util_now() at submission */
    struct sched_req *next;      /* (lock) queue link */
    /* outbox (lock) */
    int position;                /* queue position last computed (1 = next) */
    int position_dirty;          /* 1: not yet taken by sched_poll */
    struct sbuf text;            /* unread reply text */
    int n_generated;             /* tokens generated so far */
    int has_result;              /* result is final */
    int result_taken;            /* sched_poll returned the result */
    struct sched_result result;
};

/* A running request on the engine thread: its engine stream and decoding state. (engine) only. */
struct sched_slot {
    struct sched_req *r;        /* NULL when free */
    int stream;                 /* engine stream id */
    int fed;                    /* prompt rows already run through the engine */
    int chunk_end;              /* the end of this step's prompt chunk (plan_locked), when prompting */
    int32_t next_token;         /* the token the next decode row feeds */
    int n_gen;                  /* tokens sampled */
    int *blocks;                /* (prompt n) image block of each prompt row, -1 text; NULL without images */
    float *img_rows;            /* (rows, H) scratch for one chunk's image embeddings */
    size_t img_rows_cap;        /* floats allocated */
    struct samp_params draw;    /* the step's draw parameters: the request's, plus begin-suppress ids at first */
    int32_t drawn;              /* the token the engine drew after the step's last row, -1 for none */
    struct tok_stream *ts;      /* detokenizer, reset per request */
    struct samp_stop stop;      /* stop-string matcher, per request */
    int stop_live;              /* 1: stop needs samp_stop_free */
    double t_first, t_last;     /* first and latest token times */
    double paused_since;        /* 0, or when the outbox first held too much unread text */
    int in_step;                /* this step has an item for this slot */
};

/* One sample of the row counters, for the tokens/s gauges. */
struct sched_rate_sample {
    double t;
    uint64_t prefill_rows, decode_rows;
};
#define SCHED_RATE_SAMPLES 16

struct sched {
    struct engine *e;
    struct sched_opts o;
    int V, H;                          /* vocabulary, hidden size */
    int32_t image_token;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;               /* signalled on submissions, cancels, drained outboxes, shutdown */
    int stopping;                      /* (lock) sched_shutdown was called */
    int quit;                          /* (lock) sched_destroy: the thread ends */
    char stop_msg[G4_ERR_MAX];         /* (lock) */
    struct sched_req *q_head, *q_tail; /* (lock) FIFO of queued requests */
    int q_len;                         /* (lock) */
    int live;                          /* (lock) requests allocated and not yet freed */
    struct sched_slot *slots;          /* (max_streams) (engine) */
    int running;                       /* (lock) slots in use */
    struct sched_stats st;             /* (lock) counters and histograms */
    struct sched_rate_sample rate[SCHED_RATE_SAMPLES]; /* (lock) ring, newest at rate_head - 1 */
    int rate_head, rate_n;
    long kv_held;                      /* (lock) positions held by all running streams */
    int posted;                        /* (engine) output was posted since the last wake */
};

/* sched_req.c: called with s->lock held. */
void sched_req_end_locked(struct sched *s, struct sched_req *r, const struct sched_result *res);
void sched_req_unref_locked(struct sched *s, struct sched_req *r);
void sched_error_result(struct sched_result *res, const char *code, const char *message);
void sched_hist_observe(struct sched_hist *h, double v);
void sched_stats_init(struct sched_stats *st);
void sched_rate_sample_locked(struct sched *s, double now, int force);

#endif
