/* http — the HTTP side of the port: routing of /v1/chat/completions, /v1/models, /health and /metrics,
 * Origin and API-key checks, CORS preflights, request bodies (bounded), and whole responses written as
 * headers then body pieces, one write per WRITEABLE. Chat completions hand over to openai.c.
 *
 * Service thread only. Static files never come here: lws' file mount serves them (static.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv.h"

static const char csp[] =
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

int http_add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end)
{
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                       (int)strlen(value), p, end);
}

int http_add_security_headers(struct lws *wsi, unsigned char **p, unsigned char *end)
{
    return http_add_header(wsi, "content-security-policy:", csp, p, end) ||
           http_add_header(wsi, "x-content-type-options:", "nosniff", p, end) ||
           http_add_header(wsi, "referrer-policy:", "no-referrer", p, end);
}

/* ---- transactions -------------------------------------------------------------------------------------- */

void http_reset(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    if (h->r) {
        if (!h->ended) sched_cancel(s->sched, h->r);
        sched_req_unref(s->sched, h->r);
        h->r = NULL;
    }
    h->active = h->is_post = h->body_over = h->deferred_status = 0;
    h->resp_ready = h->headers_sent = h->close_after = h->status = 0;
    h->sse_started = h->role_sent = h->ended = h->tail_queued = h->stream = h->include_usage = 0;
    h->route = SRV_ROUTE_NONE;
    h->origin[0] = 0;
    h->resp_off = 0;
    h->body.n = h->resp.n = h->text.n = h->pending.n = 0;
    /* keep small buffers for the next request on this connection, drop large ones */
    if (h->body.cap > (64u << 10)) sbuf_free(&h->body);
    if (h->resp.cap > (64u << 10)) sbuf_free(&h->resp);
    if (h->text.cap > (64u << 10)) sbuf_free(&h->text);
}

void http_respond(struct srv_conn *c, int status, const char *ctype, const char *body, size_t len)
{
    struct srv_http *h = &c->http;
    h->status = status;
    h->ctype = ctype;
    h->resp.n = 0;
    sbuf_append(&h->resp, body ? body : "", len);
    h->resp_off = 0;
    h->headers_sent = 0;
    h->resp_ready = 1;
    lws_callback_on_writable(c->wsi);
}

void http_respond_error(struct srv *s, struct srv_conn *c, int status, const char *type, const char *code,
                        const char *param, const char *message)
{
    char *body = openai_error_json(type, code, param, message);
    if (status >= 400 && status < 500 && status != 429) s->bad_requests++;
    http_respond(c, status, "application/json", body, strlen(body));
    free(body);
}

/* Decides an error now and answers it when the body has arrived (lws keeps reading it meanwhile). */
static void defer_error(struct srv_conn *c, int status, const char *type, const char *code, const char *msg)
{
    struct srv_http *h = &c->http;
    h->deferred_status = status;
    snprintf(h->deferred_type, sizeof h->deferred_type, "%s", type);
    snprintf(h->deferred_code, sizeof h->deferred_code, "%s", code);
    snprintf(h->deferred_msg, sizeof h->deferred_msg, "%s", msg);
}

static enum srv_route route_of(struct srv *s, const char *path)
{
    if (!strcmp(path, "/index.html") && s->o.kiosk) return SRV_ROUTE_KIOSK_PAGE;
    if (!strcmp(path, "/v1/chat/completions")) return SRV_ROUTE_CHAT;
    if (!strcmp(path, "/v1/models")) return SRV_ROUTE_MODELS;
    if (!strcmp(path, "/health")) return SRV_ROUTE_HEALTH;
    if (!strcmp(path, "/metrics")) return SRV_ROUTE_METRICS;
    return SRV_ROUTE_NONE;
}

/* A GET route's response. */
static void respond_get(struct srv *s, struct srv_conn *c)
{
    struct sbuf b = {0};
    char *j;
    switch (c->http.route) {
    case SRV_ROUTE_MODELS:
        j = openai_models_json(s);
        http_respond(c, 200, "application/json", j, strlen(j));
        free(j);
        break;
    case SRV_ROUTE_HEALTH:
        if (s->stopping) http_respond(c, 503, "application/json", "{\"status\":\"shutting_down\"}", 26);
        else http_respond(c, 200, "application/json", "{\"status\":\"ok\"}", 15);
        break;
    case SRV_ROUTE_METRICS:
        metrics_prometheus(s, &b);
        http_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.n);
        sbuf_free(&b);
        break;
    case SRV_ROUTE_CHAT:
        http_respond_error(s, c, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "use POST for /v1/chat/completions");
        break;
    case SRV_ROUTE_NONE:
    case SRV_ROUTE_KIOSK_PAGE:
        break;
    }
}

/* The preflight of a cross-origin request from an allowed origin. */
static void respond_preflight(struct srv_conn *c)
{
    c->http.status = 204;
    http_respond(c, 204, NULL, NULL, 0);
}

int http_begin(struct srv *s, struct srv_conn *c, struct lws *wsi)
{
    struct srv_http *h = &c->http;
    char path[SRV_MAX_PATH_BYTES] = "";
    int is_get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
    int is_options = lws_hdr_total_length(wsi, WSI_TOKEN_OPTIONS_URI) > 0;
    enum lws_token_indexes uri_tok = is_get       ? WSI_TOKEN_GET_URI
                                     : is_options ? WSI_TOKEN_OPTIONS_URI
                                                  : WSI_TOKEN_POST_URI;
    http_reset(s, c);
    h->active = 1;
    h->is_post = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0;
    if (!is_get && !is_options && !h->is_post) {
        http_respond_error(s, c, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "only GET, POST and OPTIONS are served");
        h->close_after = 1;
        return 0;
    }
    if (lws_hdr_copy(wsi, path, sizeof path, uri_tok) < 0) path[0] = 0;
    h->route = route_of(s, path);
    if (h->is_post) lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, SRV_BODY_IDLE_S);
    if (h->route == SRV_ROUTE_KIOSK_PAGE && is_get) return static_serve_kiosk(s, wsi); /* a page: no API checks */
    if (h->route == SRV_ROUTE_NONE) {
        char msg[G4_ERR_MAX];
        snprintf(msg, sizeof msg, "unknown URL: %s %.300s", is_get ? "GET" : is_options ? "OPTIONS" : "POST", path);
        if (h->is_post) defer_error(c, 404, "invalid_request_error", "unknown_url", msg);
        else http_respond_error(s, c, 404, "invalid_request_error", "unknown_url", NULL, msg);
        return 0;
    }
    if (!srv_origin_ok(s, wsi, h->origin, sizeof h->origin)) {
        const char *m = "this Origin may not call the API (see --allow-origin)";
        if (h->is_post) defer_error(c, 403, "invalid_request_error", "origin_not_allowed", m);
        else http_respond_error(s, c, 403, "invalid_request_error", "origin_not_allowed", NULL, m);
        return 0;
    }
    if (is_options) {
        respond_preflight(c);
        return 0;
    }
    if (!strncmp(path, "/v1/", 4) && !srv_key_ok(s, wsi, 0)) {
        const char *m = "missing or wrong API key (Authorization: Bearer KEY)";
        if (h->is_post) defer_error(c, 401, "invalid_request_error", "invalid_api_key", m);
        else http_respond_error(s, c, 401, "invalid_request_error", "invalid_api_key", NULL, m);
        return 0;
    }
    if (is_get) {
        respond_get(s, c);
        return 0;
    }
    if (h->route != SRV_ROUTE_CHAT) {
        defer_error(c, 405, "invalid_request_error", "method_not_allowed", "this URL answers GET only");
        return 0;
    }
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
        char cl[32] = "";
        lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH);
        if (strtoull(cl, NULL, 10) > SRV_MAX_BODY_BYTES) {
            char msg[96];
            snprintf(msg, sizeof msg, "the body of %s bytes is over the limit of %u bytes", cl, SRV_MAX_BODY_BYTES);
            h->body_over = 1;
            http_respond_error(s, c, 413, "invalid_request_error", "body_too_large", NULL, msg);
            h->close_after = 1;
        }
    }
    return 0;
}

int http_body(struct srv *s, struct srv_conn *c, const void *in, size_t len)
{
    struct srv_http *h = &c->http;
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_HTTP_CONTENT, SRV_BODY_IDLE_S); /* the body must keep coming */
    if (h->body_over || h->deferred_status) return 0; /* answered or to be answered: the bytes are dropped */
    if (h->body.n + len > SRV_MAX_BODY_BYTES) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is over the limit of %u bytes", SRV_MAX_BODY_BYTES);
        h->body_over = 1;
        sbuf_free(&h->body);
        http_respond_error(s, c, 413, "invalid_request_error", "body_too_large", NULL, msg);
        h->close_after = 1;
        return 0;
    }
    sbuf_append(&h->body, in, len);
    return 0;
}

int http_body_done(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0); /* a reply may take as long as the engine needs */
    if (h->body_over || h->resp_ready) return 0;
    if (h->deferred_status) {
        http_respond_error(s, c, h->deferred_status, h->deferred_type, h->deferred_code, NULL, h->deferred_msg);
        return 0;
    }
    openai_chat(s, c);
    return 0;
}

int http_has_output(struct srv *s, struct srv_conn *c)
{
    const struct srv_http *h = &c->http;
    if (h->resp_ready) return 1;
    return h->r && !h->ended && sched_req_has_output(s->sched, h->r);
}

/* Writes the response headers: status, type, length, CORS, security headers, Connection: close when the
 * request body was left unread. One write. */
static int write_headers(struct srv_conn *c, int status, const char *ctype, lws_filepos_t len)
{
    struct srv_http *h = &c->http;
    unsigned char buf[LWS_PRE + 2048], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    struct lws *wsi = c->wsi;
    if (lws_add_http_common_headers(wsi, (unsigned)status, ctype, len, &p, end)) return -1;
    if (h->close_after && http_add_header(wsi, "connection:", "close", &p, end)) return -1;
    if (http_add_security_headers(wsi, &p, end) || http_add_header(wsi, "cache-control:", "no-store", &p, end))
        return -1;
    if (h->origin[0] && (http_add_header(wsi, "access-control-allow-origin:", h->origin, &p, end) ||
                         http_add_header(wsi, "vary:", "Origin", &p, end) ||
                         http_add_header(wsi, "access-control-allow-methods:", "GET, POST, OPTIONS", &p, end) ||
                         http_add_header(wsi, "access-control-allow-headers:", "authorization, content-type", &p, end)))
        return -1;
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return -1;
    return 0;
}

/* Ends the transaction after its last write: the connection is kept for the next request, unless the
 * response said close. Returns the callback's return code. */
static int complete(struct srv *s, struct srv_conn *c)
{
    int close_after = c->http.close_after;
    http_reset(s, c);
    if (close_after) return -1;
    return lws_http_transaction_completed(c->wsi) ? -1 : 0;
}

int http_writable(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    if (!h->resp_ready) return h->r ? openai_writable(s, c) : 0;
    if (!h->headers_sent) {
        if (write_headers(c, h->status, h->ctype, h->resp.n)) return -1;
        h->headers_sent = 1;
        if (h->resp.n == 0) return complete(s, c);
        lws_callback_on_writable(c->wsi);
        return 0;
    }
    {
        size_t left = h->resp.n - h->resp_off, n = left < SRV_HTTP_WRITE_CHUNK ? left : SRV_HTTP_WRITE_CHUNK;
        int final = n == left;
        unsigned char *buf = g4_malloc(LWS_PRE + n);
        int w;
        memcpy(buf + LWS_PRE, h->resp.p + h->resp_off, n);
        w = lws_write(c->wsi, buf + LWS_PRE, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
        free(buf);
        if (w < (int)n) return -1;
        h->resp_off += n;
        if (final) return complete(s, c);
        lws_callback_on_writable(c->wsi);
    }
    return 0;
}
