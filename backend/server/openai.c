/* openai — POST /v1/chat/completions in OpenAI's shapes: the body parsed into a chat request (proto.c), the
 * reply as one JSON object or as Server-Sent Events (chat.completion.chunk ... data: [DONE]), errors as
 * {"error": {message, type, param, code}} with their HTTP status; also GET /v1/models.
 *
 * Service thread only. One write per WRITEABLE: the SSE writer gathers every event the outbox holds into
 * one write. A failure before the first byte of the reply is an HTTP error status; after it, an error event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srv.h"

char *openai_error_json(const char *type, const char *code, const char *param, const char *message)
{
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    char *s;
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddStringToObject(e, "type", type);
    if (param && param[0]) cJSON_AddStringToObject(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    if (code) cJSON_AddStringToObject(e, "code", code);
    else cJSON_AddNullToObject(e, "code");
    s = cJSON_PrintUnformatted(o);
    G4_CHECK(s, "cJSON print failed");
    cJSON_Delete(o);
    return s;
}

/* The HTTP status, OpenAI error type and OpenAI code of an error code from the scheduler or the prep
 * thread (whose codes are the WebSocket protocol's). */
int openai_status_of(const char *code, const char **type, const char **oa_code)
{
    *type = "invalid_request_error";
    *oa_code = code;
    if (!strcmp(code, "queue_full")) {
        *type = "rate_limit_error";
        return 429;
    }
    if (!strcmp(code, "shutdown") || !strcmp(code, "engine_error") || !strcmp(code, "slow_reader")) {
        *type = "server_error";
        return strcmp(code, "shutdown") ? 500 : 503;
    }
    if (!strcmp(code, "prompt_too_long")) *oa_code = "context_length_exceeded";
    else if (!strcmp(code, "bad_request")) *oa_code = "invalid_value";
    return 400;
}

char *openai_models_json(struct srv *s)
{
    cJSON *o = cJSON_CreateObject(), *d = cJSON_AddArrayToObject(o, "data"), *m = cJSON_CreateObject();
    char *j;
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(m, "id", s->model_name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)s->created);
    cJSON_AddStringToObject(m, "owned_by", "g4");
    cJSON_AddItemToArray(d, m);
    j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return j;
}

/* OpenAI's code for a parse error. */
static const char *code_of(enum proto_ekind k)
{
    switch (k) {
    case PROTO_E_JSON: return "bad_json";
    case PROTO_E_UTF8: return "invalid_utf8";
    case PROTO_E_TYPE: return "invalid_type";
    case PROTO_E_MISSING: return "missing_field";
    case PROTO_E_IMAGE: return "image_error";
    case PROTO_E_VALUE:
    case PROTO_E_UNKNOWN: break;
    }
    return "invalid_value";
}

void openai_chat(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    struct proto_err e = {0};
    struct proto_chat chat;
    char code[SCHED_CODE_MAX], msg[G4_ERR_MAX];
    cJSON *root = proto_parse_json(h->body.p ? h->body.p : "", h->body.n, &e);
    if (!root || proto_chat_parse(root, PROTO_OPENAI, &s->defaults, &chat, &e)) {
        cJSON_Delete(root);
        http_respond_error(s, c, 400, "invalid_request_error", code_of(e.kind), e.param, e.message);
        return;
    }
    cJSON_Delete(root);
    h->stream = chat.stream;
    h->include_usage = chat.include_usage;
    h->r = srv_chat_start(s, &chat, code, msg);
    proto_chat_free(&chat);
    if (!h->r) {
        const char *type, *oa_code;
        int status = openai_status_of(code, &type, &oa_code);
        http_respond_error(s, c, status, type, oa_code, NULL, msg);
        return;
    }
    snprintf(h->cmpl_id, sizeof h->cmpl_id, "chatcmpl-%016llx", (unsigned long long)srv_random_seed());
    h->created = (long long)time(NULL);
    h->ended = 0;
}

/* ---- replies ------------------------------------------------------------------------------------------- */

static cJSON *reply_object(struct srv *s, const struct srv_http *h, const char *object)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", h->cmpl_id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)h->created);
    cJSON_AddStringToObject(o, "model", s->model_name);
    return o;
}

static void add_usage(cJSON *o, const struct sched_result *r)
{
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", r->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", r->prompt_tokens + r->completion_tokens);
}

static const char *finish_reason(const struct sched_result *r)
{
    return r->cancelled ? "stop" : samp_finish_name(r->finish);
}

/* Appends one SSE event "data: JSON\n\n" built from o (deleted). */
static void sse_event(struct sbuf *b, cJSON *o)
{
    char *j = cJSON_PrintUnformatted(o);
    G4_CHECK(j, "cJSON print failed");
    sbuf_printf(b, "data: %s\n\n", j);
    free(j);
    cJSON_Delete(o);
}

/* A chunk with one choice: delta (content or role) and finish_reason (NULL: null). */
static void sse_chunk(struct srv *s, struct srv_http *h, const char *role, const char *content, size_t len,
                      const char *finish)
{
    cJSON *o = reply_object(s, h, "chat.completion.chunk"), *ch = cJSON_AddArrayToObject(o, "choices");
    cJSON *c0 = cJSON_CreateObject(), *d = cJSON_AddObjectToObject(c0, "delta");
    cJSON_AddNumberToObject(c0, "index", 0);
    if (role) cJSON_AddStringToObject(d, "role", role);
    if (content) {
        char *t = g4_malloc(len + 1);
        memcpy(t, content, len);
        t[len] = 0;
        cJSON_AddStringToObject(d, "content", t);
        free(t);
    }
    if (finish) cJSON_AddStringToObject(c0, "finish_reason", finish);
    else cJSON_AddNullToObject(c0, "finish_reason");
    cJSON_AddItemToArray(ch, c0);
    sse_event(&h->pending, o);
}

/* The whole non-streamed reply. */
static void respond_whole(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    cJSON *o = reply_object(s, h, "chat.completion"), *ch = cJSON_AddArrayToObject(o, "choices");
    cJSON *c0 = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(c0, "message");
    char *j;
    cJSON_AddNumberToObject(c0, "index", 0);
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddStringToObject(m, "content", h->text.p ? h->text.p : "");
    cJSON_AddStringToObject(c0, "finish_reason", finish_reason(&h->res));
    cJSON_AddItemToArray(ch, c0);
    add_usage(o, &h->res);
    j = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    http_respond(c, 200, "application/json", j, strlen(j));
    free(j);
}

/* Takes every event the outbox holds now: text accumulates (whole reply) or becomes chunks (stream); the
 * final result is kept in h->res. */
static void take_events(struct srv *s, struct srv_http *h)
{
    struct sched_out out;
    struct sbuf text = {0};
    while (!h->ended && sched_poll(s->sched, h->r, &out, &text)) {
        if (out.kind == SCHED_OUT_TEXT) {
            if (!h->stream) {
                sbuf_append(&h->text, text.p, text.n);
            } else {
                if (!h->role_sent) sse_chunk(s, h, "assistant", "", 0, NULL);
                h->role_sent = 1;
                sse_chunk(s, h, NULL, text.p, text.n, NULL);
            }
            text.n = 0;
        } else if (out.kind == SCHED_OUT_END) {
            h->ended = 1;
            h->res = out.result;
        }
    }
    sbuf_free(&text);
}

int openai_writable(struct srv *s, struct srv_conn *c)
{
    struct srv_http *h = &c->http;
    take_events(s, h);
    if (h->ended && h->res.is_error && !h->sse_started) { /* nothing sent yet: an HTTP error status */
        const char *type, *oa_code;
        int status = openai_status_of(h->res.code, &type, &oa_code);
        http_respond_error(s, c, status, type, oa_code, NULL, h->res.message);
        return 0;
    }
    if (!h->stream) {
        if (h->ended) respond_whole(s, c);
        return 0;
    }
    if (h->ended && !h->tail_queued && !h->res.is_error) { /* once: the headers may take a call of their own */
        h->tail_queued = 1;
        if (!h->role_sent) sse_chunk(s, h, "assistant", "", 0, NULL);
        h->role_sent = 1;
        sse_chunk(s, h, NULL, NULL, 0, finish_reason(&h->res));
        if (h->include_usage) {
            cJSON *o = reply_object(s, h, "chat.completion.chunk");
            cJSON_AddArrayToObject(o, "choices");
            add_usage(o, &h->res);
            sse_event(&h->pending, o);
        }
        sbuf_puts(&h->pending, "data: [DONE]\n\n");
    } else if (h->ended && !h->tail_queued) {
        char *j = openai_error_json("server_error", h->res.code, NULL, h->res.message);
        h->tail_queued = 1;
        sbuf_printf(&h->pending, "data: %s\n\n", j);
        free(j);
    }
    if (!h->sse_started) {
        unsigned char buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
        if (!h->pending.n) return 0;
        if (lws_add_http_common_headers(c->wsi, 200, "text/event-stream", LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end) ||
            http_add_header(c->wsi, "cache-control:", "no-cache", &p, end) || http_add_security_headers(c->wsi, &p, end) ||
            (h->origin[0] && http_add_header(c->wsi, "access-control-allow-origin:", h->origin, &p, end)) ||
            lws_finalize_write_http_header(c->wsi, start, &p, end))
            return -1;
        h->sse_started = 1;
        srv_conn_stream_sndbuf(c);
        lws_callback_on_writable(c->wsi);
        return 0;
    }
    if (h->pending.n) {
        unsigned char *buf = g4_malloc(LWS_PRE + h->pending.n);
        int n;
        memcpy(buf + LWS_PRE, h->pending.p, h->pending.n);
        n = lws_write(c->wsi, buf + LWS_PRE, h->pending.n, h->ended ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
        free(buf);
        if (n < (int)h->pending.n) return -1;
        h->pending.n = 0;
    }
    if (h->ended) {
        http_reset(s, c);
        return -1; /* SSE has no length: the connection closes to end it */
    }
    if (sched_req_has_output(s->sched, h->r)) lws_callback_on_writable(c->wsi);
    return 0;
}
