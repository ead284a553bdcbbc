/* app_view — the chat page's and the kiosk's HTML, built in C: the message list, one reply's body and
 * statistics while it streams, the composer's thumbnails, the conversation list, the connection state, and
 * the kiosk's QR code as SVG.
 *
 * Every string that came from the model, the person or storage goes through wbuf_html (markdown through md.c,
 * which does the same). What it must not do: change state (app.c owns it). */
#include <stdio.h>
#include <string.h>

#include "app_internal.h"
#include "md.h"
#include "plat.h"
#include "qr.h"

/* The statistics line of reply m: "TTFT 21 ms · 180.2 tok/s · 57 tokens", or its state. */
static void stats_html(struct wbuf *b, const struct conv_msg *m)
{
    if (m->state == CONV_PENDING) {
        if (m->queued) wbuf_printf(b, "<span>queued, position %d</span>", m->queued);
        else wbuf_str(b, "<span>waiting for the first token…</span>");
        return;
    }
    if (m->ttft_ms > 0) wbuf_printf(b, "<span class=\"ttft\">TTFT %.0f ms</span>", m->ttft_ms);
    if (m->state == CONV_DONE && m->tps > 0) wbuf_printf(b, "<span class=\"tps\">%.1f tok/s</span>", m->tps);
    wbuf_printf(b, "<span class=\"ntok\">%d token%s</span>", m->tokens, m->tokens == 1 ? "" : "s");
    if (m->state == CONV_STREAMING) wbuf_str(b, "<span class=\"live\">streaming…</span>");
    else if (!strcmp(m->finish, "cancelled")) wbuf_str(b, "<span class=\"fin\">stopped</span>");
    else if (!strcmp(m->finish, "length")) wbuf_str(b, "<span class=\"fin\">length limit</span>");
    else if (!strcmp(m->finish, "error")) wbuf_str(b, "<span class=\"fin err\">failed</span>");
}

static void body_html(struct wbuf *b, const struct conv_msg *m, int i)
{
    if (m->role == CONV_ASSISTANT) {
        md_render(wbuf_cstr(&m->text), m->text.n, i, b);
        if (m->state != CONV_DONE) wbuf_str(b, "<span class=\"cursor\" aria-hidden=\"true\"></span>");
        if (m->error[0]) {
            wbuf_str(b, "<p class=\"err\">");
            wbuf_html(b, m->error, strlen(m->error));
            wbuf_str(b, "</p>");
        }
    } else {
        wbuf_str(b, "<p class=\"plain\">");
        wbuf_html(b, wbuf_cstr(&m->text), m->text.n);
        wbuf_str(b, "</p>");
    }
}

static void image_html(struct wbuf *b, const struct conv_image *im)
{
    char title[200];
    snprintf(title, sizeof title, "%s — %d×%d, %d patches (%d×%d)", im->name, im->src_w, im->src_h, im->patches,
             im->grid_w, im->grid_h);
    if (im->thumb) {
        wbuf_str(b, "<img class=\"thumb\" src=\"");
        wbuf_html(b, im->thumb, strlen(im->thumb));
        wbuf_str(b, "\" alt=\"");
        wbuf_html(b, im->name, strlen(im->name));
        wbuf_str(b, "\" title=\"");
        wbuf_html(b, title, strlen(title));
        wbuf_str(b, "\">");
    } else {
        wbuf_str(b, "<span class=\"thumb none\" title=\"");
        wbuf_html(b, title, strlen(title));
        wbuf_str(b, "\">");
        wbuf_html(b, im->name, strlen(im->name));
        wbuf_str(b, "</span>");
    }
}

void view_messages(struct app *a)
{
    struct wbuf *b = &a->scratch;
    int last_user = -1;
    wbuf_reset(b);
    for (int i = 0; i < a->cur.n_msg; i++)
        if (a->cur.msg[i].role == CONV_USER) last_user = i;
    if (!a->cur.n_msg)
        wbuf_str(b, a->page == APP_KIOSK ? "<div class=\"empty\">Ask me anything — type below, or add a photo.</div>"
                                         : "<div class=\"empty\">Start a conversation: type a message, or attach, "
                                           "drop or paste an image.</div>");
    for (int i = 0; i < a->cur.n_msg; i++) {
        const struct conv_msg *m = &a->cur.msg[i];
        int bot = m->role == CONV_ASSISTANT, last = i == a->cur.n_msg - 1;
        wbuf_printf(b, "<article class=\"msg %s\" id=\"m%d\"><div class=\"who\">%s</div>", bot ? "bot" : "user", i,
                    bot ? "g4" : "You");
        if (m->n_img) {
            wbuf_str(b, "<div class=\"imgs\">");
            for (int k = 0; k < m->n_img; k++) image_html(b, &m->img[k]);
            wbuf_str(b, "</div>");
        }
        wbuf_printf(b, "<div class=\"body\" id=\"m%d-body\">", i);
        body_html(b, m, i);
        wbuf_str(b, "</div>");
        if (bot) {
            wbuf_printf(b, "<div class=\"stats\" id=\"m%d-stats\">", i);
            stats_html(b, m);
            wbuf_str(b, "</div>");
        }
        if (a->page == APP_CHAT && a->busy == BUSY_NONE) {
            if (bot && last)
                wbuf_str(b, "<div class=\"acts\"><button type=\"button\" data-act=\"regen\">Regenerate</button></div>");
            if (!bot && i == last_user)
                wbuf_str(b, "<div class=\"acts\"><button type=\"button\" data-act=\"edit\">Edit</button></div>");
        }
        wbuf_str(b, "</article>");
    }
    plat_html("log", wbuf_cstr(b));
    plat_scroll_end("log");
}

void view_reply(struct app *a, int i)
{
    char id[32];
    struct wbuf *b = &a->scratch;
    const struct conv_msg *m = &a->cur.msg[i];
    if (m->state == CONV_DONE) { /* the actions (regenerate, edit) come back: the whole list */
        view_messages(a);
        return;
    }
    wbuf_reset(b);
    body_html(b, m, i);
    snprintf(id, sizeof id, "m%d-body", i);
    plat_html(id, wbuf_cstr(b));
    wbuf_reset(b);
    stats_html(b, m);
    snprintf(id, sizeof id, "m%d-stats", i);
    plat_html(id, wbuf_cstr(b));
    plat_scroll_end("log");
}

void view_atts(struct app *a)
{
    struct wbuf *b = &a->scratch;
    wbuf_reset(b);
    for (int i = 0; i < a->n_atts; i++) {
        const struct app_att *t = &a->atts[i];
        wbuf_printf(b, "<div class=\"att%s\" data-att=\"%d\">", t->ready ? "" : " busy", t->att);
        if (t->ready) image_html(b, &t->im);
        else {
            wbuf_str(b, "<span class=\"thumb none\">");
            wbuf_html(b, t->im.name, strlen(t->im.name));
            wbuf_str(b, "…</span>");
        }
        wbuf_printf(b, "<button type=\"button\" class=\"x\" data-act=\"unattach\" data-arg=\"%d\" aria-label=\"Remove ",
                    t->att);
        wbuf_html(b, t->im.name, strlen(t->im.name));
        wbuf_str(b, "\">×</button></div>");
    }
    plat_html("atts", wbuf_cstr(b));
    plat_class("atts", "hidden", a->n_atts == 0);
}

void view_convs(struct app *a)
{
    struct wbuf *b = &a->scratch;
    if (a->page != APP_CHAT) return;
    wbuf_reset(b);
    if (!a->index.n) wbuf_str(b, "<li class=\"none\">No saved conversations yet.</li>");
    for (int i = 0; i < a->index.n; i++) {
        const struct conv_entry *e = &a->index.e[i];
        int cur = !strcmp(e->id, a->cur.id);
        wbuf_printf(b, "<li%s><button type=\"button\" class=\"open\" data-act=\"open\" data-arg=\"",
                    cur ? " class=\"cur\" aria-current=\"true\"" : "");
        wbuf_html(b, e->id, strlen(e->id));
        wbuf_str(b, "\">");
        wbuf_html(b, e->title[0] ? e->title : "(untitled)", strlen(e->title[0] ? e->title : "(untitled)"));
        wbuf_str(b, "</button><button type=\"button\" class=\"del\" data-act=\"del\" data-arg=\"");
        wbuf_html(b, e->id, strlen(e->id));
        wbuf_str(b, "\" aria-label=\"Delete this conversation\">×</button></li>");
    }
    plat_html("convs", wbuf_cstr(b));
}

void view_status(struct app *a)
{
    char text[300];
    const char *cls = "conn-wait";
    switch (a->conn) {
    case CONN_READY:
        snprintf(text, sizeof text, "Connected · %s", a->model);
        cls = "conn-ok";
        break;
    case CONN_OPEN:
    case CONN_CONNECTING:
        snprintf(text, sizeof text, a->retries ? "Reconnecting…" : "Connecting…");
        break;
    case CONN_RETRY:
        snprintf(text, sizeof text, "Disconnected · retrying in %.1f s", a->retry_ms / 1000.0);
        cls = "conn-bad";
        break;
    }
    plat_text("conn", text);
    plat_attr("conn", "class", cls);
    plat_attr("conn", "data-state", a->conn == CONN_READY ? "ready" : a->conn == CONN_RETRY ? "retry" : "connecting");
}

void view_busy(struct app *a)
{
    plat_class("", "busy", a->busy != BUSY_NONE);
}

void view_notice(struct app *a, const char *msg)
{
    (void)a;
    plat_text("notice", msg);
    plat_class("notice", "hidden", !msg[0]);
    if (msg[0]) plat_timer(T_NOTICE, 8000);
}

/* The kiosk's join link: the server's LAN URL, or this page's origin; as text and as a QR code (SVG, one
 * path of unit squares, a 4-module quiet zone). */
void view_qr(struct app *a)
{
    static struct qr q;
    struct wbuf *b = &a->scratch;
    const char *url = a->lan_url[0] ? a->lan_url : a->origin;
    plat_text("url", url);
    if (qr_encode((const uint8_t *)url, strlen(url), QR_ECL_M, -1, 1, &q)) {
        plat_html("qr", "");
        return;
    }
    wbuf_reset(b);
    wbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" shape-rendering=\"crispEdges\" "
                   "role=\"img\" aria-label=\"QR code of the address\"><rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>"
                   "<path fill=\"#000\" d=\"",
                q.size + 8, q.size + 8, q.size + 8, q.size + 8);
    for (int r = 0; r < q.size; r++)
        for (int c = 0; c < q.size; c++)
            if (q.m[r][c]) wbuf_printf(b, "M%d %dh1v1h-1z", c + 4, r + 4);
    wbuf_str(b, "\"/></svg>");
    plat_html("qr", wbuf_cstr(b));
}
