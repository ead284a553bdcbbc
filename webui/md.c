/* md — markdown to HTML for model replies (see md.h for the subset and the rules).
 *
 * Line-based: one block is open at a time (paragraph, list, quote or code fence); inline spans are found
 * inside one line. Every byte of input reaches the output through wbuf_html or not at all; the markup
 * emitted is a fixed set of tags. Inline searches are bounded (MD_SPAN_MAX) so that a long line of
 * unmatched delimiters stays linear enough to re-render on every streamed token. */
#include "md.h"

#include <string.h>

#define MD_SPAN_MAX 2000 /* bytes an emphasis/code/link search looks ahead */
#define MD_DEPTH_MAX 6   /* nested emphasis levels rendered as markup */

enum md_block { MD_NONE, MD_PARA, MD_UL, MD_OL, MD_QUOTE };

struct md {
    struct wbuf *out;
    int msg;          /* message index for copy buttons */
    int code_k;       /* fenced blocks opened so far */
    enum md_block open;
    int fence;        /* inside a fence: its length (>= 3), else 0 */
    char fence_ch;    /* '`' or '~' */
};

static int is_space(char c) { return c == ' ' || c == '\t'; }
static int is_alnum(unsigned char c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0x80; }
static int is_punct(unsigned char c) { return c > 32 && c < 127 && !is_alnum(c); }

/* ---- inline spans -------------------------------------------------------------------------------------- */

static void inline_span(struct md *m, const char *s, size_t n, int depth);

/* Case-insensitive prefix test. */
static int has_prefix(const char *s, size_t n, const char *p)
{
    size_t k = strlen(p);
    if (n < k) return 0;
    for (size_t i = 0; i < k; i++)
        if ((s[i] | 32) != p[i]) return 0;
    return 1;
}

/* A URL we make a link of: http, https or mailto, no spaces or control bytes. */
static int url_ok(const char *u, size_t n)
{
    if (!(has_prefix(u, n, "http://") || has_prefix(u, n, "https://") || has_prefix(u, n, "mailto:"))) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)u[i] <= 32 || u[i] == 127 || u[i] == '"' || u[i] == '\'' || u[i] == '<' || u[i] == '>')
            return 0;
    return 1;
}

static void link(struct md *m, const char *url, size_t un, const char *text, size_t tn, int depth)
{
    wbuf_str(m->out, "<a href=\"");
    wbuf_html(m->out, url, un);
    wbuf_str(m->out, "\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">");
    if (text) inline_span(m, text, tn, depth + 1);
    else wbuf_html(m->out, url, un);
    wbuf_str(m->out, "</a>");
}

/* Length of the run of c starting at s[i]. */
static size_t run_of(const char *s, size_t n, size_t i, char c)
{
    size_t j = i;
    while (j < n && s[j] == c) j++;
    return j - i;
}

/* `code`: at s[i] a run of r backticks; returns bytes consumed, 0 when there is no closing run. */
static size_t code_span(struct md *m, const char *s, size_t n, size_t i)
{
    size_t r = run_of(s, n, i, '`'), lim = i + r + MD_SPAN_MAX < n ? i + r + MD_SPAN_MAX : n;
    for (size_t j = i + r; j < lim;) {
        size_t k = run_of(s, lim, j, '`');
        if (k == r) {
            const char *a = s + i + r;
            size_t len = j - (i + r);
            if (len >= 2 && a[0] == ' ' && a[len - 1] == ' ') a++, len -= 2;
            wbuf_str(m->out, "<code>");
            wbuf_html(m->out, a, len);
            wbuf_str(m->out, "</code>");
            return j + r - i;
        }
        j += k ? k : 1;
    }
    return 0;
}

/* *em* / **strong** (and _ forms): at s[i] a delimiter run; returns bytes consumed, 0 when unmatched. */
static size_t emphasis(struct md *m, const char *s, size_t n, size_t i, int depth)
{
    char d = s[i];
    size_t run = run_of(s, n, i, d), r = run >= 2 ? 2 : 1;
    size_t lim = i + run + MD_SPAN_MAX < n ? i + run + MD_SPAN_MAX : n;
    if (depth >= MD_DEPTH_MAX || run > 3) return 0;
    if (i + r >= n || is_space(s[i + r])) return 0;             /* an opener is followed by text */
    if (d == '_' && i > 0 && is_alnum((unsigned char)s[i - 1])) return 0; /* snake_case is not emphasis */
    for (size_t j = i + r + 1; j < lim;) {
        size_t k = run_of(s, lim, j, d);
        if (!k) {
            j++;
            continue;
        }
        if (k >= r && !is_space(s[j - 1]) && (d != '_' || j + k >= n || !is_alnum((unsigned char)s[j + k]))) {
            const char *tag = r == 2 ? "strong" : "em";
            wbuf_printf(m->out, "<%s>", tag);
            /* a run of 3 closing a run of 3: strong(em(...)) */
            if (run == 3 && k >= 3) {
                wbuf_str(m->out, "<em>");
                inline_span(m, s + i + 3, j - i - 3, depth + 2);
                wbuf_str(m->out, "</em>");
                wbuf_printf(m->out, "</%s>", tag);
                return j + 3 - i;
            }
            inline_span(m, s + i + r, j - i - r, depth + 1);
            wbuf_printf(m->out, "</%s>", tag);
            return j + r - i;
        }
        j += k;
    }
    return 0;
}

/* [text](url): returns bytes consumed, 0 when s[i] does not start a link with an allowed URL. */
static size_t md_link(struct md *m, const char *s, size_t n, size_t i, int depth)
{
    size_t lim = i + MD_SPAN_MAX < n ? i + MD_SPAN_MAX : n, j = i + 1, k;
    while (j < lim && s[j] != ']' && s[j] != '[') j++;
    if (j + 1 >= lim || s[j] != ']' || s[j + 1] != '(') return 0;
    for (k = j + 2; k < lim && s[k] != ')' && !is_space(s[k]); k++) {}
    if (k >= lim || s[k] != ')' || !url_ok(s + j + 2, k - j - 2)) return 0;
    link(m, s + j + 2, k - j - 2, s + i + 1, j - i - 1, depth);
    return k + 1 - i;
}

/* A bare http(s) URL at s[i] (at a word start): returns bytes consumed, 0 when there is none. */
static size_t bare_url(struct md *m, const char *s, size_t n, size_t i, int depth)
{
    size_t j = i;
    if (i > 0 && is_alnum((unsigned char)s[i - 1])) return 0;
    if (!has_prefix(s + i, n - i, "http://") && !has_prefix(s + i, n - i, "https://")) return 0;
    while (j < n && (unsigned char)s[j] > 32 && s[j] != 127 && !strchr("<>\"'`", s[j])) j++;
    while (j > i && strchr(".,;:!?)]*_", s[j - 1])) j--; /* trailing punctuation is the sentence's */
    if (j - i <= 8 || !url_ok(s + i, j - i)) return 0;
    link(m, s + i, j - i, NULL, 0, depth);
    return j - i;
}

/* One line's (or one span's) inline markup. Plain text is flushed (escaped) before each construct is tried,
 * so a construct writes its markup after the text before it; a construct that does not match writes
 * nothing and its first byte stays plain text. */
static void inline_span(struct md *m, const char *s, size_t n, int depth)
{
    size_t i = 0, plain = 0; /* s[plain .. i) is pending plain text */
    while (i < n) {
        char c = s[i];
        size_t used = 0;
        if (!strchr("\\`*_[hH", c)) {
            i++;
            continue;
        }
        wbuf_html(m->out, s + plain, i - plain);
        plain = i;
        if (c == '\\' && i + 1 < n && is_punct((unsigned char)s[i + 1])) {
            wbuf_html(m->out, s + i + 1, 1);
            used = 2;
        } else if (c == '`') {
            used = code_span(m, s, n, i);
            if (!used) used = run_of(s, n, i, '`'), wbuf_html(m->out, s + i, used);
        } else if (c == '*' || c == '_') {
            used = emphasis(m, s, n, i, depth);
            if (!used) used = run_of(s, n, i, c), wbuf_html(m->out, s + i, used);
        } else if (c == '[') {
            used = md_link(m, s, n, i, depth);
        } else if (c == 'h' || c == 'H') {
            used = bare_url(m, s, n, i, depth);
        }
        if (!used) {
            i++;
            continue;
        }
        i += used;
        plain = i;
    }
    wbuf_html(m->out, s + plain, i - plain);
}

/* ---- blocks -------------------------------------------------------------------------------------------- */

/* Closes the open block (not a fence). */
static void close_block(struct md *m)
{
    static const char *const end[] = {"", "</p>", "</li></ul>", "</li></ol>", "</blockquote>"};
    wbuf_str(m->out, end[m->open]);
    m->open = MD_NONE;
}

/* A fence line: up to 3 spaces, then 3+ backticks or tildes. Returns the run length, 0 if not a fence. */
static size_t fence_len(const char *s, size_t n, char *ch)
{
    size_t i = 0;
    while (i < n && i < 3 && s[i] == ' ') i++;
    if (i >= n || (s[i] != '`' && s[i] != '~')) return 0;
    size_t r = run_of(s, n, i, s[i]);
    if (r < 3) return 0;
    *ch = s[i];
    return r;
}

/* Is this line the fence that closes the open one (same character, at least as long, nothing after)? */
static int closes_fence(const struct md *m, const char *s, size_t n)
{
    char ch;
    size_t r = fence_len(s, n, &ch), i;
    if (!r || ch != m->fence_ch || (int)r < m->fence) return 0;
    for (i = 0; i < n && s[i] == ' '; i++) {}
    for (i += r; i < n; i++)
        if (!is_space(s[i])) return 0;
    return 1;
}

/* "- ", "* ", "+ " (returns 1 and the text start) or "12. " / "12) " (returns 2 and the number). */
static int list_item(const char *s, size_t n, size_t *text, long *num)
{
    size_t i = 0;
    while (i < n && i < 3 && s[i] == ' ') i++;
    if (i + 1 < n && strchr("-*+", s[i]) && is_space(s[i + 1])) {
        *text = i + 2;
        return 1;
    }
    long v = 0;
    size_t d = i;
    while (i < n && i - d < 9 && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
    if (i > d && i + 1 < n && (s[i] == '.' || s[i] == ')') && is_space(s[i + 1])) {
        *text = i + 2;
        *num = v;
        return 2;
    }
    return 0;
}

/* ---, ***, ___ (3 or more, spaces allowed between). */
static int is_rule(const char *s, size_t n)
{
    char c = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_space(s[i])) continue;
        if (!c && strchr("-*_", s[i])) c = s[i];
        if (s[i] != c) return 0;
        k++;
    }
    return k >= 3;
}

/* One line outside a fence. */
static void block_line(struct md *m, const char *s, size_t n)
{
    size_t t = 0, h = 0;
    long num = 1;
    int item;
    char ch;
    while (t < n && is_space(s[t])) t++;
    if (t == n) { /* blank: ends every block */
        close_block(m);
        return;
    }
    size_t fl = fence_len(s, n, &ch);
    if (fl) {
        size_t a = t + fl, b = n;
        close_block(m);
        while (a < b && is_space(s[a])) a++;
        while (b > a && is_space(s[b - 1])) b--;
        wbuf_str(m->out, "<div class=\"code\"><div class=\"code-head\"><span>");
        wbuf_html(m->out, s + a, b - a);
        wbuf_printf(m->out, "</span><button type=\"button\" data-act=\"copy\" data-arg=\"%d:%d\">Copy</button></div>"
                            "<pre><code>", m->msg, m->code_k++);
        m->fence = (int)fl;
        m->fence_ch = ch;
        return;
    }
    while (t + h < n && h < 7 && s[t + h] == '#') h++;
    if (t < 4 && h >= 1 && h <= 6 && t + h < n && is_space(s[t + h])) {
        close_block(m);
        wbuf_printf(m->out, "<h%zu>", h);
        inline_span(m, s + t + h + 1, n - t - h - 1, 0);
        wbuf_printf(m->out, "</h%zu>", h);
        return;
    }
    if (t < 4 && is_rule(s, n)) {
        close_block(m);
        wbuf_str(m->out, "<hr>");
        return;
    }
    if (t < 4 && s[t] == '>') {
        size_t a = t + 1 + (t + 1 < n && s[t + 1] == ' ');
        if (m->open != MD_QUOTE) {
            close_block(m);
            wbuf_str(m->out, "<blockquote>");
            m->open = MD_QUOTE;
        } else {
            wbuf_str(m->out, "<br>");
        }
        inline_span(m, s + a, n - a, 0);
        return;
    }
    item = list_item(s, n, &t, &num);
    if (item) {
        enum md_block want = item == 1 ? MD_UL : MD_OL;
        if (m->open == want) {
            wbuf_str(m->out, "</li><li>");
        } else {
            close_block(m);
            if (want == MD_OL && num != 1) wbuf_printf(m->out, "<ol start=\"%ld\"><li>", num);
            else wbuf_str(m->out, want == MD_UL ? "<ul><li>" : "<ol><li>");
            m->open = want;
        }
        inline_span(m, s + t, n - t, 0);
        return;
    }
    /* plain text: continues the open paragraph, list item or quote */
    if (m->open == MD_NONE) {
        wbuf_str(m->out, "<p>");
        m->open = MD_PARA;
    } else {
        wbuf_str(m->out, "<br>");
    }
    inline_span(m, s + t, n - t, 0);
}

void md_render(const char *text, size_t n, int msg, struct wbuf *out)
{
    struct md m = {.out = out, .msg = msg};
    size_t i = 0;
    if (!out->p) wbuf_add(out, "", 0);
    while (i < n) {
        size_t e = i;
        while (e < n && text[e] != '\n') e++;
        size_t le = e > i && text[e - 1] == '\r' ? e - 1 : e;
        if (m.fence) {
            if (closes_fence(&m, text + i, le - i)) {
                wbuf_str(out, "</code></pre></div>");
                m.fence = 0;
            } else {
                wbuf_html(out, text + i, le - i);
                wbuf_ch(out, '\n');
            }
        } else {
            block_line(&m, text + i, le - i);
        }
        i = e + 1;
    }
    if (m.fence) wbuf_str(out, "</code></pre></div>");
    else close_block(&m);
}

int md_code_block(const char *text, size_t n, int k, size_t *start, size_t *len)
{
    size_t i = 0, begin = 0;
    int fence = 0, seen = 0;
    char fch = 0, ch;
    while (i < n) {
        size_t e = i;
        while (e < n && text[e] != '\n') e++;
        size_t le = e > i && text[e - 1] == '\r' ? e - 1 : e;
        if (!fence) {
            size_t fl = fence_len(text + i, le - i, &ch);
            if (fl) {
                fence = (int)fl;
                fch = ch;
                begin = e < n ? e + 1 : e;
            }
        } else {
            struct md probe = {.fence = fence, .fence_ch = fch};
            if (closes_fence(&probe, text + i, le - i)) {
                if (seen++ == k) {
                    *start = begin;
                    *len = i > begin ? i - 1 - begin : 0; /* without the newline before the fence */
                    return 0;
                }
                fence = 0;
            }
        }
        i = e + 1;
    }
    if (fence && seen == k) { /* still open: runs to the end */
        *start = begin < n ? begin : n;
        *len = n - *start;
        return 0;
    }
    return -1;
}
