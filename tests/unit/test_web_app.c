/* test_web_app — the client's state machine (webui/app.c, app_view.c) driven through app.h as the
 * JavaScript glue drives it, with a recording platform (web_fake_plat.h): connect and ready, send, streamed
 * tokens (escaped), done with statistics, stop, regenerate, edit, storage across a reload, reconnect,
 * attachments (refusals, upload before the request), the kiosk's idle reset, a --kiosk server taking the
 * chat page, and the dashboard's subscription. */
#include <cJSON.h>

#include "app.h"
#include "test.h"
#include "web_fake_plat.h"

#define READY "{\"type\":\"ready\",\"protocol\":1,\"model\":\"tiny\",\"context\":1024,\"max_soft_tokens\":280,\"demo\":true,\"kiosk_idle_s\":5}"

static void ws_msg(const char *s) { app_ws_message(s, strlen(s)); }

/* Starts a page connected and ready. */
static void boot(enum app_page page, int keep_store)
{
    fake_reset(keep_store);
    app_init(page, 0, "http://127.0.0.1:8080");
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(READY);
}

/* The last sent frame as JSON (caller deletes). */
static cJSON *last_json(void)
{
    return cJSON_Parse(fake_last_sent());
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void token(const char *id, const char *text, int n)
{
    char buf[512];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "token");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "text", text);
    cJSON_AddNumberToObject(o, "n", n);
    cJSON_PrintPreallocated(o, buf, sizeof buf, 0);
    cJSON_Delete(o);
    ws_msg(buf);
}

static void done(const char *id, const char *finish, int tokens)
{
    char buf[512];
    snprintf(buf, sizeof buf, "{\"type\":\"done\",\"id\":\"%s\",\"finish_reason\":\"%s\",\"usage\":{\"prompt_tokens\":9,"
             "\"completion_tokens\":%d},\"ttft_ms\":12.4,\"tokens_per_s\":99.5,\"seed\":3}", id, finish, tokens);
    ws_msg(buf);
}

static void test_connect_and_ready(void)
{
    fake_reset(0);
    app_init(APP_CHAT, 0, "http://x");
    EXPECT(fake.ws_opens == 1);
    EXPECT_STR_HAS(fake_get(fake.el, "conn"), "Connecting");
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(READY);
    EXPECT_STR_HAS(fake_get(fake.el, "conn"), "Connected · tiny");
    EXPECT(!fake_has_class("demo", "hidden"));
    EXPECT(app_budget() == 280);
}

static void test_send_stream_done(void)
{
    boot(APP_CHAT, 0);
    app_action("send", "", "Hi <b>there</b>\n");
    cJSON *o = last_json();
    EXPECT(!strcmp(jstr(o, "type"), "chat") && !strcmp(jstr(o, "id"), "r1"));
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "messages"), 0);
    EXPECT(!strcmp(jstr(m, "role"), "user"));
    EXPECT(!strcmp(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 0), "text"), "Hi <b>there</b>"));
    cJSON_Delete(o);
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "Hi &lt;b&gt;there&lt;/b&gt;");
    EXPECT(fake_has_class("", "busy"));
    EXPECT(!strcmp(fake_get(fake.el, "input#value"), ""));
    token("r1", "Hello <script>x</script>", 1);
    token("other", "not ours", 1);
    token("r1", " **world**", 2);
    const char *body = fake_get(fake.el, "m1-body");
    EXPECT_STR_HAS(body, "Hello &lt;script&gt;x&lt;/script&gt; <strong>world</strong>");
    EXPECT(!strstr(body, "not ours"));
    EXPECT_STR_HAS(fake_get(fake.el, "m1-stats"), "2 tokens");
    done("r1", "stop", 2);
    EXPECT(!fake_has_class("", "busy"));
    const char *log = fake_get(fake.el, "log");
    EXPECT_STR_HAS(log, "TTFT 12 ms");
    EXPECT_STR_HAS(log, "99.5 tok/s");
    EXPECT_STR_HAS(log, "data-act=\"regen\"");
    EXPECT_STR_HAS(log, "data-act=\"edit\"");
    EXPECT_STR_HAS(fake_get(fake.store, "g4.index"), "\"title\":\"Hi <b>there</b>\"");
    EXPECT_STR_HAS(fake_get(fake.el, "convs"), "Hi &lt;b&gt;there&lt;/b&gt;");
}

static void test_stop_regenerate_edit(void)
{
    boot(APP_CHAT, 0);
    app_action("send", "", "first");
    token("r1", "one", 1);
    done("r1", "stop", 1);
    app_action("send", "", "second");
    token("r2", "two", 1);
    EXPECT(app_key("Escape", 0, "") == 1);
    cJSON *o = last_json();
    EXPECT(!strcmp(jstr(o, "type"), "cancel") && !strcmp(jstr(o, "id"), "r2"));
    cJSON_Delete(o);
    done("r2", "cancelled", 1);
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "stopped");
    app_action("regen", "", "");
    o = last_json();
    const cJSON *msgs = cJSON_GetObjectItem(o, "messages");
    EXPECT(!strcmp(jstr(o, "id"), "r3") && cJSON_GetArraySize(msgs) == 3);
    EXPECT(!strcmp(jstr(cJSON_GetArrayItem(msgs, 1), "content"), "one"));
    cJSON_Delete(o);
    token("r3", "three", 1);
    done("r3", "stop", 1);
    EXPECT(!strstr(fake_get(fake.el, "log"), "two"));
    app_action("edit", "", "");
    EXPECT(!strcmp(fake_get(fake.el, "input#value"), "second"));
    EXPECT(!strstr(fake_get(fake.el, "log"), "three") && strstr(fake_get(fake.el, "log"), "one"));
    EXPECT(app_key("Enter", 1, "second, edited") == 0); /* shift+Enter: a new line, not a send */
    EXPECT(app_key("Enter", 0, "second, edited") == 1);
    o = last_json();
    msgs = cJSON_GetObjectItem(o, "messages");
    EXPECT(cJSON_GetArraySize(msgs) == 3 &&
           !strcmp(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2), "content"), 0), "text"), "second, edited"));
    cJSON_Delete(o);
}

static void test_reload_keeps_conversation(void)
{
    boot(APP_CHAT, 0);
    app_action("maxtok", "64", "");
    app_action("send", "", "remember me");
    token("r1", "I will", 2);
    done("r1", "length", 2);
    boot(APP_CHAT, 1); /* a reload: the page starts again over the same storage */
    const char *log = fake_get(fake.el, "log");
    EXPECT_STR_HAS(log, "remember me");
    EXPECT_STR_HAS(log, "I will");
    EXPECT_STR_HAS(log, "length limit");
    EXPECT(!strcmp(fake_get(fake.el, "maxtok#value"), "64"));
    app_action("send", "", "again");
    cJSON *o = last_json();
    EXPECT(cJSON_GetObjectItem(o, "max_tokens") && cJSON_GetObjectItem(o, "max_tokens")->valueint == 64);
    EXPECT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "messages")) == 3);
    cJSON_Delete(o);
    /* a reply that was running when the page went away comes back as failed, not as running */
    boot(APP_CHAT, 1);
    EXPECT(!fake_has_class("", "busy"));
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "failed");
    app_action("new", "", "");
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "Start a conversation");
}

static void test_reconnect(void)
{
    boot(APP_CHAT, 0);
    app_action("send", "", "q");
    token("r1", "partial", 1);
    fake.ws_open = 0;
    app_ws_closed();
    EXPECT(fake.timers[1] == 500);
    EXPECT_STR_HAS(fake_get(fake.el, "conn"), "Disconnected");
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "connection to the server was lost");
    EXPECT(!fake_has_class("", "busy"));
    app_action("send", "", "while offline");
    EXPECT_STR_HAS(fake_get(fake.el, "notice"), "Not connected");
    app_timer(1);
    EXPECT(fake.ws_opens == 2);
    app_ws_closed(); /* the retry failed: a longer wait */
    EXPECT(fake.timers[1] == 1000);
    app_timer(1);
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(READY);
    EXPECT_STR_HAS(fake_get(fake.el, "conn"), "Connected");
}

static void test_attachments(void)
{
    boot(APP_CHAT, 0);
    EXPECT(app_attach("anim.gif", 100, "image/gif") == 0);
    EXPECT_STR_HAS(fake_get(fake.el, "notice"), "anim.gif is not a PNG, JPEG or WebP image");
    EXPECT(app_attach("huge.png", 100e6, "image/png") == 0);
    EXPECT_STR_HAS(fake_get(fake.el, "notice"), "huge.png is 95 MB; images can be at most 64 MB");
    int a = app_attach("cat <1>.png", 1000, "image/png"), b = app_attach("dog.jpg", 1000, "image/jpeg");
    EXPECT(a == 1 && b == 2);
    app_attach_done(b, "not a PNG, JPEG or WebP file", 0, 0, 0, 0, 0, "");
    EXPECT_STR_HAS(fake_get(fake.el, "notice"), "dog.jpg: not a PNG");
    app_action("send", "", "look");
    EXPECT_STR_HAS(fake_get(fake.el, "notice"), "still being prepared");
    app_attach_done(a, "", 6, 3, 2, 150, 100, "data:image/bmp;base64,Qk0=");
    const char *atts = fake_get(fake.el, "atts");
    EXPECT_STR_HAS(atts, "src=\"data:image/bmp;base64,Qk0=\"");
    EXPECT_STR_HAS(atts, "cat &lt;1&gt;.png — 150×100, 6 patches (3×2)");
    int n_sent = fake.n_sent;
    app_action("send", "", "look");
    EXPECT(fake.n_uploads == 1 && fake.uploads[0][0] == a && fake.n_sent == n_sent); /* frames first */
    app_uploaded(a, 1);
    cJSON *o = last_json();
    const cJSON *parts = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "messages"), 0), "content");
    const cJSON *img = cJSON_GetArrayItem(parts, 0);
    EXPECT(!strcmp(jstr(img, "type"), "image") && cJSON_GetObjectItem(img, "image_id")->valueint == fake.uploads[0][1]);
    EXPECT(!strcmp(jstr(cJSON_GetArrayItem(parts, 1), "text"), "look"));
    cJSON_Delete(o);
    done("r1", "stop", 0);
    app_action("send", "", "again"); /* the image goes again, under a new id */
    EXPECT(fake.n_uploads == 2 && fake.uploads[1][0] == a && fake.uploads[1][1] != fake.uploads[0][1]);
    /* removal before sending */
    int c = app_attach("x.webp", 10, "image/webp");
    app_action("unattach", "3", "");
    EXPECT(c == 3 && !strstr(fake_get(fake.el, "atts"), "x.webp") && fake.forgets == 1);
}

static void test_kiosk_idle_reset(void)
{
    boot(APP_KIOSK, 0);
    EXPECT(fake.timers[2] == 5000); /* kiosk_idle_s from ready */
    EXPECT(!strcmp(fake_get(fake.el, "url"), "http://127.0.0.1:8080"));
    EXPECT_STR_HAS(fake_get(fake.el, "qr"), "<svg");
    app_action("send", "", "hello kiosk");
    app_timer(2); /* idle while the reply runs: it waits */
    EXPECT_STR_HAS(fake_get(fake.el, "log"), "hello kiosk");
    done("r1", "stop", 0);
    app_timer(2);
    EXPECT(!strstr(fake_get(fake.el, "log"), "hello kiosk"));
    EXPECT(plat_store_get("g4.index") == NULL); /* no history */
    ws_msg("{\"type\":\"ready\",\"model\":\"m\",\"lan_url\":\"http://192.168.5.5:8080/\"}");
    EXPECT(!strcmp(fake_get(fake.el, "url"), "http://192.168.5.5:8080/"));
}

/* ready.kiosk (g4 serve --kiosk): the chat page goes to the kiosk and sends nothing; the kiosk and the
 * dashboard stay where they are. */
static void test_kiosk_server_takes_the_chat_page(void)
{
    static const char ready_kiosk[] = "{\"type\":\"ready\",\"model\":\"m\",\"kiosk\":true,\"kiosk_idle_s\":5}";
    fake_reset(0);
    app_init(APP_CHAT, 0, "http://x");
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(ready_kiosk);
    EXPECT(!strcmp(fake.navigated, "/kiosk/"));
    EXPECT(!strstr(fake_get(fake.el, "conn"), "Connected"));
    app_action("send", "", "hello");
    EXPECT(fake.n_sent == 0);
    boot(APP_CHAT, 0); /* kiosk false: the chat page stays */
    EXPECT(!fake.navigated[0]);
    fake_reset(0);
    app_init(APP_KIOSK, 0, "http://x");
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(ready_kiosk);
    EXPECT(!fake.navigated[0] && fake.timers[2] == 5000);
    fake_reset(0);
    app_init(APP_DASH, 0, "http://x");
    fake.ws_open = 1;
    app_ws_opened();
    ws_msg(ready_kiosk);
    EXPECT(!fake.navigated[0]);
    EXPECT_STR_HAS(fake_last_sent(), "\"type\":\"subscribe\"");
}

static void test_dashboard_subscribes_and_draws(void)
{
    boot(APP_DASH, 0);
    EXPECT_STR_HAS(fake_last_sent(), "\"type\":\"subscribe\",\"topic\":\"metrics\"");
    ws_msg("{\"type\":\"metrics\",\"time\":1.0,\"running\":1,\"waiting\":2,\"streams_max\":16,\"decode_tokens_per_s\":55.5,"
           "\"prefill_tokens_per_s\":0,\"kv_usage\":0.25,\"requests\":4,\"ttft_ms_p50\":20,\"ttft_ms_p95\":40,"
           "\"engine_memory_bytes\":2500000000}");
    EXPECT(fake.canvases == 5);
    EXPECT(!strcmp(fake_get(fake.el, "v-decode"), "55.5"));
    EXPECT(!strcmp(fake_get(fake.el, "v-waiting"), "2"));
    EXPECT(!strcmp(fake_get(fake.el, "v-kv"), "25.0 %"));
    EXPECT(!strcmp(fake_get(fake.el, "v-mem"), "2.50 GB"));
    EXPECT(!strcmp(fake_get(fake.el, "v-draft"), "—"));
}

int main(void)
{
    RUN_TEST(test_connect_and_ready);
    RUN_TEST(test_send_stream_done);
    RUN_TEST(test_stop_regenerate_edit);
    RUN_TEST(test_reload_keeps_conversation);
    RUN_TEST(test_reconnect);
    RUN_TEST(test_attachments);
    RUN_TEST(test_kiosk_idle_reset);
    RUN_TEST(test_kiosk_server_takes_the_chat_page);
    RUN_TEST(test_dashboard_subscribes_and_draws);
    return test_report();
}
