/* wbuf — growable buffer and HTML escaping for the web client (see wbuf.h). Allocation failure aborts: the
 * client has no way to go on without memory. */
#include "wbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for extra more bytes plus the NUL. */
static void grow(struct wbuf *b, size_t extra)
{
    size_t need = b->n + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        fprintf(stderr, "wbuf: out of memory (%zu bytes)\n", cap);
        abort();
    }
    b->p = p;
    b->cap = cap;
}

void wbuf_free(struct wbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void wbuf_reset(struct wbuf *b)
{
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

void wbuf_add(struct wbuf *b, const char *s, size_t n)
{
    grow(b, n);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void wbuf_str(struct wbuf *b, const char *s)
{
    wbuf_add(b, s, strlen(s));
}

void wbuf_ch(struct wbuf *b, char c)
{
    wbuf_add(b, &c, 1);
}

void wbuf_printf(struct wbuf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        grow(b, (size_t)n);
        vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap2);
        b->n += (size_t)n;
    }
    va_end(ap2);
}

void wbuf_html(struct wbuf *b, const char *s, size_t n)
{
    size_t run = 0; /* bytes of s[i - run .. i) that need no escaping, copied in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *ent = NULL;
        switch (c) {
        case '&': ent = "&amp;"; break;
        case '<': ent = "&lt;"; break;
        case '>': ent = "&gt;"; break;
        case '"': ent = "&quot;"; break;
        case '\'': ent = "&#39;"; break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n') ent = ""; /* dropped */
            else if (c == 0x7f) ent = "";
        }
        if (!ent) {
            run++;
            continue;
        }
        wbuf_add(b, s + i - run, run);
        run = 0;
        wbuf_str(b, ent);
    }
    wbuf_add(b, s + n - run, run);
}

char *wbuf_take(struct wbuf *b)
{
    char *p = b->p;
    if (!p) {
        p = malloc(1);
        if (!p) abort();
        p[0] = 0;
    }
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

const char *wbuf_cstr(const struct wbuf *b)
{
    return b->p ? b->p : "";
}

void wbuf_base64(struct wbuf *b, const unsigned char *d, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    grow(b, (n + 2) / 3 * 4);
    char *o = b->p + b->n;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
        *o++ = t[v >> 18];
        *o++ = t[(v >> 12) & 63];
        *o++ = t[(v >> 6) & 63];
        *o++ = t[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0);
        *o++ = t[v >> 18];
        *o++ = t[(v >> 12) & 63];
        *o++ = i + 1 < n ? t[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    b->n = (size_t)(o - b->p);
    b->p[b->n] = 0;
}
