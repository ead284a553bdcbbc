/* tokenizer_decode — ids -> text, whole (tok_decode, exactly HF `tokenizer.decode`) and streaming
 * (tok_stream_*, one id at a time, only complete UTF-8 characters out).
 *
 * The decoder the loader accepted is: Replace steps on each piece (Gemma: "▁" -> " "), then ByteFallback
 * (a piece spelled <0xNN> is the byte NN; a run of such bytes that is valid UTF-8 is that text, otherwise
 * each byte of the run is U+FFFD), then Fuse (concatenate). Added tokens are their content; special ones are
 * dropped on request. This file never encodes and never aborts on an id a client sent. */
#include "model/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The value of a hex digit, or -1. */
static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Whether piece s[0..n) is a byte token "<0xNN>" (as tokenizers' ByteFallback reads it: six bytes, "<0x",
 * two characters that u8::from_str_radix(.., 16) accepts -- which includes "+N" -- and ">"). */
static bool byte_token(const char *s, size_t n, unsigned char *b)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
    int hi = hexval(s[3]), lo = hexval(s[4]);
    if (s[3] == '+' && lo >= 0) {
        *b = (unsigned char)lo;
        return true;
    }
    if (hi < 0 || lo < 0) return false;
    *b = (unsigned char)(hi * 16 + lo);
    return true;
}

/* The piece of id after the decoder's Replace steps, in *s and *n (pointing into t or into scratch).
 * -1 when id has no piece; 1 when it is a special token to skip; 0 otherwise. */
static int decoded_piece(const struct tok *t, int32_t id, int flags, struct tok_buf scratch[2], const char **s,
                         size_t *n)
{
    *s = tok_piece_len(t, id, n);
    if (!*s) return -1;
    if ((flags & TOK_DEC_SKIP_SPECIAL) && tok_is_special(t, id)) return 1;
    for (int k = 0; k < t->n_dec_rep; k++) {
        struct tok_buf *dst = &scratch[k & 1];
        tok_replace_all(&t->dec_rep[k], *s, *n, dst);
        *s = dst->p;
        *n = dst->n;
    }
    return 0;
}

/* Appends a finished run of byte tokens: its text when valid UTF-8, else one U+FFFD per byte. */
static void flush_run(struct tok_buf *out, struct tok_buf *run)
{
    if (utf8_check((const unsigned char *)run->p, run->n) == run->n) {
        tb_put(out, run->p, run->n);
    } else {
        for (size_t i = 0; i < run->n; i++) tb_put(out, REPLACEMENT, 3);
    }
    run->n = 0;
}

char *tok_decode(const struct tok *t, const int32_t *ids, size_t n, int flags, size_t *len_out, char *err)
{
    struct tok_buf out = { 0 }, run = { 0 }, scratch[2] = { { 0 } };
    tb_reserve(&out, n * 4);
    out.p[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        unsigned char b;
        int r = decoded_piece(t, ids[i], flags, scratch, &s, &len);
        if (r < 0) {
            g4_errf(err, "token id %d at position %zu is not in the vocabulary (size %d)", ids[i], i, t->n_ids);
            tb_free(&out);
            goto free_scratch;
        }
        if (r > 0) continue;
        if (t->dec_byte_fallback && byte_token(s, len, &b)) {
            tb_putc(&run, (char)b);
            continue;
        }
        if (run.n) flush_run(&out, &run);
        tb_put(&out, s, len);
    }
    if (run.n) flush_run(&out, &run);
    if (len_out) *len_out = out.n;
free_scratch:
    tb_free(&run);
    tb_free(&scratch[0]);
    tb_free(&scratch[1]);
    return out.p;
}

/* ========================================================================================================
 * streaming
 * ====================================================================================================== */

struct tok_stream {
    const struct tok *t;
    int flags;
    unsigned char pend[4]; /* bytes of a character not yet complete */
    int n_pend, need;      /* bytes held, bytes the character needs */
    struct tok_buf out;    /* text returned by the last call */
    struct tok_buf scratch[2];
};

struct tok_stream *tok_stream_create(const struct tok *t, int dec_flags)
{
    struct tok_stream *s = g4_calloc(1, sizeof *s);
    s->t = t;
    s->flags = dec_flags;
    tb_reserve(&s->out, 64);
    s->out.p[0] = '\0';
    return s;
}

void tok_stream_destroy(struct tok_stream *s)
{
    if (!s) return;
    tb_free(&s->out);
    tb_free(&s->scratch[0]);
    tb_free(&s->scratch[1]);
    free(s);
}

void tok_stream_reset(struct tok_stream *s)
{
    s->n_pend = 0;
    s->out.n = 0;
    s->out.p[0] = '\0';
}

/* Whether byte b may follow the held bytes of a character (UTF-8 rules for the second byte included). */
static bool continues(const struct tok_stream *s, unsigned char b)
{
    unsigned lo = 0x80, hi = 0xBF;
    if (s->n_pend == 1) {
        if (s->pend[0] == 0xE0) lo = 0xA0;
        else if (s->pend[0] == 0xED) hi = 0x9F;
        else if (s->pend[0] == 0xF0) lo = 0x90;
        else if (s->pend[0] == 0xF4) hi = 0x8F;
    }
    return b >= lo && b <= hi;
}

/* Feeds one byte of a byte-fallback token: complete characters go out, invalid bytes as U+FFFD. */
static void stream_byte(struct tok_stream *s, unsigned char b)
{
    if (s->n_pend) {
        if (continues(s, b)) {
            s->pend[s->n_pend++] = b;
            if (s->n_pend == s->need) {
                tb_put(&s->out, s->pend, (size_t)s->n_pend);
                s->n_pend = 0;
            }
            return;
        }
        for (int i = 0; i < s->n_pend; i++) tb_put(&s->out, REPLACEMENT, 3);
        s->n_pend = 0; /* b starts afresh */
    }
    if (b < 0x80) {
        tb_putc(&s->out, (char)b);
    } else if (b >= 0xC2 && b <= 0xF4) {
        s->pend[0] = b;
        s->n_pend = 1;
        s->need = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    } else {
        tb_put(&s->out, REPLACEMENT, 3);
    }
}

int tok_stream_push(struct tok_stream *s, int32_t id, const char **text, size_t *len, char *err)
{
    const char *p;
    size_t n;
    unsigned char b;
    s->out.n = 0;
    s->out.p[0] = '\0';
    *text = s->out.p;
    *len = 0;
    int r = decoded_piece(s->t, id, s->flags, s->scratch, &p, &n);
    if (r < 0) return g4_errf(err, "token id %d is not in the vocabulary (size %d)", id, s->t->n_ids);
    if (r > 0) return 0;
    if (s->t->dec_byte_fallback && byte_token(p, n, &b)) {
        stream_byte(s, b);
    } else {
        for (int i = 0; i < s->n_pend; i++) tb_put(&s->out, REPLACEMENT, 3);
        s->n_pend = 0;
        tb_put(&s->out, p, n);
    }
    *text = s->out.p;
    *len = s->out.n;
    return 0;
}

void tok_stream_flush(struct tok_stream *s, const char **text, size_t *len)
{
    s->out.n = 0;
    s->out.p[0] = '\0';
    for (int i = 0; i < s->n_pend; i++) tb_put(&s->out, REPLACEMENT, 3);
    s->n_pend = 0;
    *text = s->out.p;
    *len = s->out.n;
}
