/* test_web_md — the chat's markdown renderer (webui/md.c): the constructs it supports, and above all that
 * model output can never become markup: every tag in the output is one of the renderer's fixed set, with
 * fixed attributes, whatever the input (checked on crafted attacks and on 3000 random inputs made of the
 * characters that matter). */
#include "md.h"
#include "test.h"

static char *render(const char *s)
{
    static struct wbuf b;
    wbuf_reset(&b);
    md_render(s, strlen(s), 3, &b);
    return b.p;
}

/* The tags md.c may write, each with the attributes it may carry (a prefix of the tag text). */
static const char *const ALLOWED[] = {
    "<p>", "</p>", "<br>", "<h1>", "</h1>", "<h2>", "</h2>", "<h3>", "</h3>", "<h4>", "</h4>", "<h5>", "</h5>",
    "<h6>", "</h6>", "<ul>", "</ul>", "<ol>", "</ol>", "<ol start=\"", "<li>", "</li>", "<blockquote>",
    "</blockquote>", "<hr>", "<em>", "</em>", "<strong>", "</strong>", "<code>", "</code>", "<pre>", "</pre>",
    "<div class=\"code\">", "<div class=\"code-head\">", "</div>", "<span>", "</span>",
    "<button type=\"button\" data-act=\"copy\" data-arg=\"", "</button>", "<a href=\"", "</a>",
};

/* Checks that every '<' in html starts an allowed tag, that attribute values hold no quote (so no attribute
 * can be injected after them), and that no tag carries an on* handler or a javascript: URL. Returns NULL or
 * a pointer to the first offending tag. */
static const char *bad_tag(const char *html)
{
    for (const char *p = strchr(html, '<'); p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        size_t k, n = sizeof ALLOWED / sizeof ALLOWED[0];
        if (!end) return p;
        for (k = 0; k < n; k++)
            if (!strncmp(p, ALLOWED[k], strlen(ALLOWED[k]))) break;
        if (k == n) return p;
        /* inside the tag: quotes must pair up as attribute delimiters, no handler, no script URL */
        int quotes = 0;
        for (const char *q = p; q < end; q++) quotes += *q == '"';
        if (quotes % 2) return p;
        char tag[512];
        size_t len = (size_t)(end - p) < sizeof tag - 1 ? (size_t)(end - p) : sizeof tag - 1;
        memcpy(tag, p, len);
        tag[len] = 0;
        for (char *t = tag; *t; t++)
            if (*t >= 'A' && *t <= 'Z') *t = (char)(*t + 32);
        if (strstr(tag, " on") || strstr(tag, "javascript:") || strstr(tag, "data:")) return p;
        if (!strncmp(p, "<a href=\"", 9) &&
            !strstr(tag, "\" target=\"_blank\" rel=\"noopener noreferrer nofollow\"")) return p;
    }
    return NULL;
}

static void test_script_is_text(void)
{
    const char *h = render("Here: <script>alert(1)</script> and <img src=x onerror=alert(2)>");
    EXPECT(!strstr(h, "<script"));
    EXPECT(!strstr(h, "<img"));
    EXPECT_STR_HAS(h, "&lt;script&gt;alert(1)&lt;/script&gt;");
    EXPECT_STR_HAS(h, "&lt;img src=x onerror=alert(2)&gt;");
    EXPECT(bad_tag(h) == NULL);
    /* inside code, fences, headings, lists, quotes, emphasis and link text too */
    h = render("# <b>x</b>\n- <i>y</i>\n> <u>z</u>\n**<s>w</s>** `<q>` [<em>v</em>](https://e.com/)\n```<x>\n<svg onload=1>\n```");
    EXPECT(bad_tag(h) == NULL);
    EXPECT(!strstr(h, "<b>") && !strstr(h, "<i>") && !strstr(h, "<u>") && !strstr(h, "<s>") && !strstr(h, "<svg"));
    EXPECT_STR_HAS(h, "&lt;svg onload=1&gt;");
    EXPECT_STR_HAS(h, "<span>&lt;x&gt;</span>"); /* the fence's info string */
    EXPECT_STR_HAS(h, "<a href=\"https://e.com/\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">&lt;em&gt;v&lt;/em&gt;</a>");
}

static void test_links_only_safe_urls(void)
{
    const char *h = render("[a](javascript:alert(1)) [b](data:text/html,x) [c](https://ok.example/p?q=1&r=2) "
                           "[d](https://x.com/\"onmouseover=alert(1)) see https://bare.example/x. and http://h.io");
    EXPECT(bad_tag(h) == NULL);
    EXPECT(!strstr(h, "href=\"javascript") && !strstr(h, "href=\"data"));
    EXPECT_STR_HAS(h, "<a href=\"https://ok.example/p?q=1&amp;r=2\"");
    EXPECT_STR_HAS(h, "<a href=\"https://bare.example/x\""); /* the sentence's full stop stays outside */
    EXPECT_STR_HAS(h, "<a href=\"http://h.io\"");
    EXPECT_STR_HAS(h, "[a](javascript:alert(1))");
    EXPECT(!strstr(h, "onmouseover=alert(1)\""));
}

static void test_blocks(void)
{
    const char *h = render("# Title\n\nFirst line\nsecond line\n\n- one\n- *two*\n\n3. three\n4. four\n\n---\n> quoted");
    EXPECT_STR_HAS(h, "<h1>Title</h1>");
    EXPECT_STR_HAS(h, "<p>First line<br>second line</p>");
    EXPECT_STR_HAS(h, "<ul><li>one</li><li><em>two</em></li></ul>");
    EXPECT_STR_HAS(h, "<ol start=\"3\"><li>three</li><li>four</li></ol>");
    EXPECT_STR_HAS(h, "<hr>");
    EXPECT_STR_HAS(h, "<blockquote>quoted</blockquote>");
}

static void test_inline(void)
{
    const char *h = render("a **bold** and *it* and __b2__ and _i2_ and snake_case_name and `x < y` and \\*not\\* and 2*3*4");
    EXPECT_STR_HAS(h, "<strong>bold</strong>");
    EXPECT_STR_HAS(h, "<em>it</em>");
    EXPECT_STR_HAS(h, "<strong>b2</strong>");
    EXPECT_STR_HAS(h, "<em>i2</em>");
    EXPECT_STR_HAS(h, "snake_case_name");
    EXPECT_STR_HAS(h, "<code>x &lt; y</code>");
    EXPECT_STR_HAS(h, "*not*");
    EXPECT(bad_tag(h) == NULL);
    h = render("***both*** and **unclosed");
    EXPECT_STR_HAS(h, "<strong><em>both</em></strong>");
    EXPECT_STR_HAS(h, "**unclosed");
}

static void test_code_blocks(void)
{
    const char *src = "Text\n```c\nint main(void) { return a<b && c>d; }\n```\nmore\n~~~\nsecond\n~~~\n```\nopen at the end";
    const char *h = render(src);
    size_t start, len;
    EXPECT_STR_HAS(h, "<div class=\"code\"><div class=\"code-head\"><span>c</span><button type=\"button\" data-act=\"copy\" data-arg=\"3:0\">Copy</button></div><pre><code>int main(void) { return a&lt;b &amp;&amp; c&gt;d; }\n</code></pre></div>");
    EXPECT_STR_HAS(h, "data-arg=\"3:1\"");
    EXPECT_STR_HAS(h, "data-arg=\"3:2\""); /* an open fence (still streaming) renders as a block */
    EXPECT_STR_HAS(h, "open at the end\n</code></pre></div>");
    EXPECT(md_code_block(src, strlen(src), 0, &start, &len) == 0);
    EXPECT(len == strlen("int main(void) { return a<b && c>d; }") && !strncmp(src + start, "int main", 8));
    EXPECT(md_code_block(src, strlen(src), 1, &start, &len) == 0 && len == 6 && !strncmp(src + start, "second", 6));
    EXPECT(md_code_block(src, strlen(src), 2, &start, &len) == 0 && !strcmp(src + start, "open at the end"));
    EXPECT(md_code_block(src, strlen(src), 3, &start, &len) == -1);
}

static void test_control_bytes_dropped(void)
{
    const char s[] = "a\x01" "b\x7f" "c\tz";
    struct wbuf b = {0};
    md_render(s, sizeof s - 1, 0, &b);
    EXPECT_STR_HAS(b.p, "abc\tz");
    wbuf_free(&b);
    b = (struct wbuf){0};
    md_render("x\0<script>", 10, 0, &b); /* a NUL in the middle: the rest is still escaped */
    EXPECT(!strstr(b.p, "<script"));
    wbuf_free(&b);
}

/* Random inputs over the characters that matter: the output never holds a tag outside the fixed set. */
static void test_random_inputs_stay_inert(void)
{
    static const char alphabet[] = "<>\"'&*_`[]()#->!\\ \n\tabcdehjnopstvx:/=.1~";
    unsigned long long s = 0x9e3779b97f4a7c15ull;
    char in[200];
    int bad = 0;
    for (int t = 0; t < 3000; t++) {
        int n = (int)(s % 190);
        for (int i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            in[i] = alphabet[(s >> 33) % (sizeof alphabet - 1)];
        }
        in[n] = 0;
        const char *h = render(in), *b = bad_tag(h);
        if (b && bad++ < 3) fprintf(stderr, "  input \"%s\" gave \"%.60s\"\n", in, b);
    }
    EXPECT(bad == 0);
}

int main(void)
{
    RUN_TEST(test_script_is_text);
    RUN_TEST(test_links_only_safe_urls);
    RUN_TEST(test_blocks);
    RUN_TEST(test_inline);
    RUN_TEST(test_code_blocks);
    RUN_TEST(test_control_bytes_dropped);
    RUN_TEST(test_random_inputs_stay_inert);
    return test_report();
}
