/* ws_conn — the WebSocket protocol of docs/protocol.md on one connection: the upgrade checks (path, Origin,
 * API key), the `ready` greeting, message reassembly, client messages (chat, cancel, subscribe), patch
 * frames, and the writer that sends one message per WRITEABLE: service replies first, then a metrics
 * snapshot when due, then the requests' outbox events in turn.
 *
 * Service thread only. Anything a client sends that is wrong becomes an `error` for that client. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "model/safetensors.h"
#include "server/srv.h"

/* ---- small helpers ------------------------------------------------------------------------------------- */

/* Queues a service reply (takes msg). A client that keeps sending bad messages without reading the replies
 * is disconnected once SRV_MAX_CTL_QUEUE replies wait. */
static void ctl_push(struct srv_conn *c, char *msg)
{
    if (c->n_ctl == SRV_MAX_CTL_QUEUE) {
        free(msg);
        c->kill = 1;
    } else {
        c->ctl[(c->ctl_head + c->n_ctl++) % SRV_MAX_CTL_QUEUE] = msg;
    }
    lws_callback_on_writable(c->wsi);
}

static void reply_error(struct srv *s, struct srv_conn *c, const char *id, const char *code, const char *message)
{
    s->bad_requests++;
    ctl_push(c, proto_ws_error(id, code, message));
}

/* Writes one text message; -1 when the socket failed. */
static int write_text(struct lws *wsi, const char *msg, size_t len)
{
    unsigned char *buf = g4_malloc(LWS_PRE + len);
    int n;
    memcpy(buf + LWS_PRE, msg, len);
    n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT);
    free(buf);
    return n < (int)len ? -1 : 0;
}

static void upload_free(struct srv_conn *c, int i)
{
    struct srv_upload *u = &c->uploads[i];
    c->upload_bytes -= (size_t)u->n * FRAME_ROW_BYTES;
    free(u->rows);
    free(u->have);
    c->uploads[i] = c->uploads[--c->n_uploads];
    memset(&c->uploads[c->n_uploads], 0, sizeof c->uploads[0]);
}

static int upload_find(const struct srv_conn *c, uint32_t id)
{
    for (int i = 0; i < c->n_uploads; i++)
        if (c->uploads[i].image_id == id) return i;
    return -1;
}

/* ---- upgrade and greeting ------------------------------------------------------------------------------ */

/* Refuses an upgrade with an HTTP status and an OpenAI-shaped JSON body; returns 1 (lws then closes). */
static int refuse_upgrade(struct srv *s, struct lws *wsi, int status, const char *code, const char *message)
{
    unsigned char buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    char *body = openai_error_json("invalid_request_error", code, NULL, message);
    size_t n = strlen(body);
    s->bad_requests++;
    if (lws_add_http_common_headers(wsi, (unsigned)status, "application/json", n, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5, &p, end) ||
        lws_finalize_http_header(wsi, &p, end) || (size_t)(end - p) < n) {
        free(body);
        return -1;
    }
    memcpy(p, body, n);
    p += n;
    free(body);
    if (lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS) < 0) return -1;
    return 1;
}

int ws_confirm_upgrade(struct srv *s, struct srv_conn *c, struct lws *wsi)
{
    char path[SRV_MAX_PATH_BYTES] = "";
    (void)c;
    if (lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) < 0 || strcmp(path, "/ws"))
        return refuse_upgrade(s, wsi, 404, "unknown_url", "the WebSocket endpoint is /ws");
    if (s->stopping) return refuse_upgrade(s, wsi, 503, "shutdown", "the server is shutting down");
    if (!srv_origin_ok(s, wsi, NULL, 0))
        return refuse_upgrade(s, wsi, 403, "origin_not_allowed",
                              "this Origin may not open the WebSocket (see --allow-origin)");
    if (!srv_key_ok(s, wsi, 1))
        return refuse_upgrade(s, wsi, 401, "invalid_api_key",
                              "missing or wrong API key (Authorization: Bearer KEY, or /ws?key=KEY)");
    return 0;
}

void ws_established(struct srv *s, struct srv_conn *c)
{
    cJSON *o = cJSON_CreateObject(), *d, *l;
    char *msg;
    const struct samp_params *p = &s->defaults.params;
    const char *demo = st_metadata(s->m->weights, "g4_weights"); /* "random": g4 make-tiny-model wrote it */
    c->is_ws = 1;
    s->n_ws++;
    srv_conn_stream_sndbuf(c);
    cJSON_AddStringToObject(o, "type", "ready");
    cJSON_AddNumberToObject(o, "protocol", 1);
    cJSON_AddStringToObject(o, "model", s->model_name);
    cJSON_AddNumberToObject(o, "context", s->o.context);
    cJSON_AddNumberToObject(o, "max_soft_tokens", s->budget);
    cJSON_AddBoolToObject(o, "kiosk", s->o.kiosk);
    cJSON_AddNumberToObject(o, "kiosk_idle_s", s->o.kiosk_idle_s);
    cJSON_AddBoolToObject(o, "demo", demo && !strcmp(demo, "random"));
    if (s->lan_url[0]) cJSON_AddStringToObject(o, "lan_url", s->lan_url);
    d = cJSON_AddObjectToObject(o, "defaults");
    cJSON_AddNumberToObject(d, "temperature", round(p->temperature * 1e6) / 1e6); /* floats as set, not as stored */
    cJSON_AddNumberToObject(d, "top_p", round(p->top_p * 1e6) / 1e6);
    cJSON_AddNumberToObject(d, "top_k", p->top_k);
    cJSON_AddNumberToObject(d, "min_p", round(p->min_p * 1e6) / 1e6);
    cJSON_AddNumberToObject(d, "max_tokens", p->max_tokens);
    l = cJSON_AddObjectToObject(o, "limits");
    cJSON_AddNumberToObject(l, "message_bytes", SRV_MAX_MESSAGE_BYTES);
    cJSON_AddNumberToObject(l, "images_per_request", SRV_MAX_IMAGES_PER_REQUEST);
    cJSON_AddNumberToObject(l, "patches_per_image", IMG_MAX_SOFT_TOKENS);
    cJSON_AddNumberToObject(l, "uploads_per_connection", SRV_MAX_UPLOADS_PER_CONN);
    cJSON_AddNumberToObject(l, "prompt_tokens", SRV_MAX_PROMPT_TOKENS);
    cJSON_AddNumberToObject(l, "requests_per_connection", SRV_MAX_REQUESTS_PER_CONN);
    cJSON_AddNumberToObject(l, "stop_strings", SAMP_MAX_STOP_STRINGS);
    cJSON_AddNumberToObject(l, "streams", s->o.max_streams);
    cJSON_AddNumberToObject(l, "queue", s->o.max_queue);
    msg = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    ctl_push(c, msg);
}

/* ---- client messages ----------------------------------------------------------------------------------- */

/* Moves the uploaded patches a chat refers to into it; all must be complete. */
static int take_uploads(struct srv_conn *c, struct proto_chat *chat, char *msg)
{
    for (int k = 0; k < chat->n_images; k++) {
        int i;
        if (chat->images[k].kind != PROTO_IMAGE_UPLOAD) continue;
        i = upload_find(c, chat->images[k].image_id);
        if (i < 0 || c->uploads[i].received < c->uploads[i].n)
            return g4_errf(msg, "image_id %u is unknown or incomplete (send all its patch frames first)",
                           chat->images[k].image_id);
        for (int j = 0; j < k; j++)
            if (chat->images[j].kind == PROTO_IMAGE_UPLOAD && chat->images[j].image_id == chat->images[k].image_id)
                return g4_errf(msg, "image_id %u is used twice in one request", chat->images[k].image_id);
    }
    for (int k = 0; k < chat->n_images; k++) {
        struct srv_upload *u;
        struct sched_image *im = &chat->images[k].patches;
        int i;
        if (chat->images[k].kind != PROTO_IMAGE_UPLOAD) continue;
        i = upload_find(c, chat->images[k].image_id);
        u = &c->uploads[i];
        im->n = u->n;
        im->patches = u->rows;
        im->positions = g4_malloc((size_t)u->n * 2 * sizeof *im->positions);
        for (int r = 0; r < u->n; r++) {
            im->positions[2 * r] = r % u->grid_w;
            im->positions[2 * r + 1] = r / u->grid_w;
        }
        u->rows = NULL;
        upload_free(c, i);
    }
    return 0;
}

static void on_chat(struct srv *s, struct srv_conn *c, struct proto_msg *m)
{
    char code[SCHED_CODE_MAX], msg[G4_ERR_MAX];
    struct sched_req *r;
    for (int i = 0; i < c->n_reqs; i++)
        if (!strcmp(c->reqs[i].id, m->id)) {
            reply_error(s, c, m->id, "duplicate_id", "a request with this id is already running on this connection");
            return;
        }
    if (c->n_reqs == SRV_MAX_REQUESTS_PER_CONN) {
        snprintf(msg, sizeof msg, "%d requests are already running on this connection (the limit)", c->n_reqs);
        reply_error(s, c, m->id, "too_many_requests", msg);
        return;
    }
    if (take_uploads(c, &m->chat, msg)) {
        reply_error(s, c, m->id, "image_error", msg);
        return;
    }
    r = srv_chat_start(s, &m->chat, code, msg);
    if (!r) {
        ctl_push(c, proto_ws_error(m->id, code, msg));
        return;
    }
    c->reqs[c->n_reqs].r = r;
    memcpy(c->reqs[c->n_reqs].id, m->id, sizeof m->id);
    c->n_reqs++;
}

static void on_text(struct srv *s, struct srv_conn *c, const char *buf, size_t len)
{
    struct proto_msg m;
    struct proto_err e;
    if (proto_ws_parse(buf, len, &s->defaults, &m, &e)) {
        reply_error(s, c, m.has_id ? m.id : NULL, proto_ws_code(e.kind), e.message);
        return;
    }
    switch (m.type) {
    case PROTO_MSG_CHAT:
        on_chat(s, c, &m);
        proto_chat_free(&m.chat);
        break;
    case PROTO_MSG_CANCEL: {
        int i;
        for (i = 0; i < c->n_reqs; i++)
            if (!strcmp(c->reqs[i].id, m.id)) break;
        if (i == c->n_reqs) reply_error(s, c, m.id, "unknown_id", "no request with this id is running");
        else sched_cancel(s->sched, c->reqs[i].r);
        break;
    }
    case PROTO_MSG_SUBSCRIBE:
        if (!c->subscribed) lws_set_timer_usecs(c->wsi, (lws_usec_t)SRV_METRICS_PERIOD_MS * 1000);
        c->subscribed = c->metrics_due = 1;
        lws_callback_on_writable(c->wsi);
        break;
    case PROTO_MSG_UNSUBSCRIBE:
        c->subscribed = c->metrics_due = 0;
        lws_set_timer_usecs(c->wsi, LWS_SET_TIMER_USEC_CANCEL);
        break;
    }
}

/* A binary frame: validated by frame_decode, then against this image's earlier frames and the limits. */
static void on_frame(struct srv *s, struct srv_conn *c, const uint8_t *buf, size_t len)
{
    struct frame_header h;
    const uint8_t *rows;
    char err[G4_ERR_MAX];
    struct srv_upload *u;
    int i, n;
    if (frame_decode(buf, len, &h, &rows, err) != FRAME_OK) {
        reply_error(s, c, NULL, "bad_frame", err);
        return;
    }
    n = h.grid_w * h.grid_h;
    if (!s->posemb) {
        reply_error(s, c, NULL, "bad_frame", "this model has no vision embedder; it takes no images");
        return;
    }
    if (h.grid_w > s->posemb || h.grid_h > s->posemb) {
        snprintf(err, sizeof err, "image %u: a %dx%d patch grid is past the model's position table of %d", h.image_id,
                 h.grid_w, h.grid_h, s->posemb);
        reply_error(s, c, NULL, "bad_frame", err);
        return;
    }
    i = upload_find(c, h.image_id);
    if (i < 0) {
        if (c->n_uploads == SRV_MAX_UPLOADS_PER_CONN ||
            c->upload_bytes + (size_t)n * FRAME_ROW_BYTES > SRV_MAX_UPLOAD_BYTES) {
            snprintf(err, sizeof err, "image %u: too many images waiting on this connection (limits: %d images, %u MiB)",
                     h.image_id, SRV_MAX_UPLOADS_PER_CONN, SRV_MAX_UPLOAD_BYTES >> 20);
            reply_error(s, c, NULL, "bad_frame", err);
            return;
        }
        i = c->n_uploads++;
        u = &c->uploads[i];
        u->image_id = h.image_id;
        u->grid_w = h.grid_w;
        u->grid_h = h.grid_h;
        u->n = n;
        u->received = 0;
        u->rows = g4_malloc((size_t)n * FRAME_ROW_BYTES);
        u->have = g4_calloc((size_t)n, 1);
        c->upload_bytes += (size_t)n * FRAME_ROW_BYTES;
    }
    u = &c->uploads[i];
    if (u->grid_w != h.grid_w || u->grid_h != h.grid_h) {
        snprintf(err, sizeof err, "image %u: grid %dx%d differs from its earlier frames' %dx%d; the image was dropped",
                 h.image_id, h.grid_w, h.grid_h, u->grid_w, u->grid_h);
        upload_free(c, i);
        reply_error(s, c, NULL, "bad_frame", err);
        return;
    }
    for (uint32_t k = h.first; k < h.first + h.count; k++)
        if (u->have[k]) {
            snprintf(err, sizeof err, "image %u: row %u arrived twice; the image was dropped", h.image_id, k);
            upload_free(c, i);
            reply_error(s, c, NULL, "bad_frame", err);
            return;
        }
    memcpy(u->rows + (size_t)h.first * FRAME_ROW_BYTES, rows, (size_t)h.count * FRAME_ROW_BYTES);
    memset(u->have + h.first, 1, h.count);
    u->received += (int)h.count;
    if (u->received == u->n) ctl_push(c, proto_ws_image_ack(u->image_id, u->n));
}

int ws_receive(struct srv *s, struct srv_conn *c, const void *in, size_t len)
{
    int final = lws_is_final_fragment(c->wsi) && !lws_remaining_packet_payload(c->wsi);
    if (c->rx.n == 0 && !c->rx_drop) c->rx_binary = lws_frame_is_binary(c->wsi);
    if (!c->rx_drop) {
        if (c->rx.n + len > SRV_MAX_MESSAGE_BYTES) {
            c->rx_drop = 1;
            sbuf_free(&c->rx);
        } else {
            sbuf_append(&c->rx, in, len);
        }
    }
    if (!final) return 0;
    if (c->rx_drop) {
        char msg[128];
        snprintf(msg, sizeof msg, "the message is over the limit of %u bytes; it was dropped", SRV_MAX_MESSAGE_BYTES);
        reply_error(s, c, NULL, "message_too_large", msg);
        c->rx_drop = 0;
    } else if (c->rx_binary) {
        on_frame(s, c, (const uint8_t *)c->rx.p, c->rx.n);
    } else {
        on_text(s, c, c->rx.p ? c->rx.p : "", c->rx.n);
    }
    if (c->rx.cap > (64u << 10)) sbuf_free(&c->rx); /* keep only a small buffer between messages */
    c->rx.n = 0;
    return 0;
}

/* ---- writing ------------------------------------------------------------------------------------------- */

int ws_has_output(struct srv *s, struct srv_conn *c)
{
    if (c->n_ctl || c->metrics_due || c->kill) return 1;
    for (int i = 0; i < c->n_reqs; i++)
        if (sched_req_has_output(s->sched, c->reqs[i].r)) return 1;
    return 0;
}

/* The next outbox event of the connection's requests, round-robin, as a message; NULL when none. A request
 * whose final event is taken is released. */
static char *next_event(struct srv *s, struct srv_conn *c)
{
    struct sbuf text = {0};
    for (int t = 0; t < c->n_reqs; t++) {
        int i = (c->rr + t) % c->n_reqs;
        struct srv_wsreq *q = &c->reqs[i];
        struct sched_out out;
        char *msg = NULL;
        if (!sched_poll(s->sched, q->r, &out, &text)) continue;
        if (out.kind == SCHED_OUT_QUEUED) msg = proto_ws_queued(q->id, out.position);
        else if (out.kind == SCHED_OUT_TEXT) msg = proto_ws_token(q->id, text.p, text.n, out.n);
        else msg = proto_ws_end(q->id, &out.result);
        sbuf_free(&text);
        if (out.kind == SCHED_OUT_END) {
            sched_req_unref(s->sched, q->r);
            c->reqs[i] = c->reqs[--c->n_reqs];
            c->rr = c->n_reqs ? i % c->n_reqs : 0;
        } else {
            c->rr = (i + 1) % c->n_reqs;
        }
        return msg;
    }
    return NULL;
}

int ws_writable(struct srv *s, struct srv_conn *c)
{
    char *msg = NULL;
    if (c->kill) {
        lws_close_reason(c->wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)"too many unread replies", 23);
        return -1;
    }
    if (c->n_ctl) {
        msg = c->ctl[c->ctl_head];
        c->ctl_head = (c->ctl_head + 1) % SRV_MAX_CTL_QUEUE;
        c->n_ctl--;
    } else if (c->metrics_due) {
        c->metrics_due = 0;
        msg = metrics_snapshot_json(s);
    } else {
        msg = next_event(s, c);
    }
    if (msg) {
        int rc = write_text(c->wsi, msg, strlen(msg));
        free(msg);
        if (rc) return -1;
    }
    if (ws_has_output(s, c)) {
        lws_callback_on_writable(c->wsi);
    } else if (c->closing && c->n_reqs == 0) {
        lws_close_reason(c->wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)"server shutting down", 20);
        return -1;
    }
    return 0;
}

void ws_timer(struct srv *s, struct srv_conn *c)
{
    (void)s;
    if (!c->subscribed) return;
    c->metrics_due = 1;
    lws_callback_on_writable(c->wsi);
    lws_set_timer_usecs(c->wsi, (lws_usec_t)SRV_METRICS_PERIOD_MS * 1000);
}

/* Shutdown: the requests end with `shutdown` errors from the scheduler; once those are written, close. */
void ws_shutdown(struct srv *s, struct srv_conn *c)
{
    (void)s;
    c->closing = 1;
    lws_callback_on_writable(c->wsi);
}

/* The socket closed (or is being destroyed): cancel and release every request, free uploads and replies. */
void ws_closed(struct srv *s, struct srv_conn *c)
{
    if (!c->is_ws) return;
    for (int i = 0; i < c->n_reqs; i++) {
        sched_cancel(s->sched, c->reqs[i].r);
        sched_req_unref(s->sched, c->reqs[i].r);
    }
    c->n_reqs = 0;
    while (c->n_uploads) upload_free(c, 0);
    for (; c->n_ctl; c->n_ctl--, c->ctl_head = (c->ctl_head + 1) % SRV_MAX_CTL_QUEUE) free(c->ctl[c->ctl_head]);
    sbuf_free(&c->rx);
    c->is_ws = 0;
    s->n_ws--;
}
