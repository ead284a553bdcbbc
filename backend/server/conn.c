/* conn — connections as the server tracks them: accepted (and counted per client address), woken when their
 * requests have output, checked for Origin and API key, and destroyed with everything they hold. Also the
 * common start of a chat request for both transports.
 *
 * Service thread only. A connection over the per-address limit gets a plain 429 reply written straight to
 * its socket (nothing has been read from it yet) and is closed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "server/srv.h"

/* ---- accepting and destroying -------------------------------------------------------------------------- */

static struct srv_addr *addr_get(struct srv *s, const char *addr)
{
    struct srv_addr *a;
    for (a = s->addrs; a; a = a->next)
        if (!strcmp(a->addr, addr)) return a;
    a = g4_calloc(1, sizeof *a);
    snprintf(a->addr, sizeof a->addr, "%s", addr);
    a->next = s->addrs;
    s->addrs = a;
    return a;
}

static void addr_put(struct srv *s, struct srv_addr *a)
{
    struct srv_addr **pp;
    if (--a->n > 0) return;
    for (pp = &s->addrs; *pp != a; pp = &(*pp)->next) {}
    *pp = a->next;
    free(a);
}

/* Refuses a fresh socket with 429 before lws reads anything from it. */
static void refuse_raw(struct lws *wsi, const char *code, const char *message)
{
    char body[512], resp[768];
    int n, m;
    char *json = openai_error_json("rate_limit_error", code, NULL, message);
    n = snprintf(body, sizeof body, "%s", json);
    free(json);
    m = snprintf(resp, sizeof resp,
                 "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                 "connection: close\r\n\r\n%s",
                 n, body);
    if (m > 0 && (size_t)m < sizeof resp) {
        ssize_t w = send(lws_get_socket_fd(wsi), resp, (size_t)m, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w; /* best effort: the socket is fresh, its buffer empty */
    }
}

struct srv_conn *srv_conn_accept(struct srv *s, struct lws *wsi)
{
    char peer[64] = "";
    struct srv_addr *a;
    struct srv_conn *c;
    lws_get_peer_simple(wsi, peer, sizeof peer);
    if (s->stopping) return NULL;
    a = addr_get(s, peer);
    if (a->n >= s->o.max_conns_per_addr) {
        char msg[160];
        snprintf(msg, sizeof msg, "too many connections from %s (the limit is %d per address)", peer,
                 s->o.max_conns_per_addr);
        refuse_raw(wsi, "too_many_connections", msg);
        s->bad_requests++;
        a->n++;
        addr_put(s, a);
        return NULL;
    }
    a->n++;
    c = g4_calloc(1, sizeof *c);
    c->srv = s;
    c->wsi = wsi;
    c->addr = a;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    lws_set_opaque_user_data(wsi, c);
    return c;
}

void srv_conn_destroy(struct srv *s, struct srv_conn *c)
{
    if (c->is_ws) ws_closed(s, c);
    http_reset(s, c);
    sbuf_free(&c->http.body);
    sbuf_free(&c->http.resp);
    sbuf_free(&c->http.text);
    sbuf_free(&c->http.pending);
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->n_conns--;
    addr_put(s, c->addr);
    lws_set_opaque_user_data(c->wsi, NULL);
    free(c);
}

/* ---- wakes --------------------------------------------------------------------------------------------- */

void srv_wake_all(struct srv *s)
{
    for (struct srv_conn *c = s->conns; c; c = c->next) {
        int want = c->is_ws ? ws_has_output(s, c) : http_has_output(s, c);
        if (want) lws_callback_on_writable(c->wsi);
    }
}

/* ---- access -------------------------------------------------------------------------------------------- */

/* The host[:port] part of an origin "scheme://host[:port]". */
static const char *origin_host(const char *origin)
{
    const char *p = strstr(origin, "://");
    return p ? p + 3 : origin;
}

int srv_origin_ok(struct srv *s, struct lws *wsi, char *cors_origin, size_t cap)
{
    char origin[256] = "", host[256] = "";
    if (cors_origin && cap) cors_origin[0] = 0;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0) return 1; /* not a browser */
    if (lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) < 0) return 0;
    if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) < 0) host[0] = 0;
    if (host[0] && !strcasecmp(origin_host(origin), host)) return 1; /* the page we served */
    for (int i = 0; i < s->o.n_allow_origins; i++) {
        if (!strcmp(s->o.allow_origins[i], "*") || !strcasecmp(s->o.allow_origins[i], origin)) {
            if (cors_origin && cap) snprintf(cors_origin, cap, "%s", origin);
            return 1;
        }
    }
    return 0;
}

/* Constant-time comparison of a presented key with the configured one. */
static int key_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned d = (unsigned)(la ^ lb);
    for (size_t i = 0; i < la; i++) d |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
    return d == 0;
}

int srv_key_ok(struct srv *s, struct lws *wsi, int allow_query)
{
    char auth[512] = "", arg[512] = "";
    const char *v;
    if (!s->o.api_key) return 1;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) > 0 &&
        lws_hdr_copy(wsi, auth, sizeof auth, WSI_TOKEN_HTTP_AUTHORIZATION) > 0 && !strncasecmp(auth, "Bearer ", 7) &&
        key_equal(auth + 7, s->o.api_key))
        return 1;
    if (allow_query && (v = lws_get_urlarg_by_name(wsi, "key=", arg, sizeof arg)) && key_equal(v, s->o.api_key))
        return 1;
    return 0;
}

uint64_t srv_random_seed(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) v = (uint64_t)(util_now() * 1e9);
    return v & ((1ull << 53) - 1); /* a JSON number keeps it exactly */
}

/* The kernel would grow a stream socket's send buffer to megabytes for a client that stops reading; capped,
 * the socket stops being writable soon, the reply waits in the scheduler's outbox, and the slow-reader bound
 * (--slow-reader-bytes, --slow-reader-ms) applies. Best effort: a failure leaves the kernel's default. */
void srv_conn_stream_sndbuf(struct srv_conn *c)
{
    int v = SRV_STREAM_SNDBUF;
    int fd = lws_get_socket_fd(c->wsi);
    if (fd >= 0) (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

/* ---- starting a chat ----------------------------------------------------------------------------------- */

struct sched_req *srv_chat_start(struct srv *s, struct proto_chat *chat, char *code, char *msg)
{
    struct sched_stats st;
    struct sched_req *r;
    int waiting;
    if (s->stopping) {
        snprintf(code, SCHED_CODE_MAX, "shutdown");
        snprintf(msg, G4_ERR_MAX, "the server is shutting down");
        return NULL;
    }
    sched_stats(s->sched, &st);
    waiting = st.waiting + prep_pending(s->prep);
    if (waiting >= s->o.max_queue) {
        snprintf(code, SCHED_CODE_MAX, "queue_full");
        snprintf(msg, G4_ERR_MAX, "the queue is full (%d requests waiting, the limit); try again later", waiting);
        return NULL;
    }
    if (!chat->has_seed) chat->params.seed = srv_random_seed();
    r = sched_req_create(s->sched);
    prep_submit(s->prep, r, chat);
    return r;
}
