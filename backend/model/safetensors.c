/* safetensors — the reader: open, map, validate and index safetensors files (see safetensors.h).
 *
 * Every number in a header is untrusted: it is checked against the file's real size before anything is
 * computed from it, and products are overflow-checked. The reader never writes to the mapping, never
 * copies tensor data, and knows nothing about model structure. */
#include "model/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct st_file {
    char *path;            /* owned */
    const uint8_t *map;    /* size bytes, PROT_READ */
    size_t size;
    cJSON *metadata;       /* owned copy of "__metadata__", or NULL */
};

struct st_set {
    char *path;                /* what st_open was given, owned */
    struct st_file *files;     /* (n_files) owned */
    int n_files;
    struct st_tensor *tensors; /* (n, cap_t) owned; names owned */
    int n, cap_t;
    int32_t *slots;            /* (mask + 1) open-addressing table of tensor indices, -1 = empty */
    uint32_t mask;
    uint64_t total_bytes;
};

static const struct { const char *name; size_t size; } dtype_info[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1},       [ST_U8] = {"U8", 1},    [ST_I8] = {"I8", 1},
    [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
    [ST_U16] = {"U16", 2},         [ST_I16] = {"I16", 2},  [ST_F16] = {"F16", 2}, [ST_BF16] = {"BF16", 2},
    [ST_U32] = {"U32", 4},         [ST_I32] = {"I32", 4},  [ST_F32] = {"F32", 4},
    [ST_U64] = {"U64", 8},         [ST_I64] = {"I64", 8},  [ST_F64] = {"F64", 8},
};

const char *st_dtype_name(enum st_dtype dt)
{
    if (dt == ST_ANY_FLOAT) return "BF16|F16|F32";
    return (unsigned)dt < ST_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

size_t st_dtype_size(enum st_dtype dt)
{
    return (unsigned)dt < ST_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

int st_dtype_from_name(const char *s, enum st_dtype *out)
{
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (!strcmp(s, dtype_info[i].name)) { *out = (enum st_dtype)i; return 0; }
    return -1;
}

char *st_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t k = 0;
    if (!cap) return buf;
    buf[0] = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ---- name index ------------------------------------------------------------------------------------ */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Slot holding name, or the empty slot where it would go. */
static uint32_t slot_of(const struct st_set *s, const char *name)
{
    uint32_t i = (uint32_t)name_hash(name) & s->mask;
    while (s->slots[i] >= 0 && strcmp(s->tensors[s->slots[i]].name, name)) i = (i + 1) & s->mask;
    return i;
}

/* Grows the table so that it stays at most half full with `want` entries. */
static void index_reserve(struct st_set *s, int want)
{
    uint32_t cap = s->slots ? s->mask + 1 : 0;
    if (cap && (uint64_t)want * 2 <= cap) return;
    uint32_t ncap = cap ? cap : 64;
    while ((uint64_t)want * 2 > ncap) ncap *= 2;
    free(s->slots);
    s->slots = g4_malloc(ncap * sizeof *s->slots);
    memset(s->slots, 0xff, ncap * sizeof *s->slots);
    s->mask = ncap - 1;
    for (int t = 0; t < s->n; t++) s->slots[slot_of(s, s->tensors[t].name)] = t;
}

const struct st_tensor *st_find(const struct st_set *s, const char *name)
{
    if (!s->slots) return NULL;
    int32_t t = s->slots[slot_of(s, name)];
    return t >= 0 ? &s->tensors[t] : NULL;
}

/* ---- header parsing -------------------------------------------------------------------------------- */

/* A JSON number that is a non-negative integer <= 2^53 (exact in a double). */
static int json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

/* Short printable rendering of a JSON value for messages. */
static const char *json_brief(const cJSON *v, char *buf, size_t cap)
{
    char *p = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(buf, cap, "%s", p ? p : "(missing)");
    if (p && strlen(p) >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
    free(p);
    return buf;
}

/* Parses one tensor entry of file f (buffer of buf_len bytes) into t. 0 or -1 with err. */
static int parse_entry(const char *path, const char *name, const cJSON *e, uint64_t buf_len,
                       struct st_tensor *t, uint64_t *begin, uint64_t *end, char *err)
{
    char b1[96], b2[96];
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e))
        return g4_errf(err, "%s: tensor %s: entry is not an object (%s)", path, name, json_brief(e, b1, sizeof b1));
    if (!cJSON_IsString(dt))
        return g4_errf(err, "%s: tensor %s: \"dtype\" must be a string, got %s", path, name,
                       json_brief(dt, b1, sizeof b1));
    if (st_dtype_from_name(dt->valuestring, &t->dtype))
        return g4_errf(err, "%s: tensor %s: unknown dtype \"%.40s\"", path, name, dt->valuestring);
    if (!cJSON_IsArray(shape))
        return g4_errf(err, "%s: tensor %s: \"shape\" must be an array, got %s", path, name,
                       json_brief(shape, b1, sizeof b1));
    int nd = cJSON_GetArraySize(shape);
    if (nd > ST_MAX_DIMS)
        return g4_errf(err, "%s: tensor %s: %d dimensions is over the limit of %d", path, name, nd, ST_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1;
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++) {
        uint64_t v;
        if (json_uint(d, &v))
            return g4_errf(err, "%s: tensor %s: shape entry %d must be a non-negative integer, got %s", path,
                           name, i, json_brief(d, b1, sizeof b1));
        t->shape[i] = (int64_t)v;
        if (v && numel > (UINT64_C(1) << 62) / v)
            return g4_errf(err, "%s: tensor %s: shape %s overflows", path, name,
                           json_brief(shape, b1, sizeof b1));
        numel *= v;
    }
    t->numel = (int64_t)numel;
    size_t es = st_dtype_size(t->dtype);
    if (numel > (UINT64_C(1) << 62) / es)
        return g4_errf(err, "%s: tensor %s: shape %s overflows", path, name, json_brief(shape, b1, sizeof b1));
    t->nbytes = numel * es;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || json_uint(offs->child, begin) ||
        json_uint(offs->child->next, end))
        return g4_errf(err, "%s: tensor %s: \"data_offsets\" must be [begin, end] of non-negative integers, got %s",
                       path, name, json_brief(offs, b1, sizeof b1));
    if (*end < *begin)
        return g4_errf(err, "%s: tensor %s: data_offsets end %llu is before begin %llu", path, name,
                       (unsigned long long)*end, (unsigned long long)*begin);
    if (*end > buf_len)
        return g4_errf(err, "%s: tensor %s: data_offsets [%llu, %llu] run past the end of the data (%llu bytes)",
                       path, name, (unsigned long long)*begin, (unsigned long long)*end,
                       (unsigned long long)buf_len);
    if (*end - *begin != t->nbytes)
        return g4_errf(err, "%s: tensor %s: shape %s of %s needs %llu bytes but data_offsets span %llu", path,
                       name, st_shape_str(t->ndim, t->shape, b2, sizeof b2), st_dtype_name(t->dtype),
                       (unsigned long long)t->nbytes, (unsigned long long)(*end - *begin));
    return 0;
}

/* (offset, index) pairs sorted by offset, then index: the order tensors are iterated in. */
struct by_offset {
    uint64_t offset;
    int index;
};

static int cmp_offset(const void *a, const void *b)
{
    const struct by_offset *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Sorts the tensors [first, s->n) by file offset and checks that no two overlap. The index slots are
 * moved along. 0 or -1 with err. */
static int sort_and_check_file(struct st_set *s, int first, const char *path, char *err)
{
    int m = s->n - first;
    int *perm = g4_malloc((size_t)(m ? m : 1) * sizeof *perm);
    struct by_offset *bo = g4_malloc((size_t)(m ? m : 1) * sizeof *bo);
    struct st_tensor *tmp = g4_malloc((size_t)(m ? m : 1) * sizeof *tmp);
    int rc = 0;
    for (int i = 0; i < m; i++) bo[i] = (struct by_offset){s->tensors[first + i].file_offset, first + i};
    qsort(bo, (size_t)m, sizeof *bo, cmp_offset);
    for (int i = 0; i < m; i++) perm[i] = bo[i].index;
    const struct st_tensor *prev = NULL;
    for (int i = 0; i < m; i++) {
        const struct st_tensor *t = &s->tensors[perm[i]];
        if (!t->nbytes) continue;
        if (prev && prev->file_offset + prev->nbytes > t->file_offset) {
            rc = g4_errf(err, "%s: tensors %s and %s overlap (bytes %llu..%llu and %llu..%llu of the file)", path,
                         prev->name, t->name, (unsigned long long)prev->file_offset,
                         (unsigned long long)(prev->file_offset + prev->nbytes), (unsigned long long)t->file_offset,
                         (unsigned long long)(t->file_offset + t->nbytes));
            goto free_perm;
        }
        prev = t;
    }
    for (int i = 0; i < m; i++) tmp[i] = s->tensors[perm[i]];
    for (int i = 0; i < m; i++) {
        s->tensors[first + i] = tmp[i];
        s->slots[slot_of(s, tmp[i].name)] = first + i;
    }
free_perm:
    free(tmp);
    free(bo);
    free(perm);
    return rc;
}

/* Parses the header of the already-mapped file number fi and appends its tensors. 0 or -1 with err. */
static int parse_header(struct st_set *s, int fi, char *err)
{
    struct st_file *f = &s->files[fi];
    const char *path = f->path;
    char b1[96];
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->map[i];
    if (hlen > ST_MAX_HEADER_BYTES)
        return g4_errf(err, "%s: header length %llu is over the limit of %llu bytes", path,
                       (unsigned long long)hlen, (unsigned long long)ST_MAX_HEADER_BYTES);
    if (hlen > f->size - 8)
        return g4_errf(err, "%s: header length %llu runs past the end of the file (%zu bytes)", path,
                       (unsigned long long)hlen, f->size);
    const char *h = (const char *)f->map + 8, *end = NULL;
    size_t k = 0;
    while (k < hlen && h[k] == ' ') k++;
    if (k == hlen || h[k] != '{')
        return g4_errf(err, "%s: header is not a JSON object (it must start with '{')", path);
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)hlen, &end, 0);
    if (!root) {
        size_t at = end && end >= h ? (size_t)(end - h) : 0;
        return g4_errf(err, "%s: header is not valid JSON (error near byte %zu of %llu)", path, at,
                       (unsigned long long)hlen);
    }
    int rc = -1;
    for (size_t j = (size_t)(end - h); j < hlen; j++)
        if (h[j] != ' ' && h[j] != '\t' && h[j] != '\n' && h[j] != '\r') {
            g4_errf(err, "%s: header has bytes after its JSON object (at byte %zu of %llu)", path, j,
                    (unsigned long long)hlen);
            goto free_root;
        }
    if (!cJSON_IsObject(root)) {
        g4_errf(err, "%s: header is not a JSON object", path);
        goto free_root;
    }
    uint64_t data_start = 8 + hlen, buf_len = f->size - data_start;
    int first = s->n, n_meta = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        const char *name = e->string;
        if (!strcmp(name, "__metadata__")) {
            if (n_meta++) {
                g4_errf(err, "%s: header has __metadata__ twice", path);
                goto free_root;
            }
            if (!cJSON_IsObject(e)) {
                g4_errf(err, "%s: __metadata__ must be an object, got %s", path, json_brief(e, b1, sizeof b1));
                goto free_root;
            }
            for (const cJSON *m = e->child; m; m = m->next)
                if (!cJSON_IsString(m)) {
                    g4_errf(err, "%s: __metadata__ value \"%.60s\" must be a string, got %s", path, m->string,
                            json_brief(m, b1, sizeof b1));
                    goto free_root;
                }
            f->metadata = cJSON_Duplicate(e, 1);
            continue;
        }
        size_t nl = strlen(name);
        if (!nl || nl >= ST_MAX_NAME) {
            g4_errf(err, "%s: tensor name of %zu bytes (\"%.60s\") must be 1..%d bytes", path, nl, name,
                    ST_MAX_NAME - 1);
            goto free_root;
        }
        if (s->n >= ST_MAX_TENSORS) {
            g4_errf(err, "%s: more than %d tensors in the checkpoint", path, ST_MAX_TENSORS);
            goto free_root;
        }
        const struct st_tensor *old = st_find(s, name);
        if (old) {
            if (old->file == fi)
                g4_errf(err, "%s: tensor %s appears twice in the header", path, name);
            else
                g4_errf(err, "%s: tensor %s is also in %s (a tensor must be in one shard only)", path, name,
                        s->files[old->file].path);
            goto free_root;
        }
        struct st_tensor t;
        uint64_t b = 0, en = 0;
        memset(&t, 0, sizeof t);
        if (parse_entry(path, name, e, buf_len, &t, &b, &en, err)) goto free_root;
        t.file = fi;
        t.file_offset = data_start + b;
        t.data = f->map + t.file_offset;
        t.name = g4_strdup(name);
        if (s->n == s->cap_t) {
            s->cap_t = s->cap_t ? s->cap_t * 2 : 256;
            s->tensors = g4_realloc(s->tensors, (size_t)s->cap_t * sizeof *s->tensors);
        }
        index_reserve(s, s->n + 1);
        s->tensors[s->n] = t;
        s->slots[slot_of(s, t.name)] = s->n;
        s->n++;
        s->total_bytes += t.nbytes;
    }
    rc = sort_and_check_file(s, first, path, err);
free_root:
    cJSON_Delete(root);
    return rc;
}

/* Maps path read-only as file number s->n_files and parses it. 0 or -1 with err. */
static int add_file(struct st_set *s, const char *path, char *err)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return g4_errf(err, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return g4_errf(err, "%s: not a regular file", path);
    }
    if (sb.st_size < 8) {
        close(fd);
        return g4_errf(err, "%s: %lld bytes is too short for a safetensors file (it needs an 8-byte header length)",
                       path, (long long)sb.st_size);
    }
    if (s->n_files >= ST_MAX_FILES) {
        close(fd);
        return g4_errf(err, "%s: more than %d files in one checkpoint", path, ST_MAX_FILES);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return g4_errf(err, "%s: cannot map: %s", path, strerror(errno));
    s->files = g4_realloc(s->files, (size_t)(s->n_files + 1) * sizeof *s->files);
    struct st_file *f = &s->files[s->n_files++];
    f->path = g4_strdup(path);
    f->map = map;
    f->size = (size_t)sb.st_size;
    f->metadata = NULL;
    return parse_header(s, s->n_files - 1, err);
}

/* ---- sharded checkpoints --------------------------------------------------------------------------- */

/* Opens the shards named by dir/model.safetensors.index.json and checks that every tensor it lists is in
 * the shard it names. 0 or -1 with err. */
static int open_index(struct st_set *s, const char *dir, const char *index_path, char *err)
{
    size_t len;
    char b1[96], shard_path[4096];
    char *text = util_read_file(index_path, ST_MAX_INDEX_BYTES, &len, err);
    if (!text) return -1;
    int rc = -1;
    const char **shards = NULL; /* unique shard names in order of first mention; point into root */
    int n_shards = 0;
    unsigned char *seen = NULL; /* (s->n) per tensor: listed by the index already */
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!root || !cJSON_IsObject(root)) {
        g4_errf(err, "%s: not a JSON object", index_path);
        goto free_all;
    }
    if (!cJSON_IsObject(wm) || !wm->child) {
        g4_errf(err, "%s: \"weight_map\" must be a non-empty object, got %s", index_path,
                json_brief(wm, b1, sizeof b1));
        goto free_all;
    }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e)) {
            g4_errf(err, "%s: weight_map entry for tensor %s must be a shard file name, got %s", index_path,
                    e->string, json_brief(e, b1, sizeof b1));
            goto free_all;
        }
        const char *sh = e->valuestring;
        if (!*sh || strchr(sh, '/') || !strcmp(sh, ".") || !strcmp(sh, "..")) {
            g4_errf(err, "%s: weight_map entry for tensor %s names \"%.80s\", which is not a file name in %s",
                    index_path, e->string, sh, dir);
            goto free_all;
        }
        int k = n_shards - 1;
        while (k >= 0 && strcmp(shards[k], sh)) k--;
        if (k < 0) {
            if (n_shards >= ST_MAX_FILES) {
                g4_errf(err, "%s: more than %d shards", index_path, ST_MAX_FILES);
                goto free_all;
            }
            shards = g4_realloc(shards, (size_t)(n_shards + 1) * sizeof *shards);
            shards[n_shards++] = sh;
        }
    }
    for (int k = 0; k < n_shards; k++) {
        char sub[G4_ERR_MAX];
        if (util_path_join(shard_path, sizeof shard_path, dir, shards[k])) {
            g4_errf(err, "%s: shard path for %.80s is too long", index_path, shards[k]);
            goto free_all;
        }
        if (add_file(s, shard_path, sub)) {
            g4_errf(err, "%s names shard %s: %s", index_path, shards[k], sub);
            goto free_all;
        }
    }
    /* every listed tensor must be in its shard (file k is shard k); a name listed twice is a broken index */
    seen = g4_calloc((size_t)(s->n ? s->n : 1), 1);
    for (const cJSON *e = wm->child; e; e = e->next) {
        const struct st_tensor *t = st_find(s, e->string);
        if (!t || strcmp(shards[t->file], e->valuestring)) {
            g4_errf(err, "%s lists tensor %s in shard %s, but %s has no such tensor", index_path, e->string,
                    e->valuestring, e->valuestring);
            goto free_all;
        }
        if (seen[t - s->tensors]++) {
            g4_errf(err, "%s lists tensor %s twice", index_path, e->string);
            goto free_all;
        }
    }
    rc = 0;
free_all:
    free(seen);
    free(shards);
    cJSON_Delete(root);
    free(text);
    return rc;
}

struct st_set *st_open(const char *path, char *err)
{
    struct stat sb;
    char p[4096];
    struct st_set *s = g4_calloc(1, sizeof *s);
    s->path = g4_strdup(path);
    if (stat(path, &sb) != 0) {
        g4_errf(err, "%s: cannot open: %s", path, strerror(errno));
        goto close_set;
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (add_file(s, path, err)) goto close_set;
        return s;
    }
    /* transformers looks for the single file first, then the index */
    if (util_path_join(p, sizeof p, path, "model.safetensors")) {
        g4_errf(err, "%s: path too long", path);
        goto close_set;
    }
    if (stat(p, &sb) == 0) {
        if (add_file(s, p, err)) goto close_set;
        return s;
    }
    util_path_join(p, sizeof p, path, "model.safetensors.index.json");
    if (stat(p, &sb) == 0) {
        if (open_index(s, path, p, err)) goto close_set;
        return s;
    }
    g4_errf(err, "%s: no model.safetensors or model.safetensors.index.json in this directory", path);
close_set:
    st_close(s);
    return NULL;
}

void st_close(struct st_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) {
        munmap((void *)s->files[i].map, s->files[i].size);
        cJSON_Delete(s->files[i].metadata);
        free(s->files[i].path);
    }
    for (int i = 0; i < s->n; i++) free((char *)s->tensors[i].name);
    free(s->files);
    free(s->tensors);
    free(s->slots);
    free(s->path);
    free(s);
}

/* ---- queries --------------------------------------------------------------------------------------- */

static int dtype_ok(enum st_dtype want, enum st_dtype have)
{
    if (want == ST_ANY_FLOAT) return have == ST_BF16 || have == ST_F16 || have == ST_F32;
    return want == have;
}

const struct st_tensor *st_require(const struct st_set *s, const char *name, enum st_dtype dt, int ndim,
                                   const int64_t *shape, char *err)
{
    char want[160], have[160];
    const struct st_tensor *t = st_find(s, name);
    if (!t) {
        g4_errf(err, "%s: tensor %s is missing", s->path, name);
        return NULL;
    }
    int ok = dtype_ok(dt, t->dtype);
    if (ndim >= 0 && t->ndim != ndim) ok = 0;
    for (int i = 0; ok && shape && i < ndim; i++)
        if (shape[i] >= 0 && shape[i] != t->shape[i]) ok = 0;
    if (ok) return t;
    if (ndim >= 0 && shape)
        st_shape_str(ndim, shape, want, sizeof want);
    else if (ndim >= 0)
        snprintf(want, sizeof want, "(%d dimensions)", ndim);
    else
        want[0] = 0;
    st_shape_str(t->ndim, t->shape, have, sizeof have);
    g4_errf(err, "%s: tensor %s: expected %s %s, found %s %s", s->files[t->file].path, name, st_dtype_name(dt),
            want, st_dtype_name(t->dtype), have);
    return NULL;
}

int st_count(const struct st_set *s) { return s->n; }

const struct st_tensor *st_at(const struct st_set *s, int i)
{
    G4_CHECK(i >= 0 && i < s->n, "tensor index %d of %d", i, s->n);
    return &s->tensors[i];
}

uint64_t st_total_bytes(const struct st_set *s) { return s->total_bytes; }

int st_file_count(const struct st_set *s) { return s->n_files; }

const char *st_file_path(const struct st_set *s, int i)
{
    G4_CHECK(i >= 0 && i < s->n_files, "file index %d of %d", i, s->n_files);
    return s->files[i].path;
}

const char *st_path(const struct st_set *s) { return s->path; }

const char *st_metadata(const struct st_set *s, const char *key)
{
    for (int i = 0; i < s->n_files; i++) {
        const cJSON *v = s->files[i].metadata ? cJSON_GetObjectItemCaseSensitive(s->files[i].metadata, key) : NULL;
        if (cJSON_IsString(v)) return v->valuestring;
    }
    return NULL;
}
