/* app — the client's state machine: the connection (connect, ready, reconnect with back-off), the chat
 * (compose with images, send, stream, stop, regenerate, edit the last message, new chat, stored
 * conversations), the kiosk (no history, idle reset, QR code) and the dashboard's subscription.
 *
 * It speaks docs/protocol.md through cJSON and asks the page for everything else through plat.h. What it
 * must not do: build HTML (app_view.c does, escaping every byte), or keep anything in JavaScript's hands
 * beyond the bytes of images in flight (the worker's patches, identified by attachment id). */
#include "app_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md.h"
#include "plat.h"

struct app app_g;

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* ---- storage ------------------------------------------------------------------------------------------- */

static void key_of(char *key, size_t cap, const char *id)
{
    snprintf(key, cap, "g4.c.%s", id);
}

/* Saves the current conversation and the index (chat page only; the kiosk keeps no history). When the
 * browser's storage is full, the oldest other conversations are dropped until it fits. */
static void save(struct app *a)
{
    char key[64], dropped[CONV_ID_MAX];
    if (a->page != APP_CHAT || !a->cur.n_msg) return;
    a->cur.updated = plat_now();
    a->cur.session = a->session;
    conv_retitle(&a->cur);
    char *json = conv_to_json(&a->cur);
    key_of(key, sizeof key, a->cur.id);
    while (plat_store_set(key, json) < 0) {
        int victim = a->index.n - 1;
        if (victim >= 0 && !strcmp(a->index.e[victim].id, a->cur.id)) victim--;
        if (victim < 0) {
            view_notice(a, "The browser's storage is full: this conversation is not saved.");
            break;
        }
        char vkey[64];
        key_of(vkey, sizeof vkey, a->index.e[victim].id);
        plat_store_del(vkey);
        conv_index_remove(&a->index, a->index.e[victim].id);
    }
    free(json);
    if (conv_index_touch(&a->index, &a->cur, dropped)) {
        key_of(key, sizeof key, dropped);
        plat_store_del(key);
    }
    json = conv_index_to_json(&a->index);
    plat_store_set("g4.index", json);
    free(json);
    view_convs(a);
}

/* A fresh, empty conversation (not stored until it has a message). */
static void new_conv(struct app *a)
{
    char id[CONV_ID_MAX];
    static int counter;
    snprintf(id, sizeof id, "c%.0f-%d", plat_now(), ++counter);
    conv_free(&a->cur);
    conv_init(&a->cur, id);
}

/* Loads conversation id into cur: 0, or -1 (cur untouched) when it is not stored or does not parse. */
static int load_conv(struct app *a, const char *id)
{
    char key[64], err[200];
    struct conv c;
    key_of(key, sizeof key, id);
    char *s = plat_store_get(key);
    if (!s) return -1;
    int rc = conv_from_json(s, strlen(s), &c, err);
    free(s);
    if (rc) {
        conv_free(&c);
        return -1;
    }
    /* attachment ids name patches in this page's worker only */
    for (int i = 0; i < c.n_msg; i++)
        for (int k = 0; k < c.msg[i].n_img; k++)
            if (c.session != a->session) c.msg[i].img[k].att = 0;
    conv_free(&a->cur);
    a->cur = c;
    return 0;
}

/* ---- composer ------------------------------------------------------------------------------------------- */

static void drop_atts(struct app *a, int forget)
{
    for (int i = 0; i < a->n_atts; i++) {
        if (forget) plat_forget(a->atts[i].att);
        free(a->atts[i].im.thumb);
    }
    a->n_atts = 0;
}

static struct app_att *find_att(struct app *a, int att)
{
    for (int i = 0; i < a->n_atts; i++)
        if (a->atts[i].att == att) return &a->atts[i];
    return NULL;
}

/* Is the image with attachment id att used by any message of the current conversation? */
static int att_in_use(const struct app *a, int att)
{
    for (int i = 0; i < a->cur.n_msg; i++)
        for (int k = 0; k < a->cur.msg[i].n_img; k++)
            if (a->cur.msg[i].img[k].att == att) return 1;
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------------------ */

/* Sends the chat request for cur (all messages before the reply); images already uploaded. */
static void send_chat(struct app *a, const uint32_t *ids)
{
    char *json = conv_request(&a->cur, a->reply, a->req_id, ids, a->max_tokens);
    if (plat_ws_send(json) < 0) {
        struct conv_msg *m = &a->cur.msg[a->reply];
        snprintf(m->finish, sizeof m->finish, "error");
        snprintf(m->error, sizeof m->error, "The connection closed before the request went out.");
        m->state = CONV_DONE;
        a->busy = BUSY_NONE;
        view_reply(a, a->reply);
        view_busy(a);
    } else {
        a->busy = BUSY_RUNNING;
    }
    free(json);
}

/* Starts the reply to cur's messages: adds the reply, uploads every image of the conversation this page
 * still has patches for (each upload serves one request), then sends the request (from app_uploaded). */
static void start_reply(struct app *a)
{
    int n_img = conv_count_images(&a->cur, a->cur.n_msg), k = 0, skip;
    struct conv_msg *m = conv_add(&a->cur, CONV_ASSISTANT);
    m->state = CONV_PENDING;
    a->reply = a->cur.n_msg - 1;
    snprintf(a->req_id, sizeof a->req_id, "r%d", ++a->req_n);
    a->t_sent = plat_now();
    a->t_first = 0;
    free(a->pending_ids);
    a->pending_ids = calloc((size_t)n_img + 1, sizeof *a->pending_ids);
    if (!a->pending_ids) abort();
    a->uploads_left = 0;
    /* the newest CONV_MAX_IMAGES images with patches go; older ones are left out */
    int usable = 0;
    for (int i = 0; i < a->reply; i++)
        for (int q = 0; q < a->cur.msg[i].n_img; q++) usable += a->cur.msg[i].img[q].att != 0;
    skip = usable > CONV_MAX_IMAGES ? usable - CONV_MAX_IMAGES : 0;
    for (int i = 0; i < a->reply; i++)
        for (int q = 0; q < a->cur.msg[i].n_img; q++, k++) {
            int att = a->cur.msg[i].img[q].att;
            if (!att || skip-- > 0) continue;
            a->pending_ids[k] = ++a->next_image_id;
            a->uploads_left++;
        }
    a->busy = BUSY_UPLOADING;
    view_messages(a);
    view_busy(a);
    k = 0;
    for (int i = 0; i < a->reply; i++)
        for (int q = 0; q < a->cur.msg[i].n_img; q++, k++)
            if (a->pending_ids[k]) plat_upload(a->cur.msg[i].img[q].att, a->pending_ids[k]);
    if (!a->uploads_left) send_chat(a, a->pending_ids);
}

void app_uploaded(int att, int ok)
{
    struct app *a = &app_g;
    (void)att;
    if (a->busy != BUSY_UPLOADING) return;
    if (!ok) {
        struct conv_msg *m = &a->cur.msg[a->reply];
        snprintf(m->finish, sizeof m->finish, "error");
        snprintf(m->error, sizeof m->error, "An image could not be sent (the connection closed).");
        m->state = CONV_DONE;
        a->busy = BUSY_NONE;
        a->uploads_left = 0;
        view_reply(a, a->reply);
        view_busy(a);
        save(a);
        return;
    }
    if (--a->uploads_left == 0) send_chat(a, a->pending_ids);
}

/* Ends the reply in flight locally (the socket closed, or the person left the conversation). */
static void abandon_reply(struct app *a, const char *why)
{
    if (a->busy == BUSY_NONE) return;
    struct conv_msg *m = &a->cur.msg[a->reply];
    snprintf(m->finish, sizeof m->finish, "%s", why ? "error" : "cancelled");
    if (why) snprintf(m->error, sizeof m->error, "%s", why);
    m->state = CONV_DONE;
    a->busy = BUSY_NONE;
    a->uploads_left = 0;
    view_reply(a, a->reply);
    view_busy(a);
    save(a);
}

/* ---- actions ------------------------------------------------------------------------------------------- */

static void do_send(struct app *a, const char *input)
{
    size_t n = strlen(input);
    while (n && (input[n - 1] == ' ' || input[n - 1] == '\n' || input[n - 1] == '\t')) n--;
    if (a->busy != BUSY_NONE) return;
    if (!n && !a->n_atts) return;
    for (int i = 0; i < a->n_atts; i++)
        if (!a->atts[i].ready) {
            view_notice(a, "An image is still being prepared; send again in a moment.");
            return;
        }
    if (a->conn != CONN_READY) {
        view_notice(a, "Not connected to the server yet: your message stays in the box.");
        return;
    }
    struct conv_msg *m = conv_add(&a->cur, CONV_USER);
    wbuf_add(&m->text, input, n);
    for (int i = 0; i < a->n_atts; i++) conv_add_image(m, &a->atts[i].im);
    drop_atts(a, 0);
    plat_value("input", "");
    view_atts(a);
    view_notice(a, "");
    start_reply(a);
    save(a);
}

static void do_stop(struct app *a)
{
    char msg[96];
    if (a->busy == BUSY_UPLOADING) {
        abandon_reply(a, NULL);
    } else if (a->busy == BUSY_RUNNING) {
        snprintf(msg, sizeof msg, "{\"type\":\"cancel\",\"id\":\"%s\"}", a->req_id);
        plat_ws_send(msg); /* the server answers done/cancelled */
    }
}

static void do_regenerate(struct app *a)
{
    if (a->busy != BUSY_NONE || a->conn != CONN_READY || a->cur.n_msg < 2) return;
    if (a->cur.msg[a->cur.n_msg - 1].role != CONV_ASSISTANT) return;
    conv_truncate(&a->cur, a->cur.n_msg - 1);
    start_reply(a);
    save(a);
}

/* Puts the last user message back into the composer (text and the images this page still has) and removes
 * it and its reply from the conversation. */
static void do_edit(struct app *a)
{
    int i = a->cur.n_msg - 1;
    if (a->busy != BUSY_NONE) return;
    while (i >= 0 && a->cur.msg[i].role != CONV_USER) i--;
    if (i < 0) return;
    struct conv_msg *m = &a->cur.msg[i];
    drop_atts(a, 0);
    for (int k = 0; k < m->n_img && a->n_atts < CONV_MAX_IMAGES; k++) {
        if (!m->img[k].att) continue;
        struct app_att *t = &a->atts[a->n_atts++];
        t->att = m->img[k].att;
        t->ready = 1;
        t->im = m->img[k];
        t->im.thumb = m->img[k].thumb;
        m->img[k].thumb = NULL; /* moved */
    }
    plat_value("input", wbuf_cstr(&m->text));
    conv_truncate(&a->cur, i);
    view_messages(a);
    view_atts(a);
    plat_focus("input");
    save(a);
}

static void do_new(struct app *a)
{
    abandon_reply(a, NULL);
    new_conv(a);
    drop_atts(a, 0);
    plat_value("input", "");
    view_messages(a);
    view_atts(a);
    view_convs(a);
    view_busy(a);
    plat_focus("input");
}

static void do_open(struct app *a, const char *id)
{
    if (!strcmp(id, a->cur.id)) return;
    abandon_reply(a, NULL);
    if (load_conv(a, id)) {
        view_notice(a, "That conversation could not be read from the browser's storage.");
        conv_index_remove(&a->index, id);
        view_convs(a);
        return;
    }
    view_messages(a);
    view_convs(a);
    view_busy(a);
    plat_class("", "show-convs", 0);
}

static void do_delete(struct app *a, const char *id)
{
    char key[64];
    key_of(key, sizeof key, id);
    plat_store_del(key);
    conv_index_remove(&a->index, id);
    char *json = conv_index_to_json(&a->index);
    plat_store_set("g4.index", json);
    free(json);
    if (!strcmp(id, a->cur.id)) {
        conv_truncate(&a->cur, 0);
        do_new(a);
    }
    view_convs(a);
}

static void do_copy(struct app *a, const char *arg)
{
    int msg = -1, k = -1;
    size_t start, len;
    if (sscanf(arg, "%d:%d", &msg, &k) != 2 || msg < 0 || msg >= a->cur.n_msg) return;
    const struct conv_msg *m = &a->cur.msg[msg];
    if (md_code_block(wbuf_cstr(&m->text), m->text.n, k, &start, &len)) return;
    char *s = malloc(len + 1);
    if (!s) abort();
    memcpy(s, wbuf_cstr(&m->text) + start, len);
    s[len] = 0;
    plat_clipboard(s);
    free(s);
    view_notice(a, "Code copied.");
}

static void set_theme(struct app *a, int dark)
{
    a->dark = dark;
    plat_class("", "dark", dark);
    plat_class("", "light", !dark);
    a->dash.dark = dark;
}

void app_action(const char *act, const char *arg, const char *input)
{
    struct app *a = &app_g;
    app_activity();
    if (!strcmp(act, "send")) do_send(a, input);
    else if (!strcmp(act, "stop")) do_stop(a);
    else if (!strcmp(act, "regen")) do_regenerate(a);
    else if (!strcmp(act, "edit")) do_edit(a);
    else if (!strcmp(act, "new")) do_new(a);
    else if (!strcmp(act, "open")) do_open(a, arg);
    else if (!strcmp(act, "del")) do_delete(a, arg);
    else if (!strcmp(act, "copy")) do_copy(a, arg);
    else if (!strcmp(act, "convs")) plat_class("", "show-convs", -1);
    else if (!strcmp(act, "maxtok") && a->page == APP_CHAT) {
        a->max_tokens = atoi(arg) > 0 ? atoi(arg) : 0;
        plat_store_set("g4.max_tokens", arg);
    }
    else if (!strcmp(act, "theme")) {
        set_theme(a, !a->dark);
        plat_store_set("g4.theme", a->dark ? "dark" : "light");
        if (a->page == APP_DASH) dash_render(&a->dash);
    } else if (!strcmp(act, "unattach")) {
        int att = atoi(arg);
        struct app_att *t = find_att(a, att);
        if (!t) return;
        if (!att_in_use(a, att)) plat_forget(att);
        free(t->im.thumb);
        *t = a->atts[--a->n_atts];
        view_atts(a);
    }
}

int app_key(const char *key, int shift, const char *input)
{
    struct app *a = &app_g;
    app_activity();
    if (!strcmp(key, "Enter") && !shift) {
        do_send(a, input);
        return 1;
    }
    if (!strcmp(key, "Escape") && a->busy != BUSY_NONE) {
        do_stop(a);
        return 1;
    }
    return 0;
}

/* ---- attachments --------------------------------------------------------------------------------------- */

/* Is the file's type one the decoder takes (PNG, JPEG, WebP)? Unknown types are tried (the decoder sniffs
 * the bytes); types the browser names and we know to be something else are refused here. */
static int type_ok(const char *mime)
{
    return !mime[0] || !strcmp(mime, "image/png") || !strcmp(mime, "image/jpeg") || !strcmp(mime, "image/webp") ||
           !strcmp(mime, "application/octet-stream");
}

int app_attach(const char *name, double bytes, const char *mime)
{
    struct app *a = &app_g;
    char msg[300];
    if (a->page == APP_DASH) return 0;
    if (a->n_atts >= CONV_MAX_IMAGES) {
        snprintf(msg, sizeof msg, "At most %d images per message.", CONV_MAX_IMAGES);
        view_notice(a, msg);
        return 0;
    }
    if (!type_ok(mime)) {
        snprintf(msg, sizeof msg, "%.120s is not a PNG, JPEG or WebP image (it is %.60s).", name, mime);
        view_notice(a, msg);
        return 0;
    }
    if (bytes > APP_MAX_FILE_BYTES) {
        snprintf(msg, sizeof msg, "%.120s is %.0f MB; images can be at most %.0f MB.", name, bytes / 1048576.0,
                 APP_MAX_FILE_BYTES / 1048576.0);
        view_notice(a, msg);
        return 0;
    }
    struct app_att *t = &a->atts[a->n_atts++];
    memset(t, 0, sizeof *t);
    t->att = ++a->next_att;
    snprintf(t->im.name, sizeof t->im.name, "%s", name);
    t->im.att = t->att;
    view_atts(a);
    return t->att;
}

int app_budget(void)
{
    return app_g.budget > 0 ? app_g.budget : 280;
}

void app_attach_done(int att, const char *err, int patches, int grid_w, int grid_h, int src_w, int src_h,
                     const char *thumb)
{
    struct app *a = &app_g;
    struct app_att *t = find_att(a, att);
    char msg[400];
    if (!t) { /* removed while the worker was busy */
        plat_forget(att);
        return;
    }
    if (err && err[0]) {
        snprintf(msg, sizeof msg, "%.100s: %.280s", t->im.name, err);
        view_notice(a, msg);
        *t = a->atts[--a->n_atts];
        view_atts(a);
        return;
    }
    t->ready = 1;
    t->im.patches = patches;
    t->im.grid_w = grid_w, t->im.grid_h = grid_h;
    t->im.src_w = src_w, t->im.src_h = src_h;
    free(t->im.thumb);
    t->im.thumb = NULL;
    if (thumb && !strncmp(thumb, "data:image/bmp;base64,", 22)) {
        t->im.thumb = malloc(strlen(thumb) + 1);
        if (!t->im.thumb) abort();
        strcpy(t->im.thumb, thumb);
    }
    view_atts(a);
}

/* ---- server messages ----------------------------------------------------------------------------------- */

/* ready. A server started with --kiosk makes every chat page the kiosk: a chat page (a bookmark of
 * /index.html, a tab left open while the server restarted with --kiosk) goes to /kiosk/ and never becomes
 * ready, so nothing is sent from it. The dashboard stays: it is the operator's page. */
static void on_ready(struct app *a, const cJSON *o)
{
    const char *model = str_of(o, "model"), *lan = str_of(o, "lan_url");
    const cJSON *demo = cJSON_GetObjectItemCaseSensitive(o, "demo");
    if (a->page == APP_CHAT && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "kiosk"))) {
        plat_navigate("/kiosk/"); /* the mount's folder: lws' redirect from /kiosk would drop the query */
        return;
    }
    snprintf(a->model, sizeof a->model, "%s", model ? model : "");
    a->demo = cJSON_IsTrue(demo);
    a->budget = (int)num_of(o, "max_soft_tokens", 280);
    a->idle_s = (int)num_of(o, "kiosk_idle_s", APP_DEFAULT_IDLE_S);
    if (a->idle_s < 1) a->idle_s = APP_DEFAULT_IDLE_S;
    snprintf(a->lan_url, sizeof a->lan_url, "%s", lan ? lan : "");
    a->conn = CONN_READY;
    a->retries = 0;
    view_status(a);
    plat_class("demo", "hidden", !a->demo);
    if (a->page == APP_DASH) plat_ws_send("{\"type\":\"subscribe\",\"topic\":\"metrics\"}");
    if (a->page == APP_KIOSK) {
        view_qr(a);
        app_activity();
    }
}

static struct conv_msg *reply_for(struct app *a, const cJSON *o)
{
    const char *id = str_of(o, "id");
    if (a->busy != BUSY_RUNNING || !id || strcmp(id, a->req_id)) return NULL;
    return &a->cur.msg[a->reply];
}

static void on_token(struct app *a, const cJSON *o)
{
    struct conv_msg *m = reply_for(a, o);
    const char *text = str_of(o, "text");
    if (!m || !text) return;
    if (m->state != CONV_STREAMING) {
        m->state = CONV_STREAMING;
        m->queued = 0;
        a->t_first = plat_now();
        m->ttft_ms = a->t_first - a->t_sent; /* until done brings the server's figure */
    }
    wbuf_str(&m->text, text);
    m->tokens = (int)num_of(o, "n", m->tokens + 1);
    view_reply(a, a->reply);
}

static void on_done(struct app *a, const cJSON *o)
{
    struct conv_msg *m = reply_for(a, o);
    const char *fin = str_of(o, "finish_reason");
    if (!m) return;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
    m->state = CONV_DONE;
    m->queued = 0;
    snprintf(m->finish, sizeof m->finish, "%s", fin ? fin : "stop");
    m->ttft_ms = num_of(o, "ttft_ms", m->ttft_ms);
    m->tps = num_of(o, "tokens_per_s", 0);
    m->tokens = (int)num_of(usage, "completion_tokens", m->tokens);
    a->busy = BUSY_NONE;
    view_reply(a, a->reply);
    view_busy(a);
    save(a);
    app_activity();
}

static void on_error(struct app *a, const cJSON *o)
{
    const char *msg = str_of(o, "message"), *code = str_of(o, "code");
    struct conv_msg *m = reply_for(a, o);
    char text[300];
    snprintf(text, sizeof text, "%s%s%s", msg ? msg : "error", code ? " — " : "", code ? code : "");
    if (!m) {
        view_notice(a, text);
        return;
    }
    m->state = CONV_DONE;
    snprintf(m->finish, sizeof m->finish, "error");
    snprintf(m->error, sizeof m->error, "%.199s", text);
    a->busy = BUSY_NONE;
    view_reply(a, a->reply);
    view_busy(a);
    save(a);
}

static void on_metrics(struct app *a, const cJSON *o)
{
    struct dash_snap s = {0};
    s.time = num_of(o, "time", 0);
    s.running = num_of(o, "running", 0);
    s.waiting = num_of(o, "waiting", 0);
    s.streams_max = num_of(o, "streams_max", 0);
    s.prefill_tps = num_of(o, "prefill_tokens_per_s", 0);
    s.decode_tps = num_of(o, "decode_tokens_per_s", 0);
    s.kv_usage = num_of(o, "kv_usage", 0);
    s.requests = num_of(o, "requests", 0);
    s.generated_tokens = num_of(o, "generated_tokens", 0);
    s.ttft_p50 = num_of(o, "ttft_ms_p50", 0);
    s.ttft_p95 = num_of(o, "ttft_ms_p95", 0);
    s.drafts_proposed = num_of(o, "drafts_proposed", 0);
    s.drafts_accepted = num_of(o, "drafts_accepted", 0);
    s.cache_hits = num_of(o, "prompt_cache_hits", 0);
    s.memory_bytes = num_of(o, "engine_memory_bytes", num_of(o, "gpu_memory_bytes", 0));
    s.connections = num_of(o, "connections", 0);
    dash_add(&a->dash, &s);
    dash_render(&a->dash);
}

void app_ws_message(const char *text, size_t n)
{
    struct app *a = &app_g;
    cJSON *o = cJSON_ParseWithLength(text, n);
    const char *type = str_of(o, "type");
    if (!type) {
        cJSON_Delete(o);
        return;
    }
    if (!strcmp(type, "ready")) on_ready(a, o);
    else if (!strcmp(type, "token")) on_token(a, o);
    else if (!strcmp(type, "done")) on_done(a, o);
    else if (!strcmp(type, "error")) on_error(a, o);
    else if (!strcmp(type, "metrics")) on_metrics(a, o);
    else if (!strcmp(type, "queued")) {
        struct conv_msg *m = reply_for(a, o);
        if (m) {
            m->queued = (int)num_of(o, "position", 1);
            view_reply(a, a->reply);
        }
    }
    cJSON_Delete(o);
}

/* ---- connection ---------------------------------------------------------------------------------------- */

void app_ws_opened(void)
{
    app_g.conn = CONN_OPEN; /* ready comes next */
    view_status(&app_g);
}

void app_ws_closed(void)
{
    struct app *a = &app_g;
    if (a->conn == CONN_RETRY) return;
    abandon_reply(a, "The connection to the server was lost.");
    a->conn = CONN_RETRY;
    a->retry_ms = 500 << (a->retries < 4 ? a->retries : 4); /* 0.5, 1, 2, 4, 8 s */
    a->retries++;
    plat_timer(T_RECONNECT, a->retry_ms);
    view_status(a);
}

void app_activity(void)
{
    struct app *a = &app_g;
    if (a->page == APP_KIOSK) plat_timer(T_IDLE, (a->idle_s > 0 ? a->idle_s : APP_DEFAULT_IDLE_S) * 1000);
}

/* The kiosk's idle reset: a fresh conversation, an empty composer. A reply still running counts as
 * activity. */
static void kiosk_reset(struct app *a)
{
    if (a->busy != BUSY_NONE) {
        app_activity();
        return;
    }
    for (int i = 0; i < a->cur.n_msg; i++)
        for (int k = 0; k < a->cur.msg[i].n_img; k++) plat_forget(a->cur.msg[i].img[k].att);
    drop_atts(a, 1);
    new_conv(a);
    plat_value("input", "");
    view_messages(a);
    view_atts(a);
    view_notice(a, "");
}

void app_timer(int id)
{
    struct app *a = &app_g;
    if (id == T_RECONNECT && a->conn == CONN_RETRY) {
        a->conn = CONN_CONNECTING;
        view_status(a);
        plat_ws_open();
    } else if (id == T_IDLE && a->page == APP_KIOSK) {
        kiosk_reset(a);
    } else if (id == T_NOTICE) {
        plat_text("notice", "");
        plat_class("notice", "hidden", 1);
    }
}

void app_init(enum app_page page, int dark, const char *origin)
{
    struct app *a = &app_g;
    char *s;
    /* a second call starts over (the unit tests' page reloads): what the first one held is freed */
    conv_free(&a->cur);
    drop_atts(a, 0);
    free(a->pending_ids);
    wbuf_free(&a->scratch);
    memset(a, 0, sizeof *a);
    a->page = page;
    a->session = plat_now();
    a->idle_s = APP_DEFAULT_IDLE_S;
    snprintf(a->origin, sizeof a->origin, "%s", origin);
    s = plat_store_get("g4.theme");
    if (s) dark = !strcmp(s, "dark");
    free(s);
    dash_init(&a->dash, dark);
    set_theme(a, dark);
    new_conv(a);
    if (page == APP_CHAT) {
        s = plat_store_get("g4.max_tokens");
        if (s && atoi(s) > 0) {
            a->max_tokens = atoi(s);
            plat_value("maxtok", s);
        }
        free(s);
        s = plat_store_get("g4.index");
        if (s) conv_index_from_json(s, strlen(s), &a->index);
        free(s);
        for (int i = 0; i < a->index.n; i++)
            if (!load_conv(a, a->index.e[i].id)) break;
    }
    if (page != APP_DASH) {
        view_messages(a);
        view_atts(a);
        view_convs(a);
        view_busy(a);
    }
    a->conn = CONN_CONNECTING;
    view_status(a);
    plat_ws_open();
    if (page == APP_KIOSK) view_qr(a);
}
