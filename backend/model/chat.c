/* chat — renders Gemma 4 conversations (see chat.h for the format and its source). Pure string work:
 * no tokenizer, no JSON beyond chat_conv_from_json, no knowledge of images beyond their token counts. */
#include "model/chat.h"

#include <stdlib.h>
#include <string.h>

/* ---- whitespace and thinking ------------------------------------------------------------------------ */

/* Length of the Unicode whitespace character at s (Python's str.isspace set), or 0. */
static size_t space_len(const unsigned char *s, size_t n)
{
    if (n >= 1 && ((s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x20))) return 1;
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0)) return 2;
    if (n >= 3 && s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80) return 3;                 /* U+1680 */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
        return 3;                                                       /* U+2000–200A, 2028, 2029, 202F */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) return 3;                 /* U+205F */
    if (n >= 3 && s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80) return 3;                 /* U+3000 */
    return 0;
}

/* Length of the whitespace character that ends at s[n-1], or 0. */
static size_t space_len_back(const unsigned char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++)
        if (space_len(s + n - k, k) == k) return k;
    return 0;
}

void chat_append_trimmed(const char *s, size_t n, struct sbuf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t k;
    while (n && (k = space_len(u, n))) { u += k; n -= k; }
    while (n && (k = space_len_back(u, n))) n -= k;
    sbuf_append(out, (const char *)u, n);
}

/* The first occurrence of needle (nlen bytes) in hay[0..len), or NULL. */
static const char *find_in(const char *hay, size_t len, const char *needle, size_t nlen)
{
    for (size_t i = 0; i + nlen <= len; i++)
        if (!memcmp(hay + i, needle, nlen)) return hay + i;
    return NULL;
}

void chat_strip_thinking(const char *text, struct sbuf *out)
{
    static const char close[] = "<channel|>", open[] = "<|channel>";
    struct sbuf kept = {0};
    const char *p = text;
    for (;;) {
        const char *end = strstr(p, close);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *o = find_in(p, len, open, sizeof open - 1);
        sbuf_append(&kept, p, o ? (size_t)(o - p) : len);
        if (!end) break;
        p = end + sizeof close - 1;
    }
    chat_append_trimmed(kept.p ? kept.p : "", kept.n, out);
    sbuf_free(&kept);
}

/* ---- rendering --------------------------------------------------------------------------------------- */

static const char *role_name(enum chat_role r)
{
    return r == CHAT_ROLE_SYSTEM ? "system" : r == CHAT_ROLE_USER ? "user" : "model";
}

/* Appends one message's content: text parts trimmed (user, system) or thought-stripped (model), image parts
 * expanded to their soft-token run. */
static int render_content(const struct chat_message *m, int index, struct sbuf *out, char *err)
{
    for (int i = 0; i < m->n_parts; i++) {
        const struct chat_part *part = &m->parts[i];
        if (part->kind == CHAT_PART_TEXT) {
            if (m->role == CHAT_ROLE_MODEL) chat_strip_thinking(part->text, out);
            else chat_append_trimmed(part->text, strlen(part->text), out);
            continue;
        }
        if (part->image_tokens <= 0)
            return g4_errf(err, "messages[%d]: image part %d has no soft-token count (image not processed)",
                           index, i);
        sbuf_puts(out, "\n\n<|image>");
        for (int t = 0; t < part->image_tokens; t++) sbuf_puts(out, "<|image|>");
        sbuf_puts(out, "<image|>\n\n");
    }
    return 0;
}

int chat_render(const struct chat_conv *conv, const struct chat_opts *opts, struct sbuf *out, char *err)
{
    int first = 0;
    if (conv->n_msgs == 0) return g4_errf(err, "messages: the conversation is empty");
    sbuf_puts(out, "<bos>");
    if (opts->thinking || conv->msgs[0].role == CHAT_ROLE_SYSTEM) {
        sbuf_puts(out, "<|turn>system\n");
        if (opts->thinking) sbuf_puts(out, "<|think|>\n");
        if (conv->msgs[0].role == CHAT_ROLE_SYSTEM) {
            if (render_content(&conv->msgs[0], 0, out, err)) return -1;
            first = 1;
        }
        sbuf_puts(out, "<turn|>\n");
    }
    for (int i = first; i < conv->n_msgs; i++) {
        const struct chat_message *m = &conv->msgs[i];
        if (m->role == CHAT_ROLE_SYSTEM)
            return g4_errf(err, "messages[%d]: a system message may only come first", i);
        sbuf_printf(out, "<|turn>%s\n", role_name(m->role));
        if (render_content(m, i, out, err)) return -1;
        sbuf_puts(out, "<turn|>\n");
    }
    if (opts->add_generation_prompt) {
        if (conv->n_msgs > first && conv->msgs[conv->n_msgs - 1].role == CHAT_ROLE_MODEL)
            return g4_errf(err, "messages[%d]: the last message is the model's; a reply needs a user message last",
                           conv->n_msgs - 1);
        if (conv->n_msgs == first)
            return g4_errf(err, "messages: only a system message; a reply needs a user message");
        sbuf_puts(out, "<|turn>model\n");
        if (!opts->thinking) sbuf_puts(out, "<|channel>thought\n<channel|>");
    }
    return 0;
}

/* ---- JSON -------------------------------------------------------------------------------------------- */

static int parse_role(const cJSON *role, int index, enum chat_role *out, char *err)
{
    const char *r = cJSON_GetStringValue(role);
    if (!r) return g4_errf(err, "messages[%d].role: missing or not a string", index);
    if (!strcmp(r, "system") || !strcmp(r, "developer")) *out = CHAT_ROLE_SYSTEM;
    else if (!strcmp(r, "user")) *out = CHAT_ROLE_USER;
    else if (!strcmp(r, "assistant") || !strcmp(r, "model")) *out = CHAT_ROLE_MODEL;
    else if (!strcmp(r, "tool")) return g4_errf(err, "messages[%d].role: tool messages are not supported", index);
    else return g4_errf(err, "messages[%d].role: unknown role '%.64s' (system, developer, user, assistant)", index, r);
    return 0;
}

/* The image reference of a content part: image_url.url, url or image, whichever is a string. */
static const char *image_ref(const cJSON *item)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(item, "image_url");
    if (cJSON_IsObject(u)) return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(u, "url"));
    if (cJSON_IsString(u)) return u->valuestring;
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "url")))
        return cJSON_GetObjectItemCaseSensitive(item, "url")->valuestring;
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "image"));
}

static int parse_part(const cJSON *item, int mi, int pi, struct chat_part *part, int *n_images, char *err)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "type"));
    if (!cJSON_IsObject(item)) return g4_errf(err, "messages[%d].content[%d]: not an object", mi, pi);
    if (!type) return g4_errf(err, "messages[%d].content[%d].type: missing or not a string", mi, pi);
    if (!strcmp(type, "text")) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "text"));
        if (!text) return g4_errf(err, "messages[%d].content[%d].text: missing or not a string", mi, pi);
        part->kind = CHAT_PART_TEXT;
        part->text = g4_strdup(text);
        return 0;
    }
    if (!strcmp(type, "image") || !strcmp(type, "image_url")) {
        const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(item, "tokens");
        const char *ref = image_ref(item);
        if (++*n_images > CHAT_MAX_IMAGES)
            return g4_errf(err, "messages[%d].content[%d]: more than %d images in one conversation", mi, pi,
                           CHAT_MAX_IMAGES);
        part->kind = CHAT_PART_IMAGE;
        part->text = ref ? g4_strdup(ref) : NULL;
        if (tokens) {
            if (!cJSON_IsNumber(tokens) || tokens->valuedouble < 1 || tokens->valuedouble > 4096 ||
                tokens->valuedouble != (double)(int)tokens->valuedouble)
                return g4_errf(err, "messages[%d].content[%d].tokens: must be an integer in [1, 4096]", mi, pi);
            part->image_tokens = (int)tokens->valuedouble;
        }
        return 0;
    }
    return g4_errf(err, "messages[%d].content[%d].type: unsupported part type '%.32s' (text, image, image_url)",
                   mi, pi, type);
}

static int parse_message(const cJSON *msg, int mi, struct chat_message *m, int *n_images, char *err)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (!cJSON_IsObject(msg)) return g4_errf(err, "messages[%d]: not an object", mi);
    if (parse_role(cJSON_GetObjectItemCaseSensitive(msg, "role"), mi, &m->role, err)) return -1;
    if (cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"))
        return g4_errf(err, "messages[%d].tool_calls: tool calls are not supported", mi);
    if (cJSON_IsString(content)) {
        m->parts = g4_calloc(1, sizeof *m->parts);
        m->n_parts = 1;
        m->parts[0].kind = CHAT_PART_TEXT;
        m->parts[0].text = g4_strdup(content->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(content))
        return g4_errf(err, "messages[%d].content: missing, or neither a string nor an array of parts", mi);
    m->n_parts = cJSON_GetArraySize(content);
    m->parts = g4_calloc((size_t)m->n_parts, sizeof *m->parts);
    for (int pi = 0; pi < m->n_parts; pi++)
        if (parse_part(cJSON_GetArrayItem(content, pi), mi, pi, &m->parts[pi], n_images, err)) return -1;
    if (m->role == CHAT_ROLE_SYSTEM)
        for (int pi = 0; pi < m->n_parts; pi++)
            if (m->parts[pi].kind != CHAT_PART_TEXT)
                return g4_errf(err, "messages[%d].content[%d]: a system message holds text only", mi, pi);
    return 0;
}

int chat_conv_from_json(const cJSON *messages, struct chat_conv *conv, char *err)
{
    int n, n_images = 0;
    memset(conv, 0, sizeof *conv);
    if (!cJSON_IsArray(messages)) return g4_errf(err, "messages: not an array");
    n = cJSON_GetArraySize(messages);
    if (n == 0) return g4_errf(err, "messages: the conversation is empty");
    if (n > CHAT_MAX_MESSAGES) return g4_errf(err, "messages: %d messages, over the limit of %d", n, CHAT_MAX_MESSAGES);
    conv->msgs = g4_calloc((size_t)n, sizeof *conv->msgs);
    conv->n_msgs = n;
    for (int i = 0; i < n; i++) {
        if (parse_message(cJSON_GetArrayItem(messages, i), i, &conv->msgs[i], &n_images, err)) {
            chat_conv_free(conv);
            return -1;
        }
    }
    return 0;
}

void chat_conv_free(struct chat_conv *conv)
{
    for (int i = 0; i < conv->n_msgs; i++) {
        for (int p = 0; p < conv->msgs[i].n_parts; p++) free(conv->msgs[i].parts[p].text);
        free(conv->msgs[i].parts);
    }
    free(conv->msgs);
    memset(conv, 0, sizeof *conv);
}
