/* md — the chat's markdown renderer: model output (untrusted) to HTML, in C so that the one place that
 * decides what becomes markup is small and unit-tested (tests/unit/test_web_md.c).
 *
 * Supported: paragraphs (a single newline is a line break), # headings, - * + and 1. lists (one level),
 * > quotes, --- rules, fenced code blocks (``` or ~~~, with a copy button), inline code, *em* _em_
 * **strong** __strong__, [text](url) links and bare http(s) URLs, backslash escapes. Links are kept only for
 * http:, https: and mailto: URLs; everything else is text.
 *
 * What it must not do: emit any byte of the input outside wbuf_html (every model byte is escaped), or emit
 * a tag or attribute other than the fixed ones above. Partial input (a reply still streaming) renders as
 * well as whole input: an open fence runs to the end. */
#ifndef G4_WEB_MD_H
#define G4_WEB_MD_H

#include <stddef.h>

#include "wbuf.h"

/* Appends the HTML for text (n bytes) to out. msg names the message in the copy buttons' data-arg
 * ("msg:k" for the k-th code block, 0-based). */
void md_render(const char *text, size_t n, int msg, struct wbuf *out);

/* The k-th fenced code block's content (its lines without the fences): 0 with *start, *len set, or -1 when
 * text has fewer blocks. */
int md_code_block(const char *text, size_t n, int k, size_t *start, size_t *len);

#endif
