/* chat — Gemma 4 conversations rendered natively in C (no Jinja engine).
 *
 * The rendering follows the chat template Google ships with the large Gemma 4 checkpoints (the 12B's
 * converter downloads the 31B one): `<bos>`, an optional system turn (system text, `<|think|>` when thinking
 * is on), `<|turn>ROLE\n…<turn|>\n` per message with `assistant` written `model`, user text trimmed, model
 * text with every thought channel stripped, images as `\n\n<|image>` + N × `<|image|>` + `<image|>\n\n`
 * (the processor's expansion of the template's single `<|image|>`), and a generation prompt `<|turn>model\n`
 * followed, when thinking is off (the default), by the pre-closed empty channel
 * `<|channel>thought\n<channel|>`. Tool declarations and tool calls are not rendered (refused by name).
 *
 * The renderer produces text; the tokenizer turns it into ids (the control strings are added tokens). It
 * knows nothing about JSON transport beyond chat_conv_from_json, which accepts OpenAI-style messages. */
#ifndef G4_CHAT_H
#define G4_CHAT_H

#include <cJSON.h>

#include "util/util.h"

#define CHAT_MAX_MESSAGES 1024 /* messages in one conversation */
#define CHAT_MAX_IMAGES 16     /* image parts in one conversation */

enum chat_role { CHAT_ROLE_SYSTEM, CHAT_ROLE_USER, CHAT_ROLE_MODEL };
enum chat_part_kind { CHAT_PART_TEXT, CHAT_PART_IMAGE };

struct chat_part {
    enum chat_part_kind kind;
    char *text;       /* TEXT: UTF-8, owned; IMAGE: the reference the client gave (URL, id), owned, may be NULL */
    int image_tokens; /* IMAGE: number of soft tokens N (from the image processor); 0 until known */
};

struct chat_message {
    enum chat_role role;
    struct chat_part *parts; /* (n_parts) owned */
    int n_parts;
};

struct chat_conv {
    struct chat_message *msgs; /* (n_msgs) owned */
    int n_msgs;
};

struct chat_opts {
    int thinking;              /* 1: `<|think|>` in the system turn and no pre-closed thought channel */
    int add_generation_prompt; /* 1: end with the model turn opener (what a request to generate needs) */
};

/* Renders conv into out (appended). Returns 0, or -1 with err naming the message index and the problem:
 * an empty conversation, a system message that is not the first, an image part whose token count is
 * unknown, or a generation prompt requested after a model message. */
int chat_render(const struct chat_conv *conv, const struct chat_opts *opts, struct sbuf *out, char *err);

/* Parses OpenAI-style messages: [{"role": "system"|"developer"|"user"|"assistant"|"model", "content": STRING
 * | [{"type": "text", "text": S} | {"type": "image"|"image_url", ...}]}]. An image part's reference is taken
 * from "image_url.url", "url" or "image" (whichever is a string); "tokens", when present, sets image_tokens.
 * Returns 0, or -1 with err naming the message index and the field (unknown role, wrong types, too many
 * messages or images, tool calls). On failure conv is left empty. */
int chat_conv_from_json(const cJSON *messages, struct chat_conv *conv, char *err);

/* Frees everything conv owns and zeroes it. */
void chat_conv_free(struct chat_conv *conv);

/* Removes every thought channel from model text as the template's strip_thinking does: split on
 * `<channel|>`, keep what precedes `<|channel>` in each piece, then trim. Appends the result to out. */
void chat_strip_thinking(const char *text, struct sbuf *out);

/* Appends s without leading and trailing whitespace (Python str.strip() semantics: Unicode whitespace). */
void chat_append_trimmed(const char *s, size_t n, struct sbuf *out);

#endif
