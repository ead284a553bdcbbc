/* Unit tests for backend/model/chat: golden renderings built from the spec's examples (gemma4-spec.md §5)
 * and the chat template's rules, and the errors for malformed conversations. */
#include "model/chat.h"
#include "test.h"

/* Renders a JSON conversation; returns the text (caller frees) or NULL with err set. */
static char *render_json(const char *json, int thinking, int gen, char *err)
{
    cJSON *j = cJSON_Parse(json);
    struct chat_conv conv;
    struct chat_opts opts = {thinking, gen};
    struct sbuf out = {0};
    char *text = NULL;
    if (!j) { snprintf(err, G4_ERR_MAX, "test JSON does not parse"); return NULL; }
    if (chat_conv_from_json(j, &conv, err) == 0) {
        if (chat_render(&conv, &opts, &out, err) == 0) text = g4_strdup(out.p);
        chat_conv_free(&conv);
    }
    sbuf_free(&out);
    cJSON_Delete(j);
    return text;
}

static void expect_render(const char *json, int thinking, const char *want)
{
    char err[G4_ERR_MAX] = "";
    char *got = render_json(json, thinking, 1, err);
    EXPECTF(got && !strcmp(got, want), "\n  got:  %s\n  want: %s\n  err: %s", got ? got : "(null)", want, err);
    free(got);
}

static void expect_error(const char *json, int gen, const char *needle)
{
    char err[G4_ERR_MAX] = "";
    char *got = render_json(json, 0, gen, err);
    EXPECTF(!got, "rendering %s should fail", json);
    EXPECT_STR_HAS(err, needle);
    free(got);
}

static void test_spec_example(void)
{
    /* gemma4-spec.md §5: one user turn, thinking off */
    expect_render("[{\"role\":\"user\",\"content\":\"What is 2+2?\"}]", 0,
                  "<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
}

static void test_system_and_thinking(void)
{
    expect_render("[{\"role\":\"system\",\"content\":\"  Be brief. \\n\"},{\"role\":\"user\",\"content\":\"Hi\"}]", 0,
                  "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n"
                  "<|turn>model\n<|channel>thought\n<channel|>");
    /* thinking on: <|think|> opens the system turn, and no pre-closed channel at the end */
    expect_render("[{\"role\":\"user\",\"content\":\"Hi\"}]", 1,
                  "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
    expect_render("[{\"role\":\"developer\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"U\"}]", 1,
                  "<bos><|turn>system\n<|think|>\nS<turn|>\n<|turn>user\nU<turn|>\n<|turn>model\n");
}

static void test_history_strips_thinking(void)
{
    expect_render("[{\"role\":\"user\",\"content\":\"a\"},"
                  "{\"role\":\"assistant\",\"content\":\"<|channel>thought\\nhmm<channel|> Four. \"},"
                  "{\"role\":\"user\",\"content\":\" \\t b\\u3000\"}]", 0,
                  "<bos><|turn>user\na<turn|>\n<|turn>model\nFour.<turn|>\n<|turn>user\nb<turn|>\n"
                  "<|turn>model\n<|channel>thought\n<channel|>");
}

static void test_strip_thinking_rules(void)
{
    struct sbuf out = {0};
    chat_strip_thinking("A<|channel>x<channel|>B<|channel>y<channel|>C", &out);
    EXPECT(!strcmp(out.p, "ABC"));
    sbuf_free(&out);
    chat_strip_thinking("no channel here ", &out);
    EXPECT(!strcmp(out.p, "no channel here"));
    sbuf_free(&out);
    chat_strip_thinking("open only <|channel>never closed", &out);
    EXPECT(!strcmp(out.p, "open only"));
    sbuf_free(&out);
}

static void test_images(void)
{
    expect_render("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Look:\"},"
                  "{\"type\":\"image\",\"tokens\":3},{\"type\":\"text\",\"text\":\" what? \"}]}]", 0,
                  "<bos><|turn>user\nLook:\n\n<|image><|image|><|image|><|image|><image|>\n\nwhat?<turn|>\n"
                  "<|turn>model\n<|channel>thought\n<channel|>");
    /* an image whose token count is unknown cannot be rendered */
    expect_error("[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:x\"}}]}]",
                 1, "no soft-token count");
}

static void test_malformed(void)
{
    expect_error("[]", 1, "empty");
    expect_error("{}", 1, "not an array");
    expect_error("[{\"role\":\"wizard\",\"content\":\"x\"}]", 1, "unknown role 'wizard'");
    expect_error("[{\"content\":\"x\"}]", 1, "messages[0].role");
    expect_error("[{\"role\":\"user\"}]", 1, "messages[0].content");
    expect_error("[{\"role\":\"user\",\"content\":[{\"type\":\"audio\"}]}]", 1, "unsupported part type 'audio'");
    expect_error("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"system\",\"content\":\"s\"}]", 1,
                 "messages[1]: a system message may only come first");
    expect_error("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]", 1,
                 "messages[1]: the last message is the model's");
    expect_error("[{\"role\":\"system\",\"content\":\"s\"}]", 1, "only a system message");
    expect_error("[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":[]},{\"role\":\"user\",\"content\":\"y\"}]",
                 1, "tool calls are not supported");
    expect_error("[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"tokens\":0}]}]", 1, "tokens");
}

static void test_no_generation_prompt(void)
{
    char err[G4_ERR_MAX];
    char *got = render_json("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]",
                            0, 0, err);
    EXPECT(got && !strcmp(got, "<bos><|turn>user\na<turn|>\n<|turn>model\nb<turn|>\n"));
    free(got);
}

int main(void)
{
    RUN_TEST(test_spec_example);
    RUN_TEST(test_system_and_thinking);
    RUN_TEST(test_history_strips_thinking);
    RUN_TEST(test_strip_thinking_rules);
    RUN_TEST(test_images);
    RUN_TEST(test_malformed);
    RUN_TEST(test_no_generation_prompt);
    return test_report();
}
