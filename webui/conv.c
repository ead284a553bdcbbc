/* conv — conversations: messages, JSON for localStorage, the index, and chat requests (see conv.h).
 * cJSON builds and parses every JSON string, so text with quotes, backslashes or control bytes survives. */
#include "conv.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) abort();
    memcpy(p, s, n);
    return p;
}

/* Copies s into dst (cap bytes), cutting at a UTF-8 character boundary. */
static void copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    }
    memcpy(dst, s, n);
    dst[n] = 0;
}

void conv_init(struct conv *c, const char *id)
{
    memset(c, 0, sizeof *c);
    copy_cut(c->id, sizeof c->id, id, strlen(id));
}

static void msg_free(struct conv_msg *m)
{
    wbuf_free(&m->text);
    for (int i = 0; i < m->n_img; i++) free(m->img[i].thumb);
    free(m->img);
    memset(m, 0, sizeof *m);
}

void conv_free(struct conv *c)
{
    for (int i = 0; i < c->n_msg; i++) msg_free(&c->msg[i]);
    free(c->msg);
    memset(c, 0, sizeof *c);
}

struct conv_msg *conv_add(struct conv *c, enum conv_role role)
{
    if (c->n_msg == c->cap_msg) {
        int cap = c->cap_msg ? c->cap_msg * 2 : 8;
        struct conv_msg *p = realloc(c->msg, (size_t)cap * sizeof *p);
        if (!p) abort();
        c->msg = p;
        c->cap_msg = cap;
    }
    struct conv_msg *m = &c->msg[c->n_msg++];
    memset(m, 0, sizeof *m);
    m->role = role;
    wbuf_add(&m->text, "", 0);
    return m;
}

void conv_truncate(struct conv *c, int n)
{
    while (c->n_msg > n) msg_free(&c->msg[--c->n_msg]);
}

int conv_add_image(struct conv_msg *m, const struct conv_image *im)
{
    if (m->n_img >= CONV_MAX_IMAGES) return -1;
    struct conv_image *p = realloc(m->img, (size_t)(m->n_img + 1) * sizeof *p);
    if (!p) abort();
    m->img = p;
    p[m->n_img] = *im;
    p[m->n_img].thumb = im->thumb ? dup_str(im->thumb) : NULL;
    m->n_img++;
    return 0;
}

void conv_retitle(struct conv *c)
{
    for (int i = 0; i < c->n_msg; i++) {
        const struct conv_msg *m = &c->msg[i];
        if (m->role != CONV_USER) continue;
        const char *t = wbuf_cstr(&m->text);
        while (*t == ' ' || *t == '\n' || *t == '\t') t++;
        size_t n = strcspn(t, "\n");
        if (!n && m->n_img) copy_cut(c->title, sizeof c->title, "Image", 5);
        else copy_cut(c->title, sizeof c->title, t, n);
        return;
    }
    c->title[0] = 0;
}

/* ---- JSON ---------------------------------------------------------------------------------------------- */

char *conv_to_json(const struct conv *c)
{
    cJSON *o = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(o, "messages");
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "title", c->title);
    cJSON_AddNumberToObject(o, "updated", c->updated);
    cJSON_AddNumberToObject(o, "session", c->session);
    for (int i = 0; i < c->n_msg; i++) {
        const struct conv_msg *m = &c->msg[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "role", m->role == CONV_USER ? "user" : "assistant");
        cJSON_AddStringToObject(j, "text", wbuf_cstr(&m->text));
        if (m->n_img) {
            cJSON *imgs = cJSON_AddArrayToObject(j, "images");
            for (int k = 0; k < m->n_img; k++) {
                const struct conv_image *im = &m->img[k];
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "name", im->name);
                if (im->att) cJSON_AddNumberToObject(x, "att", im->att);
                if (im->thumb) cJSON_AddStringToObject(x, "thumb", im->thumb);
                cJSON_AddNumberToObject(x, "src_w", im->src_w);
                cJSON_AddNumberToObject(x, "src_h", im->src_h);
                cJSON_AddNumberToObject(x, "grid_w", im->grid_w);
                cJSON_AddNumberToObject(x, "grid_h", im->grid_h);
                cJSON_AddNumberToObject(x, "patches", im->patches);
                cJSON_AddItemToArray(imgs, x);
            }
        }
        if (m->role == CONV_ASSISTANT) {
            cJSON_AddStringToObject(j, "finish", m->state == CONV_DONE ? m->finish : "error");
            if (m->error[0]) cJSON_AddStringToObject(j, "error", m->error);
            cJSON_AddNumberToObject(j, "ttft_ms", m->ttft_ms);
            cJSON_AddNumberToObject(j, "tps", m->tps);
            cJSON_AddNumberToObject(j, "tokens", m->tokens);
        }
        cJSON_AddItemToArray(msgs, j);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) abort();
    return s;
}

static double num_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int conv_from_json(const char *s, size_t n, struct conv *c, char *err)
{
    cJSON *o = cJSON_ParseWithLength(s, n), *msgs, *j;
    const char *id;
    conv_init(c, "");
    if (!cJSON_IsObject(o) || !(id = str_of(o, "id")) || !cJSON_IsArray(msgs = cJSON_GetObjectItemCaseSensitive(o, "messages"))) {
        snprintf(err, 200, "stored conversation is not valid JSON of the expected shape");
        cJSON_Delete(o);
        return -1;
    }
    conv_init(c, id);
    if (str_of(o, "title")) copy_cut(c->title, sizeof c->title, str_of(o, "title"), strlen(str_of(o, "title")));
    c->updated = num_of(o, "updated");
    c->session = num_of(o, "session");
    cJSON_ArrayForEach(j, msgs)
    {
        const char *role = str_of(j, "role"), *text = str_of(j, "text"), *fin;
        const cJSON *imgs = cJSON_GetObjectItemCaseSensitive(j, "images"), *x;
        if (!role || !text) continue;
        struct conv_msg *m = conv_add(c, strcmp(role, "user") ? CONV_ASSISTANT : CONV_USER);
        wbuf_str(&m->text, text);
        cJSON_ArrayForEach(x, imgs)
        {
            struct conv_image im = {0};
            const char *nm = str_of(x, "name");
            if (nm) copy_cut(im.name, sizeof im.name, nm, strlen(nm));
            im.thumb = (char *)str_of(x, "thumb");
            im.att = (int)num_of(x, "att");
            im.src_w = (int)num_of(x, "src_w"), im.src_h = (int)num_of(x, "src_h");
            im.grid_w = (int)num_of(x, "grid_w"), im.grid_h = (int)num_of(x, "grid_h");
            im.patches = (int)num_of(x, "patches");
            conv_add_image(m, &im); /* copies the thumb */
        }
        if (m->role == CONV_ASSISTANT) {
            fin = str_of(j, "finish");
            copy_cut(m->finish, sizeof m->finish, fin ? fin : "error", strlen(fin ? fin : "error"));
            if (str_of(j, "error")) copy_cut(m->error, sizeof m->error, str_of(j, "error"), strlen(str_of(j, "error")));
            m->ttft_ms = num_of(j, "ttft_ms");
            m->tps = num_of(j, "tps");
            m->tokens = (int)num_of(j, "tokens");
        }
    }
    cJSON_Delete(o);
    return 0;
}

/* ---- index --------------------------------------------------------------------------------------------- */

const char *conv_index_touch(struct conv_index *ix, const struct conv *c, char dropped[CONV_ID_MAX])
{
    struct conv_entry e = {{0}, {0}, c->updated};
    const char *out = NULL;
    copy_cut(e.id, sizeof e.id, c->id, strlen(c->id));
    copy_cut(e.title, sizeof e.title, c->title, strlen(c->title));
    conv_index_remove(ix, c->id);
    if (ix->n == CONV_MAX_STORED) {
        copy_cut(dropped, CONV_ID_MAX, ix->e[ix->n - 1].id, strlen(ix->e[ix->n - 1].id));
        out = dropped;
        ix->n--;
    }
    memmove(&ix->e[1], &ix->e[0], (size_t)ix->n * sizeof ix->e[0]);
    ix->e[0] = e;
    ix->n++;
    return out;
}

void conv_index_remove(struct conv_index *ix, const char *id)
{
    for (int i = 0; i < ix->n; i++)
        if (!strcmp(ix->e[i].id, id)) {
            memmove(&ix->e[i], &ix->e[i + 1], (size_t)(ix->n - i - 1) * sizeof ix->e[0]);
            ix->n--;
            return;
        }
}

char *conv_index_to_json(const struct conv_index *ix)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < ix->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", ix->e[i].id);
        cJSON_AddStringToObject(o, "title", ix->e[i].title);
        cJSON_AddNumberToObject(o, "updated", ix->e[i].updated);
        cJSON_AddItemToArray(a, o);
    }
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    if (!s) abort();
    return s;
}

int conv_index_from_json(const char *s, size_t n, struct conv_index *ix)
{
    cJSON *a = cJSON_ParseWithLength(s, n), *o;
    memset(ix, 0, sizeof *ix);
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return -1;
    }
    cJSON_ArrayForEach(o, a)
    {
        const char *id = str_of(o, "id"), *t = str_of(o, "title");
        if (!id || ix->n == CONV_MAX_STORED) continue;
        struct conv_entry *e = &ix->e[ix->n++];
        copy_cut(e->id, sizeof e->id, id, strlen(id));
        copy_cut(e->title, sizeof e->title, t ? t : "", strlen(t ? t : ""));
        e->updated = num_of(o, "updated");
    }
    cJSON_Delete(a);
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------------------ */

int conv_count_images(const struct conv *c, int n)
{
    int k = 0;
    for (int i = 0; i < n && i < c->n_msg; i++) k += c->msg[i].n_img;
    return k;
}

char *conv_request(const struct conv *c, int n, const char *req_id, const uint32_t *image_ids, int max_tokens)
{
    cJSON *o = cJSON_CreateObject(), *msgs;
    int k = 0;
    cJSON_AddStringToObject(o, "type", "chat");
    cJSON_AddStringToObject(o, "id", req_id);
    msgs = cJSON_AddArrayToObject(o, "messages");
    for (int i = 0; i < n && i < c->n_msg; i++) {
        const struct conv_msg *m = &c->msg[i];
        cJSON *j = cJSON_CreateObject(), *parts;
        if (m->role == CONV_ASSISTANT) {
            k += m->n_img;
            if (!m->text.n) {
                cJSON_Delete(j);
                continue;
            }
            cJSON_AddStringToObject(j, "role", "assistant");
            cJSON_AddStringToObject(j, "content", wbuf_cstr(&m->text));
            cJSON_AddItemToArray(msgs, j);
            continue;
        }
        cJSON_AddStringToObject(j, "role", "user");
        parts = cJSON_AddArrayToObject(j, "content");
        for (int q = 0; q < m->n_img; q++, k++) {
            if (!image_ids || !image_ids[k]) continue;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "type", "image");
            cJSON_AddNumberToObject(p, "image_id", image_ids[k]);
            cJSON_AddItemToArray(parts, p);
        }
        if (m->text.n || !cJSON_GetArraySize(parts)) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "type", "text");
            cJSON_AddStringToObject(p, "text", wbuf_cstr(&m->text));
            cJSON_AddItemToArray(parts, p);
        }
        cJSON_AddItemToArray(msgs, j);
    }
    if (max_tokens > 0) cJSON_AddNumberToObject(o, "max_tokens", max_tokens);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) abort();
    return s;
}
