/* cmd_prompt — prompt options and prompt building for the engine commands (see cmd_prompt.h). */
#include "cmd/cmd_prompt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cmd/cmd.h"
#include "img.h"
#include "model/chat.h"
#include "model/tokenizer.h"
#include "util/util.h"

#define PROMPT_MAX_IDS (1 << 20)          /* ids on the command line */
#define PROMPT_MESSAGES_MAX_BYTES (16u << 20)

static int parse_ids(const char *s, struct prompt *p, char *err);

void prompt_args_init(struct prompt_args *a)
{
    memset(a, 0, sizeof *a);
    a->max_soft_tokens = 280;
    a->device = ENGINE_CPU;
    a->image_mask = ENGINE_IMAGE_MASK_SLIDING_ONLY;
}

int prompt_args_parse(struct prompt_args *a, const char *cmd, int argc, char **argv, int i)
{
    const char *flag = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long n;
    if (!strcmp(flag, "--thinking")) return a->thinking = 1;
    if (strcmp(flag, "--model") && strcmp(flag, "--ids") && strcmp(flag, "--prompt") && strcmp(flag, "--messages") &&
        strcmp(flag, "--image") && strcmp(flag, "--max-soft-tokens") && strcmp(flag, "--device") &&
        strcmp(flag, "--image-mask"))
        return 0;
    if (!v) {
        cmd_usage_error(cmd, "%s needs a value", flag);
        return -1;
    }
    if (!strcmp(flag, "--model")) a->model = v;
    else if (!strcmp(flag, "--ids")) {
        /* the syntax is the command line's (exit 2); the vocabulary check waits for the model (exit 1) */
        struct prompt tmp = {0};
        char err[G4_ERR_MAX];
        int bad = parse_ids(v, &tmp, err);
        free(tmp.ids);
        if (bad) {
            cmd_usage_error(cmd, "%s", err);
            return -1;
        }
        a->ids = v;
    } else if (!strcmp(flag, "--prompt")) a->prompt = v;
    else if (!strcmp(flag, "--messages")) a->messages = v;
    else if (!strcmp(flag, "--image")) {
        if (a->n_images == PROMPT_MAX_IMAGES) {
            cmd_usage_error(cmd, "at most %d --image files", PROMPT_MAX_IMAGES);
            return -1;
        }
        a->images[a->n_images++] = v;
    } else if (!strcmp(flag, "--max-soft-tokens")) {
        if (cmd_parse_int(cmd, flag, v, 70, 1120, &n)) return -1;
        if (n != 70 && n != 140 && n != 280 && n != 560 && n != 1120) {
            cmd_usage_error(cmd, "--max-soft-tokens must be one of 70, 140, 280, 560, 1120, got %ld", n);
            return -1;
        }
        a->max_soft_tokens = (int)n;
    } else if (!strcmp(flag, "--device")) {
        if (!strcmp(v, "cpu")) a->device = ENGINE_CPU;
        else if (!strcmp(v, "cuda")) a->device = ENGINE_CUDA;
        else {
            cmd_usage_error(cmd, "--device must be cpu or cuda, got '%s'", v);
            return -1;
        }
    } else if (!strcmp(flag, "--image-mask")) {
        if (!strcmp(v, "sliding")) a->image_mask = ENGINE_IMAGE_MASK_SLIDING_ONLY;
        else if (!strcmp(v, "all")) a->image_mask = ENGINE_IMAGE_MASK_ALL_LAYERS;
        else {
            cmd_usage_error(cmd, "--image-mask must be sliding or all, got '%s'", v);
            return -1;
        }
    }
    return 2;
}

static int parse_ids(const char *s, struct prompt *p, char *err)
{
    int cap = 64;
    p->ids = g4_malloc((size_t)cap * sizeof *p->ids);
    while (*s) {
        char *end;
        long v;
        errno = 0;
        v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > 0x7fffffffL)
            return g4_errf(err, "--ids: '%.20s' is not a token id (comma-separated integers)", s);
        if (p->n == PROMPT_MAX_IDS) return g4_errf(err, "--ids: more than %d ids", PROMPT_MAX_IDS);
        if (p->n == cap) p->ids = g4_realloc(p->ids, (size_t)(cap *= 2) * sizeof *p->ids);
        p->ids[p->n++] = (int32_t)v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return g4_errf(err, "--ids: unexpected '%c' (comma-separated integers)", *s);
    }
    if (p->n == 0) return g4_errf(err, "--ids: no ids");
    return 0;
}

/* The conversation of --prompt (one user turn) or --messages (a file). */
static int load_conversation(const struct prompt_args *a, struct chat_conv *conv, char *err)
{
    cJSON *j;
    int rc;
    if (a->prompt) {
        struct sbuf js = {0};
        cJSON *msgs = cJSON_CreateArray(), *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", a->prompt);
        cJSON_AddItemToArray(msgs, m);
        rc = chat_conv_from_json(msgs, conv, err);
        cJSON_Delete(msgs);
        sbuf_free(&js);
        return rc;
    }
    {
        size_t len;
        char *text = util_read_file(a->messages, PROMPT_MESSAGES_MAX_BYTES, &len, err);
        if (!text) return -1;
        j = cJSON_ParseWithLength(text, len);
        free(text);
        if (!j) return g4_errf(err, "%s: not valid JSON", a->messages);
        rc = chat_conv_from_json(cJSON_IsObject(j) ? cJSON_GetObjectItem(j, "messages") : j, conv, err);
        cJSON_Delete(j);
        return rc;
    }
}

/* Decodes, resizes and patches every --image file into p->images (the buffers go to p->owned). */
static int load_images(const struct prompt_args *a, struct prompt *p, char *err)
{
    for (int i = 0; i < a->n_images; i++) {
        struct img_patches ip = {0};
        size_t len;
        char *bytes = util_read_file(a->images[i], IMG_MAX_INPUT_BYTES, &len, err);
        char ierr[G4_ERR_MAX];
        if (!bytes) return -1;
        if (img_process((const uint8_t *)bytes, len, a->max_soft_tokens, &ip, ierr)) {
            free(bytes);
            return g4_errf(err, "%s: %s", a->images[i], ierr);
        }
        free(bytes);
        p->images[i].patches = ip.rows;
        p->images[i].positions = ip.pos;
        p->images[i].n = ip.n;
        p->owned[2 * i] = ip.rows;
        p->owned[2 * i + 1] = ip.pos;
        p->n_images++;
    }
    return 0;
}

/* Gives the conversation's image parts their soft-token counts from the loaded images, in order; with
 * --prompt the images come first in the user turn. */
static int attach_images(struct chat_conv *conv, const struct prompt *p, int from_prompt, char *err)
{
    int k = 0;
    if (from_prompt && p->n_images) {
        struct chat_message *msg = &conv->msgs[0];
        struct chat_part *parts = g4_calloc((size_t)(msg->n_parts + p->n_images), sizeof *parts);
        for (int i = 0; i < p->n_images; i++) parts[i].kind = CHAT_PART_IMAGE;
        memcpy(parts + p->n_images, msg->parts, (size_t)msg->n_parts * sizeof *parts);
        free(msg->parts);
        msg->parts = parts;
        msg->n_parts += p->n_images;
    }
    for (int i = 0; i < conv->n_msgs; i++)
        for (int j = 0; j < conv->msgs[i].n_parts; j++) {
            struct chat_part *part = &conv->msgs[i].parts[j];
            if (part->kind != CHAT_PART_IMAGE) continue;
            if (k >= p->n_images)
                return g4_errf(err, "the messages have more image parts than the %d --image file(s)", p->n_images);
            part->image_tokens = p->images[k++].n;
        }
    if (k != p->n_images)
        return g4_errf(err, "%d --image file(s) but the messages have %d image part(s)", p->n_images, k);
    return 0;
}

int prompt_build(const struct prompt_args *a, const struct g4_model *m, struct prompt *p, char *err)
{
    memset(p, 0, sizeof *p);
    if (a->n_images && m->cfg.vision.kind != CFG_VISION_EMBEDDER)
        return g4_errf(err, "--image: this model (%s) has no image embedder g4 can run", m->cfg.model_type);
    if (load_images(a, p, err)) return -1;
    if (a->ids) {
        if (parse_ids(a->ids, p, err)) return -1;
        for (int i = 0; i < p->n; i++)
            if (p->ids[i] >= m->cfg.text.vocab)
                return g4_errf(err, "--ids: token id %d at position %d is outside the vocabulary of %d", p->ids[i], i,
                               m->cfg.text.vocab);
        return 0;
    }
    {
        struct chat_conv conv = {0};
        struct chat_opts opts = {a->thinking, 1};
        struct sbuf text = {0};
        struct tok_ids ids = {0};
        int rc = -1;
        if (!m->tok) return g4_errf(err, "%s has no tokenizer.json; give --ids", m->dir);
        if (load_conversation(a, &conv, err)) goto done;
        if (attach_images(&conv, p, a->prompt != NULL, err)) goto done;
        if (chat_render(&conv, &opts, &text, err)) goto done;
        if (tok_encode(m->tok, text.p, text.n, 0, &ids, err)) goto done;
        p->ids = ids.ids;
        p->n = (int)ids.n;
        ids.ids = NULL;
        rc = 0;
    done:
        tok_ids_free(&ids);
        sbuf_free(&text);
        chat_conv_free(&conv);
        return rc;
    }
}

void prompt_free(struct prompt *p)
{
    free(p->ids);
    for (int i = 0; i < 2 * PROMPT_MAX_IMAGES; i++) free(p->owned[i]);
    memset(p, 0, sizeof *p);
}
