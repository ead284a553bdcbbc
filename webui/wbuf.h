/* wbuf — a growable byte buffer for the web client's C (HTML, JSON, data URLs), with HTML escaping.
 *
 * Why: every room of the client builds strings (markdown to HTML, SVG, request JSON); one small buffer type
 * keeps the escaping rules in one place. What it must not do: know about the DOM or the socket. Out of
 * memory is a bug here (abort), as everywhere in a browser tab. Builds natively and with emcc. */
#ifndef G4_WEB_WBUF_H
#define G4_WEB_WBUF_H

#include <stdarg.h>
#include <stddef.h>

struct wbuf {
    char *p;    /* NUL-terminated after every append; NULL until the first append */
    size_t n;   /* bytes used, the NUL excluded */
    size_t cap; /* bytes allocated */
};

void wbuf_free(struct wbuf *b);
void wbuf_reset(struct wbuf *b);                          /* n = 0, memory kept */
void wbuf_add(struct wbuf *b, const char *s, size_t n);   /* n raw bytes */
void wbuf_str(struct wbuf *b, const char *s);             /* a C string, raw */
void wbuf_ch(struct wbuf *b, char c);
void wbuf_printf(struct wbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes as HTML text or attribute value: & < > " ' become entities, NUL and other C0 controls except
 * tab and newline are dropped. Every byte the model or a user wrote goes through here. */
void wbuf_html(struct wbuf *b, const char *s, size_t n);
/* Takes the string out (caller frees; "" when empty) and leaves b empty. */
char *wbuf_take(struct wbuf *b);
/* The text or "" (never NULL). */
const char *wbuf_cstr(const struct wbuf *b);

/* base64 (RFC 4648, with padding) of n bytes. */
void wbuf_base64(struct wbuf *b, const unsigned char *data, size_t n);

#endif
