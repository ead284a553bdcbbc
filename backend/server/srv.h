/* srv — the server's shared state, split by lifetime as libwebsockets' minimal servers do: struct srv for the
 * process (engine, scheduler, lws context), struct srv_conn per connection (HTTP or WebSocket), struct
 * srv_http per HTTP transaction. Only the lws service thread touches these; the engine and prep threads
 * reach a connection's requests only through the scheduler's outboxes, and wake the service thread with
 * lws_cancel_service().
 *
 * A connection's struct lives in the wsi's opaque user data (created when the socket is accepted, freed at
 * LWS_CALLBACK_WSI_DESTROY), not in lws's per-session data, which lws frees and reallocates each time it
 * binds a protocol to an HTTP transaction. */
#ifndef G4_SERVER_SRV_H
#define G4_SERVER_SRV_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include <libwebsockets.h>

#include "engine/scheduler.h"
#include "model/model.h"
#include "server/limits.h"
#include "server/proto.h"
#include "server/server.h"

struct prep;

/* Connections per client address (the limit SRV_DEFAULT_CONNS_PER_ADDR / --max-conns-per-addr). */
struct srv_addr {
    char addr[64];
    int n;
    struct srv_addr *next;
};

/* An image arriving as patch frames (protocol.md, "Binary frames"). */
struct srv_upload {
    uint32_t image_id;
    int grid_w, grid_h, n; /* n = grid_w * grid_h rows */
    int received;          /* rows received */
    uint8_t *rows;         /* (n, 6912) uint8 */
    uint8_t *have;         /* (n) 1 once row k arrived */
};

/* A request running on a WebSocket connection. */
struct srv_wsreq {
    struct sched_req *r; /* a reference */
    char id[SRV_MAX_ID_BYTES + 1];
};

enum srv_route {
    SRV_ROUTE_NONE,
    SRV_ROUTE_CHAT,
    SRV_ROUTE_MODELS,
    SRV_ROUTE_HEALTH,
    SRV_ROUTE_METRICS,
    SRV_ROUTE_KIOSK_PAGE, /* /index.html under --kiosk */
};

/* One HTTP transaction (reset at each LWS_CALLBACK_HTTP). */
struct srv_http {
    int active;
    int is_post;
    enum srv_route route;
    char origin[256];        /* an allowed cross-origin Origin to echo in Access-Control-Allow-Origin, or "" */
    struct sbuf body;        /* the request body so far */
    int body_over;           /* the body passed SRV_MAX_BODY_BYTES */
    /* an error decided before the body arrived, answered at its end */
    int deferred_status;
    char deferred_type[32], deferred_code[32], deferred_msg[G4_ERR_MAX + 128];
    /* a whole response: headers, then body in pieces */
    int resp_ready, headers_sent, close_after;
    int status;
    const char *ctype;
    struct sbuf resp;
    size_t resp_off;
    /* a chat completion */
    struct sched_req *r;     /* a reference while the reply runs */
    int stream, include_usage;
    char cmpl_id[48];
    long long created;
    int sse_started;         /* SSE headers written */
    int role_sent;
    int ended;               /* the final result was taken */
    int tail_queued;         /* the stream's ending (finish, usage, [DONE], or the error event) is in pending */
    struct sbuf text;        /* non-streamed reply text so far */
    struct sbuf pending;     /* SSE events formatted and not yet written */
    struct sched_result res; /* the final result */
};

struct srv_conn {
    struct srv *srv;
    struct lws *wsi;
    struct srv_addr *addr;
    struct srv_conn *prev, *next;  /* the server's list */
    int is_ws;
    /* WebSocket */
    struct sbuf rx;                /* the message being reassembled */
    int rx_binary, rx_drop;        /* rx_drop: over SRV_MAX_MESSAGE_BYTES, the rest is skipped */
    char *ctl[SRV_MAX_CTL_QUEUE];  /* service replies waiting to be written (malloc'd JSON) */
    int ctl_head, n_ctl;
    struct srv_wsreq reqs[SRV_MAX_REQUESTS_PER_CONN];
    int n_reqs, rr;
    struct srv_upload uploads[SRV_MAX_UPLOADS_PER_CONN];
    int n_uploads;
    size_t upload_bytes;
    int subscribed, metrics_due;
    int closing;                   /* shutdown: write what is queued, then close */
    int kill;                      /* close at the next writable (a client that floods without reading) */
    /* HTTP */
    struct srv_http http;
};

struct srv {
    struct srv_opts o;
    struct g4_model *m;
    struct engine *e;
    struct sched *sched;
    struct prep *prep;
    struct lws_context *ctx;       /* (wake_lock) NULL once the context is being destroyed */
    pthread_mutex_t wake_lock;     /* guards ctx for the other threads' lws_cancel_service() */
    struct lws_vhost *vh;
    int port;
    char model_name[128];
    char started[32];              /* ISO time the server started (for /v1/models "created") */
    long long created;             /* unix time the server started */
    double t_start;                /* util_now() at start */
    struct proto_defaults defaults;
    int budget;                    /* default soft tokens per image (the model's) */
    int posemb;                    /* patch grid side limit (the model's position table) */
    int on_gpu;                    /* the engine runs on the CUDA device */
    double engine_bytes;           /* memory the engine holds: weights, every stream's KV, scratch */
    struct srv_conn *conns;
    int n_conns, n_ws;
    struct srv_addr *addrs;
    atomic_int signalled;          /* the signal that arrived (signal thread), 0 before */
    int stopping;                  /* shutdown in progress */
    double stop_deadline;
    uint64_t bad_requests;         /* service thread */
    struct lws_http_mount mounts[7];
    struct lws_protocol_vhost_options mimes[6];
    char kiosk_def[32];
    char lan_url[64];              /* the first LAN address when serving 0.0.0.0, for the kiosk's QR code */
};

/* ---- ws.c: the lws callback (protocols[0]) ------------------------------------------------------------- */
int srv_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);

/* ---- conn.c: connections, addresses, wakes, access ----------------------------------------------------- */
struct srv_conn *srv_conn_accept(struct srv *s, struct lws *wsi);
void srv_conn_destroy(struct srv *s, struct srv_conn *c);
void srv_wake_all(struct srv *s);  /* after lws_cancel_service: ask for WRITEABLE where output waits */
int srv_origin_ok(struct srv *s, struct lws *wsi, char *cors_origin, size_t cap);
int srv_key_ok(struct srv *s, struct lws *wsi, int allow_query);
uint64_t srv_random_seed(void);
/* Caps the kernel send buffer of a socket that carries a token stream at SRV_STREAM_SNDBUF. */
void srv_conn_stream_sndbuf(struct srv_conn *c);

/* Starts a chat request: checks shutdown and the queue, picks a seed, hands the request to the prep thread
 * (chat is moved). Returns the caller's reference, or NULL with code/message (queue_full, shutdown). */
struct sched_req *srv_chat_start(struct srv *s, struct proto_chat *chat, char *code, char *msg);

/* ---- ws_conn.c: the WebSocket protocol ----------------------------------------------------------------- */
int ws_confirm_upgrade(struct srv *s, struct srv_conn *c, struct lws *wsi);
void ws_established(struct srv *s, struct srv_conn *c);
int ws_receive(struct srv *s, struct srv_conn *c, const void *in, size_t len);
int ws_writable(struct srv *s, struct srv_conn *c);
void ws_timer(struct srv *s, struct srv_conn *c);
int ws_has_output(struct srv *s, struct srv_conn *c);
void ws_closed(struct srv *s, struct srv_conn *c);
void ws_shutdown(struct srv *s, struct srv_conn *c);

/* ---- http.c: HTTP routing and responses ---------------------------------------------------------------- */
int http_begin(struct srv *s, struct srv_conn *c, struct lws *wsi);
int http_body(struct srv *s, struct srv_conn *c, const void *in, size_t len);
int http_body_done(struct srv *s, struct srv_conn *c);
int http_writable(struct srv *s, struct srv_conn *c);
int http_has_output(struct srv *s, struct srv_conn *c);
void http_reset(struct srv *s, struct srv_conn *c);
/* A whole response (body copied) with OpenAI's error shape helpers below. */
void http_respond(struct srv_conn *c, int status, const char *ctype, const char *body, size_t len);
void http_respond_error(struct srv *s, struct srv_conn *c, int status, const char *type, const char *code,
                        const char *param, const char *message);
/* One response header ("name:" with its colon); the CSP, nosniff and referrer headers of every response. */
int http_add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end);
int http_add_security_headers(struct lws *wsi, unsigned char **p, unsigned char *end);

/* ---- openai.c: chat completions ------------------------------------------------------------------------ */
void openai_chat(struct srv *s, struct srv_conn *c);  /* the body is complete: parse and start */
int openai_writable(struct srv *s, struct srv_conn *c);
char *openai_models_json(struct srv *s);
char *openai_error_json(const char *type, const char *code, const char *param, const char *message);
int openai_status_of(const char *code, const char **type, const char **oa_code);

/* ---- metrics.c ----------------------------------------------------------------------------------------- */
void metrics_prometheus(struct srv *s, struct sbuf *out);
char *metrics_snapshot_json(struct srv *s);

/* ---- static.c: the web client's files ------------------------------------------------------------------ */
const struct lws_http_mount *static_mounts(struct srv *s);
/* GET /index.html under --kiosk: kiosk.html with the security headers (http.c calls it). 0, or -1: close. */
int static_serve_kiosk(struct srv *s, struct lws *wsi);

/* ---- prep.c: the prep thread (images, chat template, tokens) ------------------------------------------- */
struct prep *prep_create(struct srv *s);
void prep_destroy(struct prep *p);
void prep_submit(struct prep *p, struct sched_req *r, struct proto_chat *chat);
int prep_pending(struct prep *p);

/* ---- dataurl.c ------------------------------------------------------------------------------------------ */
/* Decodes a data: URI with base64 content into *out (malloc'd, *len bytes, at most max). 0, or -1 with err
 * naming the problem and the byte. */
int dataurl_decode(const char *uri, uint8_t **out, size_t *len, size_t max, char *err);

#endif
