/* ws — the libwebsockets callback of protocols[0] ("g4"), which every connection on the port goes through:
 * static files (lws mounts), the WebSocket protocol and the HTTP API. It only dispatches each callback reason
 * to the room that handles it (conn.c, ws_conn.c, http.c); the work is there.
 *
 * Runs on the lws service thread. Must not block, must write at most once per WRITEABLE callback (the rooms
 * keep to that), and must end with lws_callback_http_dummy so that lws' own mount handling keeps working. */
#include "server/srv.h"

int srv_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    struct srv *s = wsi ? lws_context_user(lws_get_context(wsi)) : NULL;
    struct srv_conn *c = wsi ? lws_get_opaque_user_data(wsi) : NULL;

    switch (reason) {
    /* connections */
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
        return srv_conn_accept(s, wsi) ? 0 : -1;
    case LWS_CALLBACK_WSI_DESTROY:
        if (c) srv_conn_destroy(s, c);
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: /* the engine, prep or signal thread posted something */
        if (s) srv_wake_all(s);
        return 0;

    /* WebSocket */
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return c ? ws_confirm_upgrade(s, c, wsi) : -1;
    case LWS_CALLBACK_ESTABLISHED:
        if (!c) return -1;
        ws_established(s, c);
        return 0;
    case LWS_CALLBACK_RECEIVE:
        return c ? ws_receive(s, c, in, len) : -1;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return c ? ws_writable(s, c) : -1;
    case LWS_CALLBACK_TIMER:
        if (c && c->is_ws) ws_timer(s, c);
        return 0;
    case LWS_CALLBACK_CLOSED:
        if (c) ws_closed(s, c);
        return 0;

    /* HTTP API */
    case LWS_CALLBACK_HTTP:
        return c ? http_begin(s, c, wsi) : -1;
    case LWS_CALLBACK_HTTP_BODY:
        return c ? http_body(s, c, in, len) : -1;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return c ? http_body_done(s, c) : -1;
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (c && (c->http.resp_ready || c->http.r)) return http_writable(s, c);
        break; /* a static file in flight: lws' own */
    case LWS_CALLBACK_CLOSED_HTTP:
        if (c) http_reset(s, c);
        break;

    /* static files: our security headers on every file lws serves */
    case LWS_CALLBACK_ADD_HEADERS: {
        struct lws_process_html_args *a = in;
        unsigned char *p = (unsigned char *)a->p;
        if (http_add_security_headers(wsi, &p, p + a->max_len)) return -1;
        a->max_len -= (int)(p - (unsigned char *)a->p);
        a->p = (char *)p;
        return 0;
    }
    default:
        break;
    }
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}
