/* test_proto — the server's edge: UTF-8 validation, JSON framing, chat request parsing into structs (types,
 * ranges, defaults, images), WebSocket messages, and data: URI / base64 decoding. Expected values are worked
 * out by hand from RFC 3629 (UTF-8), RFC 4648 (base64) and docs/protocol.md. */
#include "server/proto.h"
#include "server/srv.h"
#include "test.h"

static struct proto_defaults defaults(void)
{
    struct proto_defaults d;
    memset(&d, 0, sizeof d);
    samp_params_gemma4(&d.params);
    d.vocab = 262144;
    d.max_soft_tokens = 280;
    return d;
}

static void test_utf8(void)
{
    size_t at = 99;
    EXPECT(proto_utf8_valid("plain ascii", 11, &at));
    EXPECT(proto_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, &at)); /* é € 😀 */
    EXPECT(!proto_utf8_valid("caf\xe9", 4, &at) && at == 3);                        /* Latin-1 é */
    EXPECT(!proto_utf8_valid("\xc0\xaf", 2, &at) && at == 0);                        /* overlong '/' */
    EXPECT(!proto_utf8_valid("\xe0\x80\xaf", 3, &at) && at == 0);                    /* overlong, 3 bytes */
    EXPECT(!proto_utf8_valid("a\xed\xa0\x80", 4, &at) && at == 1);                   /* surrogate U+D800 */
    EXPECT(!proto_utf8_valid("\xf4\x90\x80\x80", 4, &at) && at == 0);                /* U+110000 */
    EXPECT(!proto_utf8_valid("ab\xe2\x82", 4, &at) && at == 2);                      /* truncated € */
    EXPECT(!proto_utf8_valid("\x80", 1, &at) && at == 0);                            /* lone continuation */
    EXPECT(proto_utf8_valid("\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7, &at));                /* U+FFFF, U+10FFFF */
}

static void test_json_framing(void)
{
    struct proto_err e;
    cJSON *j = proto_parse_json("{\"a\":1}  \n", 10, &e);
    EXPECT(j != NULL);
    cJSON_Delete(j);
    EXPECT(!proto_parse_json("{\"a\":1} x", 9, &e) && e.kind == PROTO_E_JSON);
    EXPECT(!proto_parse_json("[1]", 3, &e) && e.kind == PROTO_E_JSON);
    EXPECT(!proto_parse_json("{\"a\":", 5, &e) && e.kind == PROTO_E_JSON);
    EXPECT(!proto_parse_json("{\"a\":\"\xff\"}", 9, &e) && e.kind == PROTO_E_UTF8);
    EXPECT(!proto_parse_json("{\"a\":1}\0{", 9, &e) && e.kind == PROTO_E_JSON); /* a NUL is not whitespace */
}

/* Parses body as an OpenAI request; returns 0 or -1, with e. */
static int parse_openai(const char *body, struct proto_chat *c, struct proto_err *e)
{
    struct proto_defaults d = defaults();
    cJSON *j = proto_parse_json(body, strlen(body), e);
    int rc;
    if (!j) return -1;
    rc = proto_chat_parse(j, PROTO_OPENAI, &d, c, e);
    cJSON_Delete(j);
    return rc;
}

static void test_chat_fields(void)
{
    struct proto_chat c;
    struct proto_err e;
    const char *msgs = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    char body[1024];
    snprintf(body, sizeof body, "{%s}", msgs);
    EXPECT(parse_openai(body, &c, &e) == 0);
    EXPECT(c.params.temperature == 1.0f && c.params.top_k == 64 && c.params.n_stop_ids == 3 && !c.has_seed &&
           !c.has_max_tokens && !c.stream); /* the model's defaults */
    proto_chat_free(&c);
    snprintf(body, sizeof body,
             "{%s,\"temperature\":0,\"top_p\":0.5,\"top_k\":5,\"min_p\":0.1,\"seed\":12345678901,\"max_tokens\":7,"
             "\"max_completion_tokens\":9,\"stop\":\"END\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
             "\"thinking\":true,\"model\":\"whatever\",\"user\":\"ignored\"}",
             msgs);
    EXPECT(parse_openai(body, &c, &e) == 0);
    EXPECT(c.params.temperature == 0 && c.params.top_p == 0.5f && c.params.top_k == 5 && c.params.min_p == 0.1f);
    EXPECT(c.params.seed == 12345678901ull && c.has_seed && c.params.max_tokens == 9 && c.has_max_tokens);
    EXPECT(c.params.n_stop_strings == 1 && !strcmp(c.params.stop_strings[0], "END"));
    EXPECT(c.stream && c.include_usage && c.thinking && c.conv.n_msgs == 1);
    proto_chat_free(&c);
    {
        static const struct { const char *extra, *param; enum proto_ekind kind; } bad[] = {
            {"\"temperature\":\"1\"", "temperature", PROTO_E_TYPE},
            {"\"temperature\":2.5", "temperature", PROTO_E_VALUE},
            {"\"top_p\":0", "top_p", PROTO_E_VALUE},
            {"\"min_p\":1", "min_p", PROTO_E_VALUE},
            {"\"top_k\":2.5", "top_k", PROTO_E_TYPE},
            {"\"seed\":-1", "seed", PROTO_E_VALUE},
            {"\"max_tokens\":0", "max_tokens", PROTO_E_VALUE},
            {"\"stop\":[\"a\",3]", "stop", PROTO_E_TYPE},
            {"\"stop\":{}", "stop", PROTO_E_TYPE},
            {"\"stream\":1", "stream", PROTO_E_TYPE},
            {"\"stream_options\":true", "stream_options", PROTO_E_TYPE},
            {"\"n\":3", "n", PROTO_E_VALUE},
            {"\"frequency_penalty\":0.5", "frequency_penalty", PROTO_E_VALUE},
            {"\"logprobs\":true", "logprobs", PROTO_E_VALUE},
            {"\"response_format\":{\"type\":\"json_object\"}", "response_format", PROTO_E_VALUE},
            {"\"tool_choice\":\"auto\"", "tool_choice", PROTO_E_VALUE},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(body, sizeof body, "{%s,%s}", msgs, bad[i].extra);
            memset(&e, 0, sizeof e);
            EXPECTF(parse_openai(body, &c, &e) == -1 && e.kind == bad[i].kind && !strcmp(e.param, bad[i].param),
                    "%s: kind %d param '%s' message '%s'", bad[i].extra, e.kind, e.param, e.message);
        }
    }
    EXPECT(parse_openai("{\"max_tokens\":3}", &c, &e) == -1 && e.kind == PROTO_E_MISSING);
    EXPECT(parse_openai("{\"messages\":[]}", &c, &e) == -1 && test_str_has(e.message, "empty"));
}

static void test_images(void)
{
    struct proto_chat c;
    struct proto_err e;
    struct proto_defaults d = defaults();
    const char *ws = "{\"type\":\"chat\",\"id\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":["
                     "{\"type\":\"image\",\"image_id\":7},{\"type\":\"text\",\"text\":\"and\"},"
                     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\",\"detail\":\"low\"}}]}]}";
    struct proto_msg m;
    EXPECT(proto_ws_parse(ws, strlen(ws), &d, &m, &e) == 0);
    EXPECT(m.type == PROTO_MSG_CHAT && !strcmp(m.id, "r") && !strcmp(m.chat.id, "r") && m.chat.n_images == 2);
    EXPECT(m.chat.images[0].kind == PROTO_IMAGE_UPLOAD && m.chat.images[0].image_id == 7);
    EXPECT(m.chat.images[1].kind == PROTO_IMAGE_DATA_URI && m.chat.images[1].budget == 70 &&
           !strcmp(m.chat.images[1].uri, "data:image/png;base64,AAAA"));
    proto_chat_free(&m.chat);
    /* an OpenAI client cannot refer to uploads: image_id means nothing there */
    EXPECT(parse_openai("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_id\":7}]}]}", &c, &e) ==
               -1 &&
           e.kind == PROTO_E_IMAGE);
    EXPECT(parse_openai("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
                        "\"data:,x\",\"detail\":\"max\"}}]}]}",
                        &c, &e) == -1 &&
           test_str_has(e.message, "detail"));
}

static void test_ws_messages(void)
{
    struct proto_defaults d = defaults();
    struct proto_msg m;
    struct proto_err e;
    const char *cancel = "{\"type\":\"cancel\",\"id\":\"abc\"}";
    EXPECT(proto_ws_parse(cancel, strlen(cancel), &d, &m, &e) == 0 && m.type == PROTO_MSG_CANCEL && !strcmp(m.id, "abc"));
    EXPECT(proto_ws_parse("{\"type\":\"cancel\"}", 17, &d, &m, &e) == -1 && e.kind == PROTO_E_MISSING);
    EXPECT(proto_ws_parse("{\"type\":\"fly\"}", 14, &d, &m, &e) == -1 && e.kind == PROTO_E_UNKNOWN &&
           !strcmp(proto_ws_code(e.kind), "unknown_type"));
    /* a bad chat still names its request */
    {
        const char *bad = "{\"type\":\"chat\",\"id\":\"q7\",\"messages\":[],\"temperature\":-1}";
        EXPECT(proto_ws_parse(bad, strlen(bad), &d, &m, &e) == -1 && m.has_id && !strcmp(m.id, "q7"));
    }
    {
        struct sched_result r = {0};
        char *s;
        r.finish = SAMP_FINISH_LENGTH;
        r.prompt_tokens = 3;
        r.completion_tokens = 4;
        r.seed = 9;
        s = proto_ws_end("x\"y", &r);
        EXPECT_STR_HAS(s, "\"id\":\"x\\\"y\"");
        EXPECT_STR_HAS(s, "\"finish_reason\":\"length\"");
        EXPECT_STR_HAS(s, "\"completion_tokens\":4");
        free(s);
        r.cancelled = 1;
        s = proto_ws_end("x", &r);
        EXPECT_STR_HAS(s, "\"finish_reason\":\"cancelled\"");
        free(s);
        s = proto_ws_token("x", "a\nb\"", 4, 2);
        EXPECT(!strcmp(s, "{\"type\":\"token\",\"id\":\"x\",\"text\":\"a\\nb\\\"\",\"n\":2}"));
        free(s);
    }
}

static void test_dataurl(void)
{
    uint8_t *b = NULL;
    size_t n = 0;
    char err[G4_ERR_MAX];
    /* RFC 4648 §10 vectors */
    EXPECT(dataurl_decode("data:image/png;base64,Zm9vYmFy", &b, &n, 100, err) == 0 && n == 6 && !memcmp(b, "foobar", 6));
    free(b);
    EXPECT(dataurl_decode("data:;base64,Zm9vYg==", &b, &n, 100, err) == 0 && n == 4 && !memcmp(b, "foob", 4));
    free(b);
    EXPECT(dataurl_decode("data:image/png;base64,Zm9v\nYmE=", &b, &n, 100, err) == 0 && n == 5 && !memcmp(b, "fooba", 5));
    free(b);
    EXPECT(dataurl_decode("data:image/png;base64,Zm9vYmE", &b, &n, 100, err) == 0 && n == 5); /* padding optional */
    free(b);
    EXPECT(dataurl_decode("data:image/png;base64,Zm9v*mFy", &b, &n, 100, err) == -1 && test_str_has(err, "byte 4"));
    EXPECT(dataurl_decode("data:image/png;base64,Zg=a", &b, &n, 100, err) == -1);  /* data after padding */
    EXPECT(dataurl_decode("data:image/png;base64,Zh", &b, &n, 100, err) == -1);    /* stray bits set */
    EXPECT(dataurl_decode("data:image/png;base64,Z", &b, &n, 100, err) == -1);     /* 6 bits: no byte */
    EXPECT(dataurl_decode("data:image/png,rawbytes", &b, &n, 100, err) == -1 && test_str_has(err, "base64"));
    EXPECT(dataurl_decode("data:image/png;base64", &b, &n, 100, err) == -1);
    EXPECT(dataurl_decode("data:image/png;base64,", &b, &n, 100, err) == -1 && test_str_has(err, "no data"));
    EXPECT(dataurl_decode("data:image/png;base64,Zm9vYmFy", &b, &n, 5, err) == -1 && test_str_has(err, "limit"));
    EXPECT(b == NULL);
}

int main(void)
{
    RUN_TEST(test_utf8);
    RUN_TEST(test_json_framing);
    RUN_TEST(test_chat_fields);
    RUN_TEST(test_images);
    RUN_TEST(test_ws_messages);
    RUN_TEST(test_dataurl);
    return test_report();
}
