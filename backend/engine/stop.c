/* stop — when a stream ends: stop ids, the length limit, and the streaming stop-string matcher (sampler.h).
 *
 * The matcher sits between the detokenizer and the client: it sees each token's text, releases what can no
 * longer be part of a stop string, and cuts the reply before the first stop string, which the client never
 * sees. Its result must not depend on how the text was cut into deltas (a drafted step emits several tokens
 * at once, a plain step one). It must not look at token ids, and must not release a partial UTF-8 character.
 * Called on the engine thread (or whichever thread owns the stream's output); one matcher per stream. */
#include "engine/sampler.h"

#include "util/util.h"

#include <stdlib.h>
#include <string.h>

const char *samp_finish_name(enum samp_finish f)
{
    switch (f) {
    case SAMP_FINISH_STOP_ID:
    case SAMP_FINISH_STOP_STRING: return "stop";
    case SAMP_FINISH_LENGTH: return "length";
    case SAMP_FINISH_NONE: break;
    }
    return "none";
}

int samp_is_stop_id(const struct samp_params *p, int32_t token)
{
    for (int32_t i = 0; i < p->n_stop_ids; i++)
        if (p->stop_ids[i] == token) return 1;
    return 0;
}

enum samp_finish samp_finish_after_token(const struct samp_params *p, int32_t token, int32_t n_generated)
{
    if (samp_is_stop_id(p, token)) return SAMP_FINISH_STOP_ID;
    if (n_generated >= p->max_tokens) return SAMP_FINISH_LENGTH;
    return SAMP_FINISH_NONE;
}

/* ======================================================================================================= */
/* stop-string matcher                                                                                     */
/* ======================================================================================================= */

void samp_stop_init(struct samp_stop *s, const struct samp_params *p)
{
    memset(s, 0, sizeof *s);
    G4_CHECK(p->n_stop_strings >= 0 && p->n_stop_strings <= SAMP_MAX_STOP_STRINGS,
             "unvalidated n_stop_strings %d", p->n_stop_strings);
    for (int32_t i = 0; i < p->n_stop_strings; i++) {
        size_t n = strnlen(p->stop_strings[i], SAMP_MAX_STOP_STRING_LEN + 1);
        G4_CHECK(n >= 1 && n <= SAMP_MAX_STOP_STRING_LEN, "unvalidated stop string %d of %zu bytes", i, n);
        memcpy(s->strs[i], p->stop_strings[i], n);
        s->strs[i][n] = '\0';
        s->lens[i] = n;
    }
    s->n = p->n_stop_strings;
}

void samp_stop_free(struct samp_stop *s)
{
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = s->out = 0;
}

/* Drops the bytes released by the previous call from the front of the buffer. */
static void drop_released(struct samp_stop *s)
{
    if (s->out == 0) return;
    memmove(s->buf, s->buf + s->out, s->len - s->out);
    s->len -= s->out;
    s->out = 0;
}

/* Searches buf for the first stop string to complete at an end position e in [from, len]: the smallest e,
 * and at that e the longest string. Returns its start offset, or -1 if none completes. Earlier end
 * positions were searched by earlier calls and held no match. */
static long find_match(const struct samp_stop *s, size_t from)
{
    for (size_t e = from; e <= s->len; e++) {
        size_t best_len = 0;
        for (int i = 0; i < s->n; i++) {
            size_t l = s->lens[i];
            if (l > e || l <= best_len || s->buf[e - 1] != s->strs[i][l - 1]) continue;
            if (memcmp(s->buf + e - l, s->strs[i], l) == 0) best_len = l;
        }
        if (best_len) return (long)(e - best_len);
    }
    return -1;
}

/* Length of the longest suffix of buf that is a proper prefix of some stop string (it may still become a
 * stop string when more text arrives). */
static size_t held_suffix(const struct samp_stop *s)
{
    size_t longest = 0;
    for (int i = 0; i < s->n; i++) {
        size_t l = s->lens[i], h = l - 1 < s->len ? l - 1 : s->len;
        for (; h > longest; h--) {
            if (s->buf[s->len - h] == s->strs[i][0] && memcmp(s->buf + s->len - h, s->strs[i], h) == 0) {
                longest = h;
                break;
            }
        }
    }
    return longest;
}

/* Moves a release point back so it does not cut a UTF-8 character: if the bytes before `end` finish with a
 * lead byte whose sequence needs more bytes than are there, the cut goes before that lead byte. Stray
 * continuation bytes and invalid lead bytes are not waited for (they would never complete). */
static size_t utf8_safe_end(const char *buf, size_t end)
{
    for (size_t i = 1; i <= 3 && i <= end; i++) {
        unsigned char c = (unsigned char)buf[end - i];
        if ((c & 0xC0) == 0x80) continue;            /* continuation byte: look further back */
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3
                    : c >= 0xC2 && c <= 0xDF ? 2 : 1;
        return i < need ? end - i : end;
    }
    return end;
}

size_t samp_stop_feed(struct samp_stop *s, const char *delta, size_t len, const char **text, int *matched)
{
    *matched = s->stopped;
    *text = s->buf ? s->buf : "";
    if (s->stopped) return 0;
    drop_released(s);
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->len + len) cap *= 2;
        s->buf = g4_realloc(s->buf, cap);
        s->cap = cap;
    }
    size_t old_len = s->len;
    if (len) memcpy(s->buf + s->len, delta, len);
    s->len += len;
    if (s->buf) *text = s->buf;

    long at = find_match(s, old_len + 1);
    if (at >= 0) {
        s->stopped = 1;
        *matched = 1;
        s->out = (size_t)at;
        return s->out;
    }
    s->out = utf8_safe_end(s->buf, s->len - held_suffix(s));
    return s->out;
}

size_t samp_stop_flush(struct samp_stop *s, const char **text)
{
    *text = s->buf ? s->buf : "";
    if (s->stopped) return 0;
    drop_released(s);
    s->out = s->len;
    return s->out;
}
