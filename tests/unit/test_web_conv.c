/* test_web_conv — the browser's conversation store (webui/conv.c): JSON round trips of awkward text and
 * images, replies that were running when the page went away, bad stored JSON, the index (most recent first,
 * the oldest dropped past CONV_MAX_STORED), titles cut at character boundaries, and the chat request built
 * from a conversation (image parts by upload id, images left out, empty replies skipped). */
#include <cJSON.h>

#include "conv.h"
#include "test.h"

static void make(struct conv *c)
{
    conv_init(c, "c1");
    struct conv_msg *u = conv_add(c, CONV_USER);
    wbuf_str(&u->text, "Quotes \" backslash \\ newline\n tab\t nul-free ünïcødé ✓ </script>");
    struct conv_image im = {.att = 4, .thumb = "data:image/bmp;base64,Qk0=", .src_w = 640, .src_h = 480,
                            .grid_w = 19, .grid_h = 14, .patches = 266};
    snprintf(im.name, sizeof im.name, "cat \"1\".png");
    EXPECT(conv_add_image(u, &im) == 0);
    struct conv_msg *b = conv_add(c, CONV_ASSISTANT);
    wbuf_str(&b->text, "Reply *with* markdown");
    b->state = CONV_DONE;
    snprintf(b->finish, sizeof b->finish, "stop");
    b->ttft_ms = 21, b->tps = 180.5, b->tokens = 57;
    c->updated = 1234567, c->session = 99;
}

static void test_round_trip(void)
{
    struct conv c, d;
    char err[200];
    make(&c);
    char *json = conv_to_json(&c);
    EXPECT(conv_from_json(json, strlen(json), &d, err) == 0);
    EXPECT(!strcmp(d.id, "c1") && d.n_msg == 2 && d.updated == 1234567 && d.session == 99);
    EXPECT(!strcmp(wbuf_cstr(&d.msg[0].text), wbuf_cstr(&c.msg[0].text)));
    EXPECT(d.msg[0].n_img == 1 && d.msg[0].img[0].att == 4 && !strcmp(d.msg[0].img[0].name, "cat \"1\".png"));
    EXPECT(!strcmp(d.msg[0].img[0].thumb, "data:image/bmp;base64,Qk0=") && d.msg[0].img[0].patches == 266);
    EXPECT(d.msg[0].img[0].thumb != c.msg[0].img[0].thumb); /* owned copies */
    EXPECT(d.msg[1].role == CONV_ASSISTANT && !strcmp(d.msg[1].finish, "stop") && d.msg[1].tokens == 57 &&
           d.msg[1].tps == 180.5 && d.msg[1].ttft_ms == 21);
    free(json);
    /* a reply still running when saved comes back failed */
    c.msg[1].state = CONV_STREAMING;
    json = conv_to_json(&c);
    conv_free(&d);
    EXPECT(conv_from_json(json, strlen(json), &d, err) == 0 && !strcmp(d.msg[1].finish, "error"));
    free(json);
    conv_free(&d);
    conv_free(&c);
}

static void test_bad_json(void)
{
    struct conv d;
    char err[200] = "";
    EXPECT(conv_from_json("{\"id\":", 6, &d, err) == -1 && err[0]);
    conv_free(&d);
    EXPECT(conv_from_json("[1,2]", 5, &d, err) == -1);
    conv_free(&d);
    const char *odd = "{\"id\":\"x\",\"messages\":[{\"role\":\"user\"},7,{\"role\":\"user\",\"text\":\"ok\"}]}";
    EXPECT(conv_from_json(odd, strlen(odd), &d, err) == 0);
    EXPECT(d.n_msg == 1 && !strcmp(wbuf_cstr(&d.msg[0].text), "ok")); /* malformed entries skipped */
    conv_free(&d);
}

static void test_titles(void)
{
    struct conv c;
    conv_init(&c, "t");
    struct conv_msg *u = conv_add(&c, CONV_USER);
    /* 30 three-byte characters: the 64-byte title must end on a character boundary */
    for (int i = 0; i < 30; i++) wbuf_str(&u->text, "✓");
    wbuf_str(&u->text, "\nsecond line");
    conv_retitle(&c);
    EXPECT(strlen(c.title) == 63 && !strstr(c.title, "second"));
    EXPECT(((unsigned char)c.title[60] & 0xc0) != 0x80); /* 21 whole characters */
    conv_truncate(&c, 0);
    u = conv_add(&c, CONV_USER);
    struct conv_image im = {0};
    conv_add_image(u, &im);
    conv_retitle(&c);
    EXPECT(!strcmp(c.title, "Image"));
    conv_free(&c);
}

static void test_index(void)
{
    struct conv_index ix = {0}, back;
    struct conv c;
    char dropped[CONV_ID_MAX], id[16];
    const char *gone = NULL;
    for (int i = 0; i <= CONV_MAX_STORED; i++) {
        snprintf(id, sizeof id, "c%d", i);
        conv_init(&c, id);
        snprintf(c.title, sizeof c.title, "title %d", i);
        gone = conv_index_touch(&ix, &c, dropped);
        conv_free(&c);
        if (i < CONV_MAX_STORED) EXPECT(gone == NULL);
    }
    EXPECT(gone && !strcmp(gone, "c0") && ix.n == CONV_MAX_STORED && !strcmp(ix.e[0].id, "c50"));
    conv_init(&c, "c10");
    EXPECT(conv_index_touch(&ix, &c, dropped) == NULL && !strcmp(ix.e[0].id, "c10") && ix.n == CONV_MAX_STORED);
    conv_free(&c);
    conv_index_remove(&ix, "c20");
    EXPECT(ix.n == CONV_MAX_STORED - 1);
    char *json = conv_index_to_json(&ix);
    EXPECT(conv_index_from_json(json, strlen(json), &back) == 0 && back.n == ix.n && !strcmp(back.e[1].id, "c50") &&
           !strcmp(back.e[1].title, "title 50"));
    free(json);
    EXPECT(conv_index_from_json("{}", 2, &back) == -1 && back.n == 0);
}

static void test_request(void)
{
    struct conv c;
    make(&c);
    struct conv_msg *u2 = conv_add(&c, CONV_USER);
    wbuf_str(&u2->text, "and this?");
    struct conv_image im = {.att = 5};
    conv_add_image(u2, &im);
    conv_add_image(u2, &im);
    conv_add(&c, CONV_ASSISTANT); /* the reply being made: not part of the request */
    EXPECT(conv_count_images(&c, 3) == 3);
    uint32_t ids[3] = {0, 11, 12}; /* the first image is left out (no patches on this page) */
    char *s = conv_request(&c, 3, "r7", ids, 64);
    cJSON *o = cJSON_Parse(s), *msgs = cJSON_GetObjectItem(o, "messages");
    EXPECT(!strcmp(cJSON_GetObjectItem(o, "type")->valuestring, "chat") && !strcmp(cJSON_GetObjectItem(o, "id")->valuestring, "r7"));
    EXPECT(cJSON_GetObjectItem(o, "max_tokens")->valueint == 64);
    EXPECT(cJSON_GetArraySize(msgs) == 3);
    cJSON *p0 = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content");
    EXPECT(cJSON_GetArraySize(p0) == 1 && !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(p0, 0), "text")->valuestring,
                                                wbuf_cstr(&c.msg[0].text)));
    EXPECT(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content")->valuestring, "Reply *with* markdown"));
    cJSON *p2 = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2), "content");
    EXPECT(cJSON_GetArraySize(p2) == 3 && cJSON_GetObjectItem(cJSON_GetArrayItem(p2, 0), "image_id")->valueint == 11 &&
           cJSON_GetObjectItem(cJSON_GetArrayItem(p2, 1), "image_id")->valueint == 12 &&
           !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(p2, 2), "type")->valuestring, "text"));
    cJSON_Delete(o);
    free(s);
    /* an empty reply (stopped before its first token) is left out; no max_tokens means the server's */
    wbuf_reset(&c.msg[1].text);
    s = conv_request(&c, 3, "r8", NULL, 0);
    o = cJSON_Parse(s);
    EXPECT(cJSON_GetArraySize(cJSON_GetObjectItem(o, "messages")) == 2 && !cJSON_GetObjectItem(o, "max_tokens"));
    cJSON_Delete(o);
    free(s);
    conv_free(&c);
}

int main(void)
{
    RUN_TEST(test_round_trip);
    RUN_TEST(test_bad_json);
    RUN_TEST(test_titles);
    RUN_TEST(test_index);
    RUN_TEST(test_request);
    return test_report();
}
