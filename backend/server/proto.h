/* proto — JSON to plain structs and back, for both the WebSocket protocol and the OpenAI API
 * (docs/protocol.md). The service thread parses every client message here, at the edge; nothing past this
 * room sees JSON. Checks are exact: a field of the wrong type is an error naming the field, never a
 * conversion; limits are those of limits.h and sampler.h.
 *
 * Must not: touch sockets, the engine or the scheduler's requests; abort on anything a client sends. */
#ifndef G4_SERVER_PROTO_H
#define G4_SERVER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "model/chat.h"
#include "server/limits.h"

/* What kind of mistake a client made; each transport names it in its own words (WebSocket error codes,
 * OpenAI error codes). */
enum proto_ekind {
    PROTO_E_JSON = 1, /* not JSON, or not an object */
    PROTO_E_UTF8,     /* not valid UTF-8 */
    PROTO_E_TYPE,     /* a field of the wrong type */
    PROTO_E_VALUE,    /* a field outside its range, or an unsupported value */
    PROTO_E_MISSING,  /* a required field is absent */
    PROTO_E_IMAGE,    /* an image reference that cannot be used */
    PROTO_E_UNKNOWN,  /* a WebSocket message type the server does not know */
};

struct proto_err {
    enum proto_ekind kind;
    char param[64];           /* the field, e.g. "temperature", "messages[1].content[0]"; "" when none */
    char message[G4_ERR_MAX]; /* for the client */
};

enum proto_dialect { PROTO_WS, PROTO_OPENAI };

/* Request defaults: the model's generation_config and image budget. */
struct proto_defaults {
    struct samp_params params; /* sampling defaults, stop ids, suppressed ids */
    int32_t vocab;             /* V, for top_k and id checks */
    int max_soft_tokens;       /* soft tokens of a data-URI image without "detail" (the model's default) */
};

enum proto_image_kind { PROTO_IMAGE_UPLOAD, PROTO_IMAGE_DATA_URI };

/* One image of a chat request, in prompt order. */
struct proto_image {
    enum proto_image_kind kind;
    uint32_t image_id;          /* UPLOAD: the binary frames' image_id */
    char *uri;                  /* DATA_URI: the data: URI (owned); decoded off the service thread */
    int budget;                 /* DATA_URI: max soft tokens (70, 280 or 1120 by "detail") */
    struct sched_image patches; /* the image's patches once known (UPLOAD: from the connection's uploads) */
};

/* A parsed chat request (WebSocket `chat` or OpenAI chat completion). */
struct proto_chat {
    char id[SRV_MAX_ID_BYTES + 1];                      /* WebSocket: the client's request id */
    struct chat_conv conv;                              /* messages; image parts in order match images[] */
    struct proto_image images[SRV_MAX_IMAGES_PER_REQUEST];
    int n_images;
    struct samp_params params;                          /* defaults overridden by the request */
    int has_max_tokens;                                 /* 1: the client set max_tokens (else cut to the context) */
    int has_seed;                                       /* 0: the server picks a random seed */
    int thinking;                                       /* Gemma 4 thinking mode */
    int draft;                                          /* WebSocket `draft` (accepted; no drafter yet) */
    int stream, include_usage;                          /* OpenAI */
};

/* A WebSocket client message. */
enum proto_msg_type { PROTO_MSG_CHAT, PROTO_MSG_CANCEL, PROTO_MSG_SUBSCRIBE, PROTO_MSG_UNSUBSCRIBE };

struct proto_msg {
    enum proto_msg_type type;
    char id[SRV_MAX_ID_BYTES + 1]; /* cancel; chat (also in chat.id) */
    int has_id;                    /* the message carried a usable id (for error replies) */
    struct proto_chat chat;        /* PROTO_MSG_CHAT */
};

/* Parses a complete JSON text of len bytes (not NUL-terminated): checks UTF-8, parses, requires an object
 * with nothing but whitespace after it. Returns the tree (caller deletes) or NULL with e filled. */
cJSON *proto_parse_json(const char *buf, size_t len, struct proto_err *e);

/* 1 if s[0..len) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF); else 0 with
 * *bad_at the offset of the first bad byte. */
int proto_utf8_valid(const char *s, size_t len, size_t *bad_at);

/* Parses a chat request object (WebSocket `chat` or an OpenAI body) over the defaults. 0, or -1 with e;
 * on failure out is freed. */
int proto_chat_parse(const cJSON *root, enum proto_dialect d, const struct proto_defaults *def,
                     struct proto_chat *out, struct proto_err *e);
void proto_chat_free(struct proto_chat *c);

/* Parses one WebSocket text message (len bytes). 0, or -1 with e (and msg->has_id / msg->id set when the
 * message had a usable id, so the error can name the request). msg->chat must be freed with
 * proto_chat_free after a successful chat. */
int proto_ws_parse(const char *buf, size_t len, const struct proto_defaults *def, struct proto_msg *msg,
                   struct proto_err *e);

/* ---- server -> client WebSocket messages (malloc'd JSON text; caller frees) ---------------------------- */

/* The WebSocket error code for a parse error kind (bad_json, invalid_utf8, bad_request, image_error,
 * unknown_type). */
const char *proto_ws_code(enum proto_ekind k);

char *proto_ws_error(const char *id, const char *code, const char *message);
char *proto_ws_queued(const char *id, int position);
char *proto_ws_token(const char *id, const char *text, size_t len, int n);
char *proto_ws_end(const char *id, const struct sched_result *r);
char *proto_ws_image_ack(uint32_t image_id, int patches);

#endif
