/* tokenizer_util — the tokenizer room's plumbing: byte buffer, u64 hash map, UTF-8 checks and the JSON
 * scanner (see tokenizer_impl.h).
 *
 * The scanner exists because Gemma's tokenizer.json is 33 MB: a cJSON tree of it takes ~0.7 s and ~200 MB
 * on the build machine, while the loader only needs to walk the vocab object and the merges array once.
 * Everything small (added_tokens, normalizer, decoder, ...) is still parsed with cJSON from the spans this
 * scanner finds. The scanner never allocates except into the caller's tok_buf and never reads past the end
 * of its text; nothing in this file knows what a tokenizer is. */
#include "model/tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ========================================================================================================
 * byte buffer
 * ====================================================================================================== */

void tb_reserve(struct tok_buf *b, size_t extra)
{
    size_t need = b->n + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    b->p = g4_realloc(b->p, cap);
    b->cap = cap;
}

void tb_put(struct tok_buf *b, const void *s, size_t n)
{
    tb_reserve(b, n);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void tb_putc(struct tok_buf *b, char c)
{
    tb_reserve(b, 1);
    b->p[b->n++] = c;
    b->p[b->n] = '\0';
}

void tb_free(struct tok_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Replaces every non-overlapping occurrence (left to right) of r->pat in src[0..n) into dst. */
void tok_replace_all(const struct tok_replace *r, const char *src, size_t n, struct tok_buf *dst)
{
    dst->n = 0;
    tb_reserve(dst, n);
    size_t i = 0;
    while (i < n) {
        const char *hit = n - i >= r->pat_len ? memchr(src + i, r->pat[0], n - i - r->pat_len + 1) : NULL;
        while (hit && memcmp(hit, r->pat, r->pat_len) != 0) {
            size_t at = (size_t)(hit - src) + 1;
            hit = at + r->pat_len <= n ? memchr(src + at, r->pat[0], n - at - r->pat_len + 1) : NULL;
        }
        if (!hit) break;
        tb_put(dst, src + i, (size_t)(hit - (src + i)));
        tb_put(dst, r->rep, r->rep_len);
        i = (size_t)(hit - src) + r->pat_len;
    }
    tb_put(dst, src + i, n - i);
}

/* ========================================================================================================
 * big tables
 * ====================================================================================================== */

void *tok_table_alloc(size_t bytes)
{
    if (bytes < ((size_t)2 << 20)) return g4_malloc(bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    G4_CHECK(p != MAP_FAILED, "out of memory mapping %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* a hint; failure is harmless */
#endif
    return p;
}

void tok_table_free(void *p, size_t bytes)
{
    if (!p) return;
    if (bytes < ((size_t)2 << 20)) free(p);
    else munmap(p, bytes);
}

/* ========================================================================================================
 * hashing, u64 map
 * ====================================================================================================== */

uint32_t tok_hash(const void *s, size_t n)
{
    const unsigned char *p = s;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Spreads a 64-bit key over the table (the high bits of a multiplicative hash). */
static uint32_t u64_slot(uint64_t key, uint32_t mask)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & mask;
}

void u64map_init(struct tok_u64map *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    G4_CHECK(cap <= ((size_t)1 << 31), "u64 map of %zu entries is too large", expected);
    m->slots = tok_table_alloc(cap * sizeof *m->slots);
    for (size_t i = 0; i < cap; i++) m->slots[i].key = UINT64_MAX;
    m->mask = (uint32_t)(cap - 1);
    m->n = 0;
}

void u64map_free(struct tok_u64map *m)
{
    if (m->slots) tok_table_free(m->slots, ((size_t)m->mask + 1) * sizeof *m->slots);
    m->slots = NULL;
    m->mask = m->n = 0;
}

const struct tok_u64slot *u64map_get(const struct tok_u64map *m, uint64_t key)
{
    if (!m->slots) return NULL;
    uint32_t i = u64_slot(key, m->mask);
    for (;;) {
        const struct tok_u64slot *s = &m->slots[i];
        if (s->key == key) return s;
        if (s->key == UINT64_MAX) return NULL;
        i = (i + 1) & m->mask;
    }
}

/* Doubles the table and re-inserts every entry. */
static void u64map_grow(struct tok_u64map *m)
{
    struct tok_u64map bigger;
    u64map_init(&bigger, (size_t)(m->mask + 1));
    for (uint32_t i = 0; i <= m->mask; i++) {
        if (m->slots[i].key == UINT64_MAX) continue;
        uint32_t j = u64_slot(m->slots[i].key, bigger.mask);
        while (bigger.slots[j].key != UINT64_MAX) j = (j + 1) & bigger.mask;
        bigger.slots[j] = m->slots[i];
    }
    bigger.n = m->n;
    u64map_free(m);
    *m = bigger;
}

struct tok_u64slot *u64map_put(struct tok_u64map *m, uint64_t key, bool *fresh)
{
    G4_CHECK(key != UINT64_MAX, "reserved u64 map key");
    if (!m->slots) u64map_init(m, 16);
    if ((size_t)(m->n + 1) * 2 > (size_t)m->mask + 1) u64map_grow(m);
    uint32_t i = u64_slot(key, m->mask);
    for (;;) {
        struct tok_u64slot *s = &m->slots[i];
        if (s->key == key) {
            *fresh = false;
            return s;
        }
        if (s->key == UINT64_MAX) {
            s->key = key;
            s->a = 0;
            s->b = 0;
            m->n++;
            *fresh = true;
            return s;
        }
        i = (i + 1) & m->mask;
    }
}

/* ========================================================================================================
 * UTF-8
 * ====================================================================================================== */

int utf8_valid_len(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* no overlongs */
        else if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F; /* <= U+10FFFF */
    } else {
        return 0;
    }
    if (n < (size_t)len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

size_t utf8_check(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, eight bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int len = utf8_valid_len(s + i, n - i);
        if (!len) return i;
        i += (size_t)len;
    }
    return n;
}

uint32_t utf8_cp(const unsigned char *s, int len)
{
    switch (len) {
    case 1: return s[0];
    case 2: return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default:
        return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
               ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    }
}

int utf8_put(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ========================================================================================================
 * JSON scanner
 * ====================================================================================================== */

#define TJ_MAX_DEPTH 64

int tj_fail(struct tj *j, const char *what)
{
    return g4_errf(j->err, "%s: bad JSON at byte %zu: %s", j->name, (size_t)(j->p - j->base), what);
}

void tj_ws(struct tj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++;
}

/* Four hex digits at p (checked against end) into *v. */
static int tj_hex4(struct tj *j, uint32_t *v)
{
    if (j->end - j->p < 4) return tj_fail(j, "truncated \\u escape");
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) {
        char c = j->p[i];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (uint32_t)(c - 'A' + 10);
        else return tj_fail(j, "bad hex digit in \\u escape");
    }
    j->p += 4;
    *v = x;
    return 0;
}

/* One escape sequence after the backslash, appended to out as UTF-8. A \uD800-\uDBFF must be followed by
 * a \uDC00-\uDFFF (a lone surrogate is refused, as serde_json refuses it). */
static int tj_escape(struct tj *j, struct tok_buf *out)
{
    if (j->p >= j->end) return tj_fail(j, "truncated escape");
    char c = *j->p++;
    switch (c) {
    case '"': tb_putc(out, '"'); return 0;
    case '\\': tb_putc(out, '\\'); return 0;
    case '/': tb_putc(out, '/'); return 0;
    case 'b': tb_putc(out, '\b'); return 0;
    case 'f': tb_putc(out, '\f'); return 0;
    case 'n': tb_putc(out, '\n'); return 0;
    case 'r': tb_putc(out, '\r'); return 0;
    case 't': tb_putc(out, '\t'); return 0;
    case 'u': break;
    default: j->p--; return tj_fail(j, "unknown escape");
    }
    uint32_t cp, lo;
    if (tj_hex4(j, &cp)) return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return tj_fail(j, "lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return tj_fail(j, "lone high surrogate in \\u escape");
        j->p += 2;
        if (tj_hex4(j, &lo)) return -1;
        if (lo < 0xDC00 || lo > 0xDFFF) return tj_fail(j, "bad low surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    char u[4];
    tb_put(out, u, (size_t)utf8_put(cp, u));
    return 0;
}

/* Advances over string characters that need no decoding (stops at '"', '\\', a control character or the
 * end), checking that the non-ASCII ones are valid UTF-8. */
static int tj_plain_run(struct tj *j)
{
    const unsigned char *p = (const unsigned char *)j->p, *end = (const unsigned char *)j->end;
    while (p < end) {
        unsigned c = *p;
        if (c == '"' || c == '\\' || c < 0x20) break;
        if (c < 0x80) {
            p++;
            continue;
        }
        int len = utf8_valid_len(p, (size_t)(end - p));
        if (!len) {
            j->p = (const char *)p;
            return tj_fail(j, "invalid UTF-8 in string");
        }
        p += len;
    }
    j->p = (const char *)p;
    return 0;
}

int tj_string(struct tj *j, struct tok_buf *out)
{
    out->n = 0;
    tb_reserve(out, 16);
    out->p[0] = '\0';
    tj_ws(j);
    if (j->p >= j->end || *j->p != '"') return tj_fail(j, "expected a string");
    j->p++;
    for (;;) {
        const char *run = j->p;
        if (tj_plain_run(j)) return -1;
        tb_put(out, run, (size_t)(j->p - run));
        if (j->p >= j->end) return tj_fail(j, "unterminated string");
        char c = *j->p++;
        if (c == '"') return 0;
        if (c != '\\') {
            j->p--;
            return tj_fail(j, "control character in string");
        }
        if (tj_escape(j, out)) return -1;
    }
}

int tj_int(struct tj *j, int64_t *v)
{
    tj_ws(j);
    const char *s = j->p;
    bool neg = false;
    if (j->p < j->end && *j->p == '-') {
        neg = true;
        j->p++;
    }
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return tj_fail(j, "expected an integer");
    if (*j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9')
        return tj_fail(j, "leading zero in number");
    int64_t x = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (x > (INT64_MAX - 9) / 10) return tj_fail(j, "integer out of range");
        x = x * 10 + (*j->p++ - '0');
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) {
        j->p = s;
        return tj_fail(j, "expected an integer, not a fraction");
    }
    *v = neg ? -x : x;
    return 0;
}

/* A JSON number of any form (validated, value unused). */
static int tj_skip_number(struct tj *j)
{
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return tj_fail(j, "bad number");
    if (*j->p == '0') j->p++;
    else while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return tj_fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return tj_fail(j, "bad number");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    return 0;
}

/* A string's text, validated but not decoded. */
static int tj_skip_string(struct tj *j)
{
    j->p++; /* the opening quote */
    for (;;) {
        if (tj_plain_run(j)) return -1;
        if (j->p >= j->end) return tj_fail(j, "unterminated string");
        char c = *j->p++;
        if (c == '"') return 0;
        if (c != '\\') {
            j->p--;
            return tj_fail(j, "control character in string");
        }
        if (j->p >= j->end) return tj_fail(j, "truncated escape");
        c = *j->p++;
        if (c == 'u') {
            uint32_t v;
            if (tj_hex4(j, &v)) return -1;
        } else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
            j->p--;
            return tj_fail(j, "unknown escape");
        }
    }
}

/* A literal word (true, false, null). */
static int tj_skip_word(struct tj *j, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) return tj_fail(j, "unexpected character");
    j->p += n;
    return 0;
}

int tj_open(struct tj *j, char open)
{
    tj_ws(j);
    if (j->p >= j->end || *j->p != open) return tj_fail(j, open == '{' ? "expected '{'" : "expected '['");
    j->p++;
    return 0;
}

int tj_next(struct tj *j, char close, int *count, struct tok_buf *key)
{
    tj_ws(j);
    if (j->p >= j->end) return tj_fail(j, "unexpected end of text");
    if (*j->p == close) {
        j->p++;
        return 0;
    }
    if (*count > 0) {
        if (*j->p != ',') return tj_fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
        j->p++;
    }
    (*count)++;
    if (close == '}') {
        if (tj_string(j, key)) return -1;
        tj_ws(j);
        if (j->p >= j->end || *j->p != ':') return tj_fail(j, "expected ':'");
        j->p++;
    }
    return 1;
}

int tj_skip(struct tj *j, int depth)
{
    if (depth > TJ_MAX_DEPTH) return tj_fail(j, "nested too deeply");
    tj_ws(j);
    if (j->p >= j->end) return tj_fail(j, "unexpected end of text");
    char c = *j->p;
    if (c == '"') return tj_skip_string(j);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        int count = 0, r;
        struct tok_buf key = { 0 };
        j->p++;
        while ((r = tj_next(j, close, &count, c == '{' ? &key : NULL)) == 1)
            if (tj_skip(j, depth + 1)) {
                r = -1;
                break;
            }
        tb_free(&key);
        return r < 0 ? -1 : 0;
    }
    if (c == 't') return tj_skip_word(j, "true");
    if (c == 'f') return tj_skip_word(j, "false");
    if (c == 'n') return tj_skip_word(j, "null");
    return tj_skip_number(j);
}

int tj_skip_span(struct tj *j, struct tj_span *span)
{
    tj_ws(j);
    span->p = j->p;
    if (tj_skip(j, 1)) return -1;
    span->n = (size_t)(j->p - span->p);
    return 0;
}
