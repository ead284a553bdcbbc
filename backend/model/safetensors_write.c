/* safetensors_write — writes safetensors files that the official library (and so transformers) accepts.
 *
 * Used by `g4 make-tiny-model` and by tests that build checkpoints. The layout follows the safetensors
 * library: the JSON header padded with spaces to a multiple of 8 bytes, then the tensors back to back with
 * no gaps (the library rejects gaps), larger element sizes first so that every tensor starts aligned to its
 * element size. It writes to PATH.tmp and renames, so a crash never leaves a half-written PATH. It knows
 * nothing about models. */
#include "model/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte buffer, local to the writer. */
struct wbuf {
    char *p;
    size_t n, cap;
};

static void wb_put(struct wbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
        b->p = g4_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void wb_str(struct wbuf *b, const char *s) { wb_put(b, s, strlen(s)); }

/* Appends s as a JSON string literal (quotes, escapes; UTF-8 passes through). */
static void wb_json_str(struct wbuf *b, const char *s)
{
    char esc[8];
    wb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            wb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            wb_put(b, esc, 6);
        } else {
            wb_put(b, (const char *)&c, 1);
        }
    }
    wb_put(b, "\"", 1);
}

static int cmp_name(const void *a, const void *b)
{
    const struct st_write_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Checks one tensor description; sets *nbytes. 0 or -1 with err. */
static int check_tensor(const char *path, const struct st_write_tensor *t, uint64_t *nbytes, char *err)
{
    char b[160];
    if (!t->name || !t->name[0] || strlen(t->name) >= ST_MAX_NAME || !strcmp(t->name, "__metadata__"))
        return g4_errf(err, "%s: invalid tensor name \"%.80s\"", path, t->name ? t->name : "(null)");
    if (!st_dtype_size(t->dtype)) return g4_errf(err, "%s: tensor %s: invalid dtype %d", path, t->name, t->dtype);
    if (t->ndim < 0 || t->ndim > ST_MAX_DIMS)
        return g4_errf(err, "%s: tensor %s: %d dimensions (0..%d allowed)", path, t->name, t->ndim, ST_MAX_DIMS);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t v = (uint64_t)t->shape[i];
        if (t->shape[i] < 0 || (v && numel > (UINT64_C(1) << 62) / v))
            return g4_errf(err, "%s: tensor %s: bad shape %s", path, t->name,
                           st_shape_str(t->ndim, t->shape, b, sizeof b));
        numel *= v;
    }
    if (numel > (UINT64_C(1) << 62) / st_dtype_size(t->dtype))
        return g4_errf(err, "%s: tensor %s: bad shape %s", path, t->name, st_shape_str(t->ndim, t->shape, b, sizeof b));
    *nbytes = numel * st_dtype_size(t->dtype);
    if (*nbytes && !t->data) return g4_errf(err, "%s: tensor %s: no data", path, t->name);
    return 0;
}

/* Builds the header JSON for the tensors in `order`. 0 or -1 with err (bad metadata). */
static int build_header(const char *path, const struct st_write_tensor *const *order, const uint64_t *nbytes,
                        int n, const cJSON *metadata, struct wbuf *h, char *err)
{
    char num[64];
    int has_format = 0;
    if (metadata && !cJSON_IsObject(metadata)) return g4_errf(err, "%s: metadata must be a JSON object", path);
    wb_str(h, "{\"__metadata__\":{");
    for (const cJSON *m = metadata ? metadata->child : NULL; m; m = m->next) {
        if (!cJSON_IsString(m)) return g4_errf(err, "%s: metadata value \"%.60s\" must be a string", path, m->string);
        if (!strcmp(m->string, "format")) has_format = 1;
        if (m != metadata->child) wb_str(h, ",");
        wb_json_str(h, m->string);
        wb_str(h, ":");
        wb_json_str(h, m->valuestring);
    }
    if (!has_format) wb_str(h, metadata && metadata->child ? ",\"format\":\"pt\"" : "\"format\":\"pt\"");
    wb_str(h, "}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const struct st_write_tensor *t = order[i];
        wb_str(h, ",");
        wb_json_str(h, t->name);
        wb_str(h, ":{\"dtype\":\"");
        wb_str(h, st_dtype_name(t->dtype));
        wb_str(h, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            snprintf(num, sizeof num, d ? ",%lld" : "%lld", (long long)t->shape[d]);
            wb_str(h, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + nbytes[i]));
        wb_str(h, num);
        off += nbytes[i];
    }
    wb_str(h, "}");
    while (h->n % 8) wb_put(h, " ", 1);
    return 0;
}

int st_write(const char *path, const struct st_write_tensor *t, int n, const cJSON *metadata, char *err)
{
    char tmp[4096];
    int rc = -1;
    FILE *f = NULL;
    struct wbuf h = {0};
    const struct st_write_tensor **order = g4_malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    uint64_t *nb = g4_malloc((size_t)(n > 0 ? n : 1) * sizeof *nb);     /* by the caller's index */
    uint64_t *nbytes = g4_malloc((size_t)(n > 0 ? n : 1) * sizeof *nbytes); /* by position in the file */
    if (n < 0 || n > ST_MAX_TENSORS) {
        g4_errf(err, "%s: %d tensors (0..%d allowed)", path, n, ST_MAX_TENSORS);
        goto free_bufs;
    }
    for (int i = 0; i < n; i++)
        if (check_tensor(path, &t[i], &nb[i], err)) goto free_bufs;
    /* duplicates: sort pointers by name and compare neighbours */
    for (int i = 0; i < n; i++) order[i] = &t[i];
    qsort(order, (size_t)n, sizeof *order, cmp_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(order[i]->name, order[i - 1]->name)) {
            g4_errf(err, "%s: tensor %s given twice", path, order[i]->name);
            goto free_bufs;
        }
    /* stable order by element size, largest first, keeping the caller's order within a size */
    int k = 0;
    for (size_t es = 8; es >= 1; es /= 2)
        for (int i = 0; i < n; i++)
            if (st_dtype_size(t[i].dtype) == es) {
                nbytes[k] = nb[i];
                order[k++] = &t[i];
            }
    if (build_header(path, order, nbytes, n, metadata, &h, err)) goto free_bufs;
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        g4_errf(err, "%s: path too long", path);
        goto free_bufs;
    }
    f = fopen(tmp, "wb");
    if (!f) {
        g4_errf(err, "%s: cannot create: %s", tmp, strerror(errno));
        goto free_bufs;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
    for (int i = 0; ok && i < n; i++)
        if (nbytes[i] && fwrite(order[i]->data, 1, nbytes[i], f) != nbytes[i]) ok = 0;
    if (fclose(f) != 0) ok = 0;
    if (!ok) {
        g4_errf(err, "%s: write failed: %s", tmp, strerror(errno));
        remove(tmp);
        goto free_bufs;
    }
    if (rename(tmp, path) != 0) {
        g4_errf(err, "%s: cannot rename from %s: %s", path, tmp, strerror(errno));
        remove(tmp);
        goto free_bufs;
    }
    rc = 0;
free_bufs:
    free(h.p);
    free(nb);
    free(nbytes);
    free(order);
    return rc;
}
