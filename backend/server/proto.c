/* proto — JSON <-> structs for the WebSocket protocol and the OpenAI API (proto.h, docs/protocol.md).
 * Service thread only; every function returns an error for the client rather than aborting. */
#include "server/proto.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static int fail(struct proto_err *e, enum proto_ekind k, const char *param, const char *fmt, ...) G4_PRINTF(4, 5);

static int fail(struct proto_err *e, enum proto_ekind k, const char *param, const char *fmt, ...)
{
    va_list ap;
    e->kind = k;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- UTF-8 and JSON ------------------------------------------------------------------------------------ */

int proto_utf8_valid(const char *s, size_t len, size_t *bad_at)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07;
        else goto bad;
        if (len - i <= n) goto bad;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80) goto bad;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            goto bad;
        i += n + 1;
    }
    return 1;
bad:
    if (bad_at) *bad_at = i;
    return 0;
}

cJSON *proto_parse_json(const char *buf, size_t len, struct proto_err *e)
{
    size_t bad;
    const char *end = NULL;
    cJSON *j;
    if (!proto_utf8_valid(buf, len, &bad)) {
        fail(e, PROTO_E_UTF8, NULL, "the message is not valid UTF-8 (byte %zu)", bad);
        return NULL;
    }
    j = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!j) {
        size_t at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        const char *ep = cJSON_GetErrorPtr();
        if (ep && ep >= buf && ep <= buf + len) at = (size_t)(ep - buf);
        fail(e, PROTO_E_JSON, NULL, "malformed JSON near byte %zu", at);
        return NULL;
    }
    for (const char *p = end; p < buf + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            fail(e, PROTO_E_JSON, NULL, "malformed JSON: unexpected data after the object at byte %zu",
                 (size_t)(p - buf));
            cJSON_Delete(j);
            return NULL;
        }
    }
    if (!cJSON_IsObject(j)) {
        fail(e, PROTO_E_JSON, NULL, "the message must be a JSON object");
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* ---- typed fields -------------------------------------------------------------------------------------- */

/* The field name, or NULL when absent or null (OpenAI clients send null for "not set"). */
static const cJSON *field(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A number field: 0 absent, 1 present (value in *out), -1 wrong type. */
static int num_field(const cJSON *o, const char *name, double *out, struct proto_err *e)
{
    const cJSON *v = field(o, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fail(e, PROTO_E_TYPE, name, "%s must be a number", name);
    *out = v->valuedouble;
    return 1;
}

/* A number in [lo, hi] (lo_open / hi_open make that end open). */
static int range_field(const cJSON *o, const char *name, double lo, int lo_open, double hi, int hi_open, float *out,
                       int *present, struct proto_err *e)
{
    double v;
    int rc = num_field(o, name, &v, e);
    if (present) *present = rc == 1;
    if (rc <= 0) return rc;
    if ((lo_open ? v <= lo : v < lo) || (hi_open ? v >= hi : v > hi))
        return fail(e, PROTO_E_VALUE, name, "%s must be in %c%g, %g%c, got %g", name, lo_open ? '(' : '[', lo, hi,
                    hi_open ? ')' : ']', v);
    *out = (float)v;
    return 1;
}

/* An integer in [lo, hi]. */
static int int_field(const cJSON *o, const char *name, double lo, double hi, double *out, struct proto_err *e)
{
    double v;
    int rc = num_field(o, name, &v, e);
    if (rc <= 0) return rc;
    if (v != floor(v)) return fail(e, PROTO_E_TYPE, name, "%s must be an integer, got %g", name, v);
    if (v < lo || v > hi) return fail(e, PROTO_E_VALUE, name, "%s must be in [%.0f, %.0f], got %.0f", name, lo, hi, v);
    *out = v;
    return 1;
}

/* A boolean field: 0 absent, 1 present, -1 wrong type. */
static int bool_field(const cJSON *o, const char *name, int *out, struct proto_err *e)
{
    const cJSON *v = field(o, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return fail(e, PROTO_E_TYPE, name, "%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 1;
}

/* "stop": a string or an array of strings, each 1..SAMP_MAX_STOP_STRING_LEN bytes, at most
 * SAMP_MAX_STOP_STRINGS. */
static int stop_field(const cJSON *o, struct samp_params *p, struct proto_err *e)
{
    const cJSON *v = field(o, "stop"), *it;
    int n = 0;
    if (!v) return 0;
    if (!cJSON_IsString(v) && !cJSON_IsArray(v))
        return fail(e, PROTO_E_TYPE, "stop", "stop must be a string or an array of strings");
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > SAMP_MAX_STOP_STRINGS)
        return fail(e, PROTO_E_VALUE, "stop", "at most %d stop strings, got %d", SAMP_MAX_STOP_STRINGS,
                    cJSON_GetArraySize(v));
    p->n_stop_strings = 0;
    for (it = cJSON_IsString(v) ? v : v->child; it; it = cJSON_IsString(v) ? NULL : it->next, n++) {
        size_t len;
        if (!cJSON_IsString(it)) return fail(e, PROTO_E_TYPE, "stop", "stop[%d] must be a string", n);
        len = strlen(it->valuestring);
        if (len < 1 || len > SAMP_MAX_STOP_STRING_LEN)
            return fail(e, PROTO_E_VALUE, "stop", "stop[%d] must be 1 to %d bytes, got %zu", n,
                        SAMP_MAX_STOP_STRING_LEN, len);
        memcpy(p->stop_strings[p->n_stop_strings], it->valuestring, len + 1);
        p->n_stop_strings++;
    }
    return 1;
}

/* ---- chat requests ------------------------------------------------------------------------------------- */

/* The image budget of an OpenAI image_url part's "detail". */
static int detail_budget(const cJSON *part, int def, int *out, int mi, int pi, struct proto_err *e)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(part, "image_url");
    const cJSON *d = cJSON_IsObject(u) ? field(u, "detail") : NULL;
    *out = def;
    if (!d) return 0;
    if (!cJSON_IsString(d) ||
        (strcmp(d->valuestring, "low") && strcmp(d->valuestring, "high") && strcmp(d->valuestring, "auto")))
        return fail(e, PROTO_E_VALUE, "detail", "messages[%d].content[%d].image_url.detail must be low, high or auto",
                    mi, pi);
    if (!strcmp(d->valuestring, "low")) *out = 70;
    else if (!strcmp(d->valuestring, "high")) *out = IMG_MAX_SOFT_TOKENS;
    return 0;
}

/* Walks the (already parsed) messages again to record each image part's reference, in order: an upload's
 * image_id (WebSocket) or a data: URI. */
static int collect_images(const cJSON *messages, enum proto_dialect d, const struct proto_defaults *def,
                          struct proto_chat *c, struct proto_err *e)
{
    int mi = 0, k = 0;
    for (const cJSON *m = messages->child; m; m = m->next, mi++) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        int pi = 0;
        if (!cJSON_IsArray(content)) continue;
        for (const cJSON *part = content->child; part; part = part->next, pi++) {
            const struct chat_part *cp = &c->conv.msgs[mi].parts[pi];
            struct proto_image *im;
            const cJSON *idv;
            if (cp->kind != CHAT_PART_IMAGE) continue;
            G4_CHECK(k < SRV_MAX_IMAGES_PER_REQUEST, "chat parser let %d images through", k + 1);
            im = &c->images[k++];
            c->n_images = k;
            idv = cJSON_GetObjectItemCaseSensitive(part, "image_id");
            if (idv && d == PROTO_WS) {
                if (!cJSON_IsNumber(idv) || idv->valuedouble < 0 || idv->valuedouble > 4294967295.0 ||
                    idv->valuedouble != floor(idv->valuedouble))
                    return fail(e, PROTO_E_TYPE, "image_id",
                                "messages[%d].content[%d].image_id must be an integer in [0, 4294967295]", mi, pi);
                im->kind = PROTO_IMAGE_UPLOAD;
                im->image_id = (uint32_t)idv->valuedouble;
                continue;
            }
            if (!cp->text)
                return fail(e, PROTO_E_IMAGE, "image_url",
                            "messages[%d].content[%d]: an image needs %s", mi, pi,
                            d == PROTO_WS ? "an image_id (uploaded patches) or image_url.url (a data: URI)"
                                          : "image_url.url (a data: URI)");
            if (strncmp(cp->text, "data:", 5))
                return fail(e, PROTO_E_IMAGE, "image_url",
                            "messages[%d].content[%d]: only data: URIs are accepted (the server fetches nothing)", mi,
                            pi);
            im->kind = PROTO_IMAGE_DATA_URI;
            im->uri = g4_strdup(cp->text);
            if (detail_budget(part, def->max_soft_tokens, &im->budget, mi, pi, e)) return -1;
        }
    }
    return 0;
}

/* OpenAI fields g4 does not implement: refused by name unless they ask for nothing. */
static int openai_unsupported(const cJSON *root, struct proto_err *e)
{
    const cJSON *v;
    double x;
    int b = 0;
    if (int_field(root, "n", 1, 1, &x, e) < 0) return -1;
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "presence_penalty" : "frequency_penalty";
        int rc = num_field(root, name, &x, e);
        if (rc < 0) return -1;
        if (rc && x != 0) return fail(e, PROTO_E_VALUE, name, "%s is not supported (only 0)", name);
    }
    if ((v = field(root, "tools")) && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > 0))
        return fail(e, PROTO_E_VALUE, "tools", "tools are not supported");
    if ((v = field(root, "functions")))
        return fail(e, PROTO_E_VALUE, "functions", "functions are not supported");
    if ((v = field(root, "tool_choice")) && !(cJSON_IsString(v) && !strcmp(v->valuestring, "none")))
        return fail(e, PROTO_E_VALUE, "tool_choice", "tool_choice is not supported (only \"none\")");
    if (bool_field(root, "logprobs", &b, e) < 0) return -1;
    if (b) return fail(e, PROTO_E_VALUE, "logprobs", "logprobs are not supported");
    if ((v = field(root, "response_format"))) {
        const cJSON *t = cJSON_IsObject(v) ? field(v, "type") : NULL;
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "text"))
            return fail(e, PROTO_E_VALUE, "response_format", "response_format is not supported (only {\"type\": \"text\"})");
    }
    if ((v = field(root, "model")) && !cJSON_IsString(v)) return fail(e, PROTO_E_TYPE, "model", "model must be a string");
    return 0;
}

/* The sampling and stopping fields shared by both dialects. */
static int sampling_fields(const cJSON *root, enum proto_dialect d, struct proto_chat *c, struct proto_err *e)
{
    struct samp_params *p = &c->params;
    double x;
    int rc;
    if (range_field(root, "temperature", 0, 0, SAMP_MAX_TEMPERATURE, 0, &p->temperature, NULL, e) < 0) return -1;
    if (range_field(root, "top_p", 0, 1, 1, 0, &p->top_p, NULL, e) < 0) return -1;
    if (range_field(root, "min_p", 0, 0, 1, 1, &p->min_p, NULL, e) < 0) return -1;
    if ((rc = int_field(root, "top_k", 0, 1 << 24, &x, e)) < 0) return -1;
    if (rc) p->top_k = (int32_t)x;
    if ((rc = int_field(root, "seed", 0, 9007199254740991.0, &x, e)) < 0) return -1;
    if (rc) {
        p->seed = (uint64_t)x;
        c->has_seed = 1;
    }
    for (int i = 0; i < 2; i++) { /* max_completion_tokens (OpenAI's newer name) wins over max_tokens */
        const char *name = i ? "max_completion_tokens" : "max_tokens";
        if (i && d != PROTO_OPENAI) break;
        if ((rc = int_field(root, name, 1, SAMP_MAX_TOKENS_LIMIT, &x, e)) < 0) return -1;
        if (rc) {
            p->max_tokens = (int32_t)x;
            c->has_max_tokens = 1;
        }
    }
    if (stop_field(root, p, e) < 0) return -1;
    if (bool_field(root, "thinking", &c->thinking, e) < 0) return -1;
    return 0;
}

int proto_chat_parse(const cJSON *root, enum proto_dialect d, const struct proto_defaults *def,
                     struct proto_chat *c, struct proto_err *e)
{
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
    char err[G4_ERR_MAX];
    memset(c, 0, sizeof *c);
    c->params = def->params;
    if (!messages) return fail(e, PROTO_E_MISSING, "messages", "messages is required");
    if (d == PROTO_OPENAI) {
        const cJSON *so;
        if (openai_unsupported(root, e)) goto fail;
        if (bool_field(root, "stream", &c->stream, e) < 0) goto fail;
        if ((so = field(root, "stream_options"))) {
            if (!cJSON_IsObject(so)) {
                fail(e, PROTO_E_TYPE, "stream_options", "stream_options must be an object");
                goto fail;
            }
            if (bool_field(so, "include_usage", &c->include_usage, e) < 0) goto fail;
        }
    } else if (bool_field(root, "draft", &c->draft, e) < 0) {
        goto fail;
    }
    if (sampling_fields(root, d, c, e)) goto fail;
    if (chat_conv_from_json(messages, &c->conv, err)) {
        fail(e, strstr(err, "not supported") ? PROTO_E_VALUE : PROTO_E_TYPE, "messages", "%s", err);
        goto fail;
    }
    if (collect_images(messages, d, def, c, e)) goto fail;
    if (samp_params_validate(&c->params, def->vocab, err)) {
        fail(e, PROTO_E_VALUE, NULL, "%s", err);
        goto fail;
    }
    return 0;
fail:
    proto_chat_free(c);
    return -1;
}

void proto_chat_free(struct proto_chat *c)
{
    chat_conv_free(&c->conv);
    for (int i = 0; i < c->n_images; i++) {
        free(c->images[i].uri);
        free(c->images[i].patches.patches);
        free(c->images[i].patches.positions);
    }
    memset(c, 0, sizeof *c);
}

/* ---- WebSocket client messages ------------------------------------------------------------------------- */

/* The request id field: a string of 1..SRV_MAX_ID_BYTES bytes. */
static int id_field(const cJSON *root, struct proto_msg *msg, struct proto_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "id");
    size_t len;
    if (!v) return fail(e, PROTO_E_MISSING, "id", "id is required (a string naming the request)");
    if (!cJSON_IsString(v)) return fail(e, PROTO_E_TYPE, "id", "id must be a string");
    len = strlen(v->valuestring);
    if (len < 1 || len > SRV_MAX_ID_BYTES)
        return fail(e, PROTO_E_VALUE, "id", "id must be 1 to %d bytes, got %zu", SRV_MAX_ID_BYTES, len);
    memcpy(msg->id, v->valuestring, len + 1);
    msg->has_id = 1;
    return 0;
}

int proto_ws_parse(const char *buf, size_t len, const struct proto_defaults *def, struct proto_msg *msg,
                   struct proto_err *e)
{
    cJSON *root = proto_parse_json(buf, len, e);
    const cJSON *type;
    int rc = -1;
    memset(msg, 0, sizeof *msg);
    if (!root) return -1;
    type = cJSON_GetObjectItemCaseSensitive(root, "type");
    if (!type) {
        fail(e, PROTO_E_MISSING, "type", "type is required (chat, cancel, subscribe, unsubscribe)");
    } else if (!cJSON_IsString(type)) {
        fail(e, PROTO_E_TYPE, "type", "type must be a string");
    } else if (!strcmp(type->valuestring, "chat")) {
        msg->type = PROTO_MSG_CHAT;
        if (id_field(root, msg, e) == 0 && proto_chat_parse(root, PROTO_WS, def, &msg->chat, e) == 0) {
            memcpy(msg->chat.id, msg->id, sizeof msg->id);
            rc = 0;
        }
    } else if (!strcmp(type->valuestring, "cancel")) {
        msg->type = PROTO_MSG_CANCEL;
        rc = id_field(root, msg, e);
    } else if (!strcmp(type->valuestring, "subscribe") || !strcmp(type->valuestring, "unsubscribe")) {
        const cJSON *topic = cJSON_GetObjectItemCaseSensitive(root, "topic");
        msg->type = type->valuestring[0] == 's' ? PROTO_MSG_SUBSCRIBE : PROTO_MSG_UNSUBSCRIBE;
        if (!cJSON_IsString(topic) || strcmp(topic->valuestring, "metrics"))
            fail(e, topic && !cJSON_IsString(topic) ? PROTO_E_TYPE : PROTO_E_VALUE, "topic",
                 "topic must be \"metrics\"");
        else
            rc = 0;
    } else {
        fail(e, PROTO_E_UNKNOWN, "type", "unknown message type '%.40s' (chat, cancel, subscribe, unsubscribe)",
             type->valuestring);
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- server -> client ---------------------------------------------------------------------------------- */

const char *proto_ws_code(enum proto_ekind k)
{
    switch (k) {
    case PROTO_E_JSON: return "bad_json";
    case PROTO_E_UTF8: return "invalid_utf8";
    case PROTO_E_IMAGE: return "image_error";
    case PROTO_E_UNKNOWN: return "unknown_type";
    case PROTO_E_TYPE:
    case PROTO_E_VALUE:
    case PROTO_E_MISSING: break;
    }
    return "bad_request";
}

/* Prints o compactly and deletes it. */
static char *finish(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    G4_CHECK(s, "cJSON print failed");
    cJSON_Delete(o);
    return s;
}

static cJSON *with_type(const char *type, const char *id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    if (id) cJSON_AddStringToObject(o, "id", id);
    return o;
}

char *proto_ws_error(const char *id, const char *code, const char *message)
{
    cJSON *o = with_type("error", NULL);
    if (id) cJSON_AddStringToObject(o, "id", id);
    else cJSON_AddNullToObject(o, "id");
    cJSON_AddStringToObject(o, "code", code);
    cJSON_AddStringToObject(o, "message", message);
    return finish(o);
}

char *proto_ws_queued(const char *id, int position)
{
    cJSON *o = with_type("queued", id);
    cJSON_AddNumberToObject(o, "position", position);
    return finish(o);
}

char *proto_ws_token(const char *id, const char *text, size_t len, int n)
{
    cJSON *o = with_type("token", id);
    char *t = g4_malloc(len + 1);
    memcpy(t, text, len);
    t[len] = 0;
    cJSON_AddStringToObject(o, "text", t);
    cJSON_AddNumberToObject(o, "n", n);
    free(t);
    return finish(o);
}

char *proto_ws_end(const char *id, const struct sched_result *r)
{
    cJSON *o, *u;
    if (r->is_error) return proto_ws_error(id, r->code, r->message);
    o = with_type("done", id);
    cJSON_AddStringToObject(o, "finish_reason", r->cancelled ? "cancelled" : samp_finish_name(r->finish));
    u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", r->completion_tokens);
    cJSON_AddNumberToObject(o, "ttft_ms", round(r->ttft_s * 1e4) / 10);
    cJSON_AddNumberToObject(o, "tokens_per_s", round(r->tokens_per_s * 10) / 10);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    return finish(o);
}

char *proto_ws_image_ack(uint32_t image_id, int patches)
{
    cJSON *o = with_type("image", NULL);
    cJSON_AddNumberToObject(o, "image_id", image_id);
    cJSON_AddNumberToObject(o, "patches", patches);
    return finish(o);
}
