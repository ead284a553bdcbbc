/* Unit tests for backend/model/safetensors*.c: round trips through the writer (BF16, F16, F32, U8, I32, U32,
 * I64; the header also parsed without the reader), sharded checkpoints, and one hand-built hostile file per
 * failure the reader must report (each message must name the file, the tensor, and the limit where one
 * applies). */
#include "test.h"

#include <stdint.h>
#include <sys/stat.h>

#include "model/safetensors.h"

static char dir[64];

/* Writes raw bytes to dir/name; returns the path (static buffer rotated among 4). */
static const char *put(const char *name, const void *bytes, size_t n)
{
    static char paths[4][256];
    static int k;
    char err[G4_ERR_MAX];
    char *p = paths[k++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    if (util_write_file(p, bytes, n, err)) { fprintf(stderr, "%s\n", err); exit(2); }
    return p;
}

/* Builds a file: 8-byte little-endian length (hlen_override when non-zero, else strlen(json)), the JSON,
 * then data_len bytes of pattern data. */
static const char *put_st(const char *name, const char *json, uint64_t hlen_override, size_t data_len)
{
    size_t jl = strlen(json), n = 8 + jl + data_len;
    unsigned char *b = malloc(n);
    uint64_t hl = hlen_override ? hlen_override : jl;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hl >> (8 * i));
    memcpy(b + 8, json, jl);
    for (size_t i = 0; i < data_len; i++) b[8 + jl + i] = (unsigned char)(i * 7 + 1);
    const char *p = put(name, b, n);
    free(b);
    return p;
}

/* Opens path expecting failure; checks err contains each non-NULL needle. */
static void expect_open_fails(const char *path, const char *n1, const char *n2, const char *n3)
{
    char err[G4_ERR_MAX] = "";
    struct st_set *s = st_open(path, err);
    EXPECTF(s == NULL, "%s should not open", path);
    if (getenv("G4_TEST_VERBOSE")) fprintf(stderr, "    err: %s\n", err);
    st_close(s);
    if (n1) EXPECT_STR_HAS(err, n1);
    if (n2) EXPECT_STR_HAS(err, n2);
    if (n3) EXPECT_STR_HAS(err, n3);
}

/* The header entry of tensor `name` in a safetensors file's bytes (raw), parsed independently of the reader;
 * the caller deletes *root. */
static const cJSON *raw_entry(const char *raw, size_t len, const char *name, cJSON **root)
{
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | (unsigned char)raw[i];
    *root = len >= 8 && hl <= len - 8 ? cJSON_ParseWithLength(raw + 8, (size_t)hl) : NULL;
    return *root ? cJSON_GetObjectItemCaseSensitive(*root, name) : NULL;
}

static void test_round_trip(void)
{
    char err[G4_ERR_MAX], path[256];
    uint16_t bf[6] = {0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0xbf80};
    float f32[4] = {1.5f, -2.0f, 3.25f, 0.0f};
    uint8_t u8[5] = {1, 2, 3, 4, 5};
    int64_t i64[2] = {-7, 1234567890123LL};
    float scalar = 42.0f;
    int32_t i32[4] = {-1, INT32_MIN, INT32_MAX, 7};                   /* sign bits must survive */
    uint32_t u32[3] = {0xffffffffu, 0x80000000u, 1};                  /* values past INT32_MAX */
    uint16_t f16[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};               /* 1, -2, 65504, the least subnormal */
    struct st_write_tensor w[8] = {
        {"model.a.weight", ST_BF16, 2, {2, 3}, bf},
        {"u8", ST_U8, 1, {5}, u8},
        {"f32 \"quoted\\name\"", ST_F32, 1, {4}, f32},
        {"ids", ST_I64, 1, {2}, i64},
        {"scalar", ST_F32, 0, {0}, &scalar},
        {"i32", ST_I32, 2, {2, 2}, i32},
        {"u32", ST_U32, 1, {3}, u32},
        {"f16", ST_F16, 3, {1, 2, 2}, f16},
    };
    static const uint64_t nbytes[8] = {12, 5, 16, 16, 4, 16, 12, 8};
    static const int64_t numel[8] = {6, 5, 4, 2, 1, 4, 3, 4};
    /* layout: largest element size first, given order kept among equals */
    static const char *const order[8] = {"ids", "f32 \"quoted\\name\"", "scalar", "i32", "u32",
                                         "model.a.weight", "f16", "u8"};
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "origin", "g4 test");
    snprintf(path, sizeof path, "%s/rt.safetensors", dir);
    EXPECT(st_write(path, w, 8, meta, err) == 0);
    cJSON_Delete(meta);

    struct st_set *s = st_open(path, err);
    EXPECTF(s != NULL, "%s", err);
    if (!s) return;
    EXPECT(st_count(s) == 8);
    EXPECT(st_file_count(s) == 1);
    EXPECT(st_total_bytes(s) == 12 + 5 + 16 + 16 + 4 + 16 + 12 + 8);
    EXPECT(!strcmp(st_metadata(s, "origin"), "g4 test"));
    EXPECT(!strcmp(st_metadata(s, "format"), "pt")); /* added because the caller gave none */
    EXPECT(st_metadata(s, "nope") == NULL);
    for (int i = 0; i < 8; i++) {
        const struct st_tensor *t = st_find(s, w[i].name);
        EXPECTF(t != NULL, "%s", w[i].name);
        if (!t) continue;
        EXPECTF(t->dtype == w[i].dtype && t->ndim == w[i].ndim, "%s: dtype %s ndim %d", w[i].name,
                st_dtype_name(t->dtype), t->ndim);
        for (int d = 0; d < t->ndim; d++) EXPECT(t->shape[d] == w[i].shape[d]);
        EXPECTF(t->nbytes == nbytes[i] && t->numel == numel[i], "%s: %llu bytes, %lld elements", w[i].name,
                (unsigned long long)t->nbytes, (long long)t->numel);
        EXPECT(t->nbytes == nbytes[i] && !memcmp(t->data, w[i].data, nbytes[i]));
        EXPECTF(t->file_offset % st_dtype_size(t->dtype) == 0, "%s at %llu", t->name,
                (unsigned long long)t->file_offset);
    }
    /* the values read back through the typed pointers, not only as bytes */
    {
        const int32_t *ri = st_find(s, "i32")->data;
        const uint32_t *ru = st_find(s, "u32")->data;
        const uint16_t *rh = st_find(s, "f16")->data;
        EXPECT(ri[0] == -1 && ri[1] == INT32_MIN && ri[2] == INT32_MAX && ri[3] == 7);
        EXPECT(ru[0] == 0xffffffffu && ru[1] == 0x80000000u && ru[2] == 1);
        EXPECT(rh[0] == 0x3c00 && rh[1] == 0xc000 && rh[2] == 0x7bff && rh[3] == 0x0001);
    }
    /* layout: 8-byte aligned data start, largest element size first, given order kept, no gaps */
    const struct st_tensor *t0 = st_at(s, 0);
    EXPECT(t0->file_offset % 8 == 0);
    for (int i = 0; i < 8; i++) EXPECTF(!strcmp(st_at(s, i)->name, order[i]), "tensor %d is %s", i, st_at(s, i)->name);
    for (int i = 1; i < 8; i++)
        EXPECT(st_at(s, i)->file_offset == st_at(s, i - 1)->file_offset + st_at(s, i - 1)->nbytes);
    const struct st_tensor *last = st_at(s, 7);
    size_t flen = 0;
    char *raw = util_read_file(path, 1 << 20, &flen, err);
    EXPECT(raw && last->file_offset + last->nbytes == flen);
    if (!raw) goto done;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | (unsigned char)raw[i];
    EXPECT(hl % 8 == 0 && raw[8 + hl - 1] != '\0');
    /* the header itself, read without the reader: the safetensors dtype names, shapes and byte ranges */
    {
        static const char *const names[3] = {"i32", "u32", "f16"}, *const dts[3] = {"I32", "U32", "F16"};
        static const int shapes[3][3] = {{2, 2, -1}, {3, -1, -1}, {1, 2, 2}};
        for (int k = 0; k < 3; k++) {
            cJSON *root;
            const cJSON *e = raw_entry(raw, flen, names[k], &root);
            const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
            const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
            const struct st_tensor *t = st_find(s, names[k]);
            int nd = 0;
            EXPECTF(e != NULL, "no header entry for %s", names[k]);
            const char *dt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "dtype"));
            EXPECTF(dt && !strcmp(dt, dts[k]), "%s should be written as %s, got %s", names[k], dts[k], dt ? dt : "-");
            while (nd < 3 && shapes[k][nd] >= 0) {
                EXPECT(cJSON_GetArrayItem(sh, nd) && cJSON_GetArrayItem(sh, nd)->valueint == shapes[k][nd]);
                nd++;
            }
            EXPECT(cJSON_GetArraySize(sh) == nd);
            EXPECT(cJSON_GetArraySize(off) == 2 && t &&
                   (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble + 8 + hl == t->file_offset &&
                   (uint64_t)(cJSON_GetArrayItem(off, 1)->valuedouble - cJSON_GetArrayItem(off, 0)->valuedouble) ==
                       t->nbytes);
            cJSON_Delete(root);
        }
    }
done:
    free(raw);
    EXPECT(st_find(s, "scalar")->numel == 1);
    st_close(s);
}

static void test_require_messages(void)
{
    char err[G4_ERR_MAX], path[256];
    uint16_t d[6] = {0};
    struct st_write_tensor w[1] = {{"layers.0.q_proj.weight", ST_BF16, 2, {2, 3}, d}};
    snprintf(path, sizeof path, "%s/req.safetensors", dir);
    EXPECT(st_write(path, w, 1, NULL, err) == 0);
    struct st_set *s = st_open(path, err);
    if (!s) { EXPECTF(0, "%s", err); return; }
    int64_t ok[2] = {2, 3}, any[2] = {-1, 3}, bad[2] = {4, 3};
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_BF16, 2, ok, err) != NULL);
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_ANY_FLOAT, 2, any, err) != NULL);
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_BF16, -1, NULL, err) != NULL);
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_BF16, 2, bad, err) == NULL);
    EXPECT_STR_HAS(err, "req.safetensors");
    EXPECT_STR_HAS(err, "layers.0.q_proj.weight");
    EXPECT_STR_HAS(err, "expected BF16 [4, 3], found BF16 [2, 3]");
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_F32, 2, ok, err) == NULL);
    EXPECT_STR_HAS(err, "expected F32 [2, 3], found BF16 [2, 3]");
    EXPECT(st_require(s, "layers.0.q_proj.weight", ST_BF16, 1, NULL, err) == NULL);
    EXPECT_STR_HAS(err, "1 dimensions");
    EXPECT(st_require(s, "layers.0.k_proj.weight", ST_BF16, 2, ok, err) == NULL);
    EXPECT_STR_HAS(err, "layers.0.k_proj.weight is missing");
    EXPECT_STR_HAS(err, "req.safetensors");
    st_close(s);
}

static void test_many_tensors(void)
{
    enum { N = 3000 };
    char err[G4_ERR_MAX], path[256];
    static char names[N][32];
    static struct st_write_tensor w[N];
    static float vals[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t.%d", i);
        vals[i] = (float)i;
        w[i] = (struct st_write_tensor){names[i], ST_F32, 1, {1}, &vals[i]};
    }
    snprintf(path, sizeof path, "%s/many.safetensors", dir);
    EXPECT(st_write(path, w, N, NULL, err) == 0);
    struct st_set *s = st_open(path, err);
    if (!s) { EXPECTF(0, "%s", err); return; }
    EXPECT(st_count(s) == N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const struct st_tensor *t = st_find(s, names[i]);
        if (!t || *(const float *)t->data != (float)i) bad++;
    }
    EXPECT(bad == 0);
    EXPECT(st_find(s, "t.3000") == NULL);
    st_close(s);
}

static void test_writer_refuses(void)
{
    char err[G4_ERR_MAX], path[256];
    float v = 0;
    struct st_write_tensor dup[2] = {{"a", ST_F32, 1, {1}, &v}, {"a", ST_F32, 1, {1}, &v}};
    struct st_write_tensor neg[1] = {{"b", ST_F32, 1, {-1}, &v}};
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    EXPECT(st_write(path, dup, 2, NULL, err) == -1);
    EXPECT_STR_HAS(err, "tensor a given twice");
    EXPECT(st_write(path, neg, 1, NULL, err) == -1);
    EXPECT_STR_HAS(err, "bad shape");
}

static void test_sharded(void)
{
    char err[G4_ERR_MAX], sub[256], p[300];
    float a[2] = {1, 2}, b[3] = {3, 4, 5};
    struct st_write_tensor w1[1] = {{"a", ST_F32, 1, {2}, a}}, w2[1] = {{"b", ST_F32, 1, {3}, b}};
    snprintf(sub, sizeof sub, "%s/sharded", dir);
    mkdir(sub, 0755);
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", sub);
    EXPECT(st_write(p, w1, 1, NULL, err) == 0);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", sub);
    EXPECT(st_write(p, w2, 1, NULL, err) == 0);
    const char *idx = "{\"metadata\": {\"total_size\": 20}, \"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\","
                      " \"b\": \"model-00002-of-00002.safetensors\"}}";
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
    EXPECT(util_write_file(p, idx, strlen(idx), err) == 0);
    struct st_set *s = st_open(sub, err);
    EXPECTF(s != NULL, "%s", err);
    if (!s) return;
    EXPECT(st_file_count(s) == 2 && st_count(s) == 2);
    EXPECT(st_find(s, "a")->file == 0 && st_find(s, "b")->file == 1);
    EXPECT(((const float *)st_find(s, "b")->data)[2] == 5.0f);
    EXPECT(test_str_has(st_file_path(s, 1), "model-00002-of-00002.safetensors"));
    EXPECT(!strcmp(st_path(s), sub));
    st_close(s);
}

/* ---- hostile files: one per failure ---------------------------------------------------------------- */

static void test_short_and_lengths(void)
{
    expect_open_fails(put("short.safetensors", "abcde", 5), "short.safetensors", "too short", NULL);
    expect_open_fails(put_st("past.safetensors", "{}", 4096, 0), "past.safetensors", "runs past the end", NULL);
    expect_open_fails(put_st("huge.safetensors", "{}", 200000000, 0), "huge.safetensors", "100000000", "limit");
    expect_open_fails(put_st("empty.safetensors", "", 0, 0), "empty.safetensors", "not a JSON object", NULL);
}

static void test_bad_json(void)
{
    expect_open_fails(put_st("notjson.safetensors", "{\"a\": [1,", 0, 0), "notjson.safetensors", "not valid JSON",
                      NULL);
    expect_open_fails(put_st("array.safetensors", "[1, 2]", 0, 0), "array.safetensors", "not a JSON object", NULL);
    expect_open_fails(put_st("trail.safetensors", "{} xyz", 0, 0), "trail.safetensors", "bytes after", NULL);
    /* trailing spaces (the library's padding) are fine */
    char err[G4_ERR_MAX];
    struct st_set *s = st_open(put_st("pad.safetensors", "{}      ", 0, 0), err);
    EXPECTF(s != NULL && st_count(s) == 0, "%s", err);
    st_close(s);
}

static void test_bad_entries(void)
{
    expect_open_fails(put_st("nodtype.safetensors", "{\"w.x\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 0, 8),
                      "nodtype.safetensors", "tensor w.x", "dtype");
    expect_open_fails(put_st("notobj.safetensors", "{\"w.x\": 5}", 0, 0), "notobj.safetensors", "tensor w.x",
                      "not an object");
    expect_open_fails(
        put_st("shapestr.safetensors", "{\"w.x\": {\"dtype\": \"F32\", \"shape\": \"2\", \"data_offsets\": [0, 8]}}",
               0, 8),
        "shapestr.safetensors", "tensor w.x", "\"shape\" must be an array");
    expect_open_fails(
        put_st("neg.safetensors", "{\"w.neg\": {\"dtype\": \"F32\", \"shape\": [-1, 2], \"data_offsets\": [0, 8]}}",
               0, 8),
        "neg.safetensors", "tensor w.neg", "shape entry 0 must be a non-negative integer");
    expect_open_fails(
        put_st("frac.safetensors", "{\"w.f\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 8]}}", 0, 8),
        "frac.safetensors", "tensor w.f", "non-negative integer");
    expect_open_fails(put_st("ovf.safetensors",
                             "{\"w.o\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 16], "
                             "\"data_offsets\": [0, 8]}}",
                             0, 8),
                      "ovf.safetensors", "tensor w.o", "overflows");
    expect_open_fails(
        put_st("dims.safetensors",
               "{\"w.d\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 0, 4),
        "dims.safetensors", "tensor w.d", "limit of 8");
    expect_open_fails(
        put_st("dtype.safetensors", "{\"w.q\": {\"dtype\": \"Q4_K\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 0, 8),
        "dtype.safetensors", "tensor w.q", "unknown dtype \"Q4_K\"");
    expect_open_fails(
        put_st("offs.safetensors", "{\"w.r\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 0, 8),
        "offs.safetensors", "tensor w.r", "data_offsets");
    expect_open_fails(
        put_st("range.safetensors", "{\"w.r\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 0,
               8),
        "range.safetensors", "tensor w.r", "run past the end of the data (8 bytes)");
    expect_open_fails(
        put_st("back.safetensors", "{\"w.b\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}", 0, 8),
        "back.safetensors", "tensor w.b", "end 4 is before begin 8");
    expect_open_fails(
        put_st("size.safetensors", "{\"w.s\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 0, 8),
        "size.safetensors", "tensor w.s", "needs 12 bytes but data_offsets span 8");
    expect_open_fails(put_st("overlap.safetensors",
                             "{\"w.one\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                             " \"w.two\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                             0, 16),
                      "overlap.safetensors", "w.one and w.two", "overlap");
    expect_open_fails(put_st("dup.safetensors",
                             "{\"w.same\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                             " \"w.same\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                             0, 8),
                      "dup.safetensors", "tensor w.same", "twice");
    expect_open_fails(put_st("meta.safetensors", "{\"__metadata__\": {\"format\": 3}}", 0, 0), "meta.safetensors",
                      "__metadata__", "format");
    expect_open_fails(put_st("meta2.safetensors", "{\"__metadata__\": [1]}", 0, 0), "meta2.safetensors",
                      "__metadata__ must be an object", NULL);
    /* iteration follows data offsets, whatever order the header lists tensors in */
    char e2[G4_ERR_MAX];
    struct st_set *r = st_open(put_st("order.safetensors",
                                      "{\"w.late\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]},"
                                      " \"w.early\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
                                      0, 16),
                               e2);
    EXPECTF(r && !strcmp(st_at(r, 0)->name, "w.early") && !strcmp(st_at(r, 1)->name, "w.late"), "%s", e2);
    EXPECT(r && st_find(r, "w.late") == st_at(r, 1) && st_find(r, "w.early") == st_at(r, 0));
    st_close(r);
    /* a zero-size tensor may sit anywhere, even at an occupied offset */
    char err[G4_ERR_MAX];
    struct st_set *s = st_open(put_st("zero.safetensors",
                                      "{\"w.one\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                                      " \"w.e\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [4, 4]}}",
                                      0, 8),
                               err);
    EXPECTF(s != NULL && st_count(s) == 2 && st_find(s, "w.e")->nbytes == 0, "%s", err);
    st_close(s);
}

static void write_shard(const char *sub, const char *file, const char *name)
{
    char err[G4_ERR_MAX], p[400];
    float v[1] = {1};
    struct st_write_tensor w[1] = {{name, ST_F32, 1, {1}, v}};
    snprintf(p, sizeof p, "%s/%s", sub, file);
    if (st_write(p, w, 1, NULL, err)) { fprintf(stderr, "%s\n", err); exit(2); }
}

static const char *index_dir(const char *name, const char *index_json)
{
    static char sub[256];
    char p[400], err[G4_ERR_MAX];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    mkdir(sub, 0755);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", sub);
    if (util_write_file(p, index_json, strlen(index_json), err)) exit(2);
    return sub;
}

static void test_bad_index(void)
{
    const char *d;
    d = index_dir("ix_missing", "{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"gone.safetensors\"}}");
    write_shard(d, "s1.safetensors", "a");
    expect_open_fails(d, "gone.safetensors", "cannot open", "model.safetensors.index.json");

    d = index_dir("ix_absent", "{\"weight_map\": {\"a\": \"s1.safetensors\", \"zz.weight\": \"s1.safetensors\"}}");
    write_shard(d, "s1.safetensors", "a");
    expect_open_fails(d, "zz.weight", "s1.safetensors has no such tensor", NULL);

    d = index_dir("ix_wrongshard", "{\"weight_map\": {\"a\": \"s2.safetensors\", \"b\": \"s1.safetensors\"}}");
    write_shard(d, "s1.safetensors", "a");
    write_shard(d, "s2.safetensors", "b");
    expect_open_fails(d, "tensor a in shard s2.safetensors", "no such tensor", NULL);

    d = index_dir("ix_dup", "{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\"}}");
    write_shard(d, "s1.safetensors", "a");
    write_shard(d, "s2.safetensors", "a");
    expect_open_fails(d, "tensor a is also in", "s1.safetensors", "s2.safetensors");

    d = index_dir("ix_twice", "{\"weight_map\": {\"a\": \"s1.safetensors\", \"a\": \"s1.safetensors\"}}");
    write_shard(d, "s1.safetensors", "a");
    expect_open_fails(d, "lists tensor a twice", NULL, NULL);

    d = index_dir("ix_escape", "{\"weight_map\": {\"a\": \"../s1.safetensors\"}}");
    expect_open_fails(d, "tensor a", "not a file name", NULL);

    d = index_dir("ix_empty", "{\"weight_map\": {}}");
    expect_open_fails(d, "weight_map", "non-empty", NULL);

    d = index_dir("ix_notjson", "{\"weight_map\": ");
    expect_open_fails(d, "model.safetensors.index.json", "not a JSON object", NULL);

    char sub[256];
    snprintf(sub, sizeof sub, "%s/nothing", dir);
    mkdir(sub, 0755);
    expect_open_fails(sub, "nothing", "no model.safetensors", NULL);
    snprintf(sub, sizeof sub, "%s/does-not-exist", dir);
    expect_open_fails(sub, "does-not-exist", "cannot open", NULL);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    RUN_TEST(test_round_trip);
    RUN_TEST(test_require_messages);
    RUN_TEST(test_many_tensors);
    RUN_TEST(test_writer_refuses);
    RUN_TEST(test_sharded);
    RUN_TEST(test_short_and_lengths);
    RUN_TEST(test_bad_json);
    RUN_TEST(test_bad_entries);
    RUN_TEST(test_bad_index);
    return test_report();
}
