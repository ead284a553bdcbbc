/* util — error helpers, checked allocation, whole-file I/O and small numeric conversions (see util.h). */
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void g4_die(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "g4: fatal: %s:%d: check failed: %s: ", file, line, expr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

int g4_errf(char *err, const char *fmt, ...)
{
    va_list ap;
    if (!err) return -1;
    va_start(ap, fmt);
    vsnprintf(err, G4_ERR_MAX, fmt, ap);
    va_end(ap);
    return -1;
}

void *g4_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    G4_CHECK(p, "out of memory allocating %zu bytes", n);
    return p;
}

void *g4_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    G4_CHECK(p, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *g4_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    G4_CHECK(q, "out of memory reallocating to %zu bytes", n);
    return q;
}

char *g4_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = g4_malloc(n);
    memcpy(d, s, n);
    return d;
}

char *util_read_file(const char *path, size_t max_bytes, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *buf = NULL;
    if (!f) {
        g4_errf(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        g4_errf(err, "%s: not a regular file", path);
        goto close_file;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        g4_errf(err, "%s: %lld bytes is over the limit of %zu bytes", path, (long long)st.st_size, max_bytes);
        goto close_file;
    }
    buf = g4_malloc((size_t)st.st_size + 1);
    if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        g4_errf(err, "%s: read failed: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
        goto close_file;
    }
    buf[st.st_size] = 0;
    if (len) *len = (size_t)st.st_size;
close_file:
    fclose(f);
    return buf;
}

int util_write_file(const char *path, const void *data, size_t len, char *err)
{
    FILE *f = fopen(path, "wb");
    if (!f) return g4_errf(err, "%s: cannot create: %s", path, strerror(errno));
    if (len && fwrite(data, 1, len, f) != len) {
        fclose(f);
        return g4_errf(err, "%s: write failed: %s", path, strerror(errno));
    }
    if (fclose(f) != 0) return g4_errf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

int util_path_join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    int n = snprintf(out, cap, "%s%s%s", dir, (dl && dir[dl - 1] == '/') ? "" : "/", name);
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    union { uint32_t u; float f; } v;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {                                   /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    v.u = bits;
    return v.f;
}

double util_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

double util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sbuf_append(struct sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = g4_realloc(b->p, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void sbuf_puts(struct sbuf *b, const char *s)
{
    sbuf_append(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    int n;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    G4_CHECK(n >= 0, "bad format '%s'", fmt);
    sbuf_append(b, "", 0);
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap;
        while (cap < b->n + (size_t)n + 1) cap *= 2;
        b->p = g4_realloc(b->p, cap);
        b->cap = cap;
    }
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->n += (size_t)n;
}

void sbuf_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
