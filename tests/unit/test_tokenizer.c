/* test_tokenizer — the tokenizer room on small tokenizer.json files the tests write themselves.
 *
 * Each expected id list below is worked out by hand from the tiny vocabulary and merge ranks in the test
 * (or, for the randomised merge-order test, by a deliberately naive O(n^2) BPE written here); none comes
 * from running the code under test. The real Gemma files are covered by test_tokenizer_gemma.c and the
 * reference test against @lenml/tokenizers. */
#include "model/tokenizer.h"
#include "test.h"
#include "util/util.h"

#include <cJSON.h>

/* ========================================================================================================
 * building tiny tokenizer.json files
 * ====================================================================================================== */

#define BYTE0 15 /* ids of <0x00>..<0xFF> when byte_fallback: right after V_ABC (dense ids) */

struct spec {
    const char *const *vocab; /* ids 0.. in order */
    const char *const *merges; /* "left right" pairs, rank = position */
    bool byte_fallback, fuse_unk, no_unk;
    bool normalize;           /* Replace " " -> "▁" */
    bool split;               /* Split " " MergedWithPrevious */
    const char *added_json;   /* JSON array text for added_tokens, or NULL */
    const char *post_json;    /* post_processor JSON, or NULL */
};

/* Returns a malloc'd tokenizer.json for the spec (byte tokens at BYTE0.. when byte_fallback). */
static char *make_json(const struct spec *s)
{
    cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    cJSON *merges = cJSON_CreateArray();
    int n = 0;
    for (; s->vocab[n]; n++) cJSON_AddNumberToObject(vocab, s->vocab[n], n);
    if (s->byte_fallback && n != BYTE0) {
        fprintf(stderr, "test bug: byte tokens must follow a %d-entry vocabulary\n", BYTE0);
        exit(2);
    }
    if (s->byte_fallback)
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", b);
            cJSON_AddNumberToObject(vocab, name, BYTE0 + b);
        }
    for (int i = 0; s->merges && s->merges[i]; i++) cJSON_AddItemToArray(merges, cJSON_CreateString(s->merges[i]));
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddItemToObject(root, "added_tokens", s->added_json ? cJSON_Parse(s->added_json) : cJSON_CreateArray());
    if (s->normalize)
        cJSON_AddItemToObject(root, "normalizer",
                              cJSON_Parse("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"}"));
    else
        cJSON_AddNullToObject(root, "normalizer");
    if (s->split)
        cJSON_AddItemToObject(root, "pre_tokenizer",
                              cJSON_Parse("{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"MergedWithPrevious\",\"invert\":false}"));
    cJSON_AddItemToObject(root, "post_processor", s->post_json ? cJSON_Parse(s->post_json) : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "decoder",
                          cJSON_Parse("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]}"));
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (s->no_unk) cJSON_AddNullToObject(model, "unk_token");
    else cJSON_AddStringToObject(model, "unk_token", "<unk>");
    cJSON_AddBoolToObject(model, "fuse_unk", s->fuse_unk);
    cJSON_AddBoolToObject(model, "byte_fallback", s->byte_fallback);
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", merges);
    cJSON_AddItemToObject(root, "model", model);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

static struct tok *load_spec(const struct spec *s)
{
    char err[G4_ERR_MAX] = "";
    char *json = make_json(s);
    struct tok *t = tok_load_mem(json, strlen(json), NULL, 0, "tiny.json", err);
    if (!t) fprintf(stderr, "  load failed: %s\n", err);
    free(json);
    return t;
}

/* Encodes text and compares with the expected ids (terminated by -1); prints both on mismatch. */
static int enc_is(const struct tok *t, const char *text, int flags, const int32_t *want)
{
    char err[G4_ERR_MAX] = "";
    struct tok_ids ids = { 0 };
    int ok = tok_encode(t, text, strlen(text), flags, &ids, err) == 0;
    size_t n = 0;
    while (want[n] >= 0) n++;
    ok = ok && ids.n == n && (n == 0 || memcmp(ids.ids, want, n * sizeof *want) == 0);
    if (!ok) {
        fprintf(stderr, "  encode \"%s\": got", text);
        for (size_t i = 0; i < ids.n; i++) fprintf(stderr, " %d", ids.ids[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, " %s\n", err);
    }
    tok_ids_free(&ids);
    return ok;
}
#define ENC_IS(t, text, flags, ...) EXPECT(enc_is((t), (text), (flags), (const int32_t[]){ __VA_ARGS__, -1 }))

/* Decodes and compares with the expected text. */
static int dec_is(const struct tok *t, const int32_t *ids, size_t n, int flags, const char *want)
{
    char err[G4_ERR_MAX] = "";
    size_t len = 0;
    char *s = tok_decode(t, ids, n, flags, &len, err);
    int ok = s && len == strlen(want) && memcmp(s, want, len) == 0;
    if (!ok) fprintf(stderr, "  decode: got \"%s\" want \"%s\" %s\n", s ? s : "(null)", want, err);
    free(s);
    return ok;
}
#define DEC_IS(t, flags, want, ...)                                                                            \
    EXPECT(dec_is((t), (const int32_t[]){ __VA_ARGS__ }, sizeof((const int32_t[]){ __VA_ARGS__ }) / 4,      \
                  (flags), (want)))

/* ========================================================================================================
 * the tiny vocabularies
 * ====================================================================================================== */

/* ids:                                 0        1        2        3       4    5    6    7     8     9 */
static const char *const V_ABC[] = { "<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "c", "ab", "bc", "aa",
                                     /* 10       11        12          13     14 */
                                     "\xe2\x96\x81", "\xe2\x96\x81" "a", "abc", "x", "aab", NULL };
static const char *const M_BC_FIRST[] = { "b c", "a b", NULL };
static const char *const M_AB_FIRST[] = { "a b", "b c", NULL };

/* ========================================================================================================
 * tests
 * ====================================================================================================== */

static void test_merge_rank_order(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_BC_FIRST };
    struct tok *t = load_spec(&s);
    EXPECT(t);
    if (!t) return;
    ENC_IS(t, "abc", 0, 4, 8);     /* "b c" has rank 0: a + bc */
    ENC_IS(t, "ab", 0, 7);
    ENC_IS(t, "cab", 0, 6, 7);
    tok_free(t);
    s.merges = M_AB_FIRST;
    t = load_spec(&s);
    ENC_IS(t, "abc", 0, 7, 6);     /* now "a b" first: ab + c */
    tok_free(t);
}

static void test_merge_leftmost_on_ties_and_chains(void)
{
    static const char *const m[] = { "a a", "aa b", "ab c", NULL };
    struct spec s = { .vocab = V_ABC, .merges = m };
    struct tok *t = load_spec(&s);
    EXPECT(t);
    if (!t) return;
    ENC_IS(t, "aaa", 0, 9, 4);         /* both pairs are rank 0: the left one merges first */
    ENC_IS(t, "aaaa", 0, 9, 9);
    ENC_IS(t, "aab", 0, 14);           /* aa, then aa+b (rank 1) */
    ENC_IS(t, "abc", 0, 4, 5, 6);      /* "ab c" needs "ab", which no merge here makes */
    EXPECT(enc_is(t, "", 0, (const int32_t[]){ -1 })); /* nothing */
    tok_free(t);
}

static void test_added_tokens_longest_leftmost(void)
{
    const char *added = "[{\"id\":20,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true},"
                        "{\"id\":21,\"content\":\"<s>x\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false},"
                        "{\"id\":22,\"content\":\"s>xa\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false},"
                        "{\"id\":13,\"content\":\"x\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false}]";
    /* vocab 0..14 plus filler so that the added ids 20..22 follow the vocabulary as tokenizers numbers them */
    static const char *const v[] = { "<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "c", "ab", "bc", "aa",
                                     "\xe2\x96\x81", "\xe2\x96\x81" "a", "abc", "x", "aab", "f1", "f2", "f3", "f4",
                                     "f5", NULL };
    struct spec s = { .vocab = v, .merges = M_AB_FIRST, .added_json = added, .normalize = true };
    struct tok *t = load_spec(&s);
    EXPECT(t);
    if (!t) return;
    ENC_IS(t, "ab<s>c", 0, 7, 20, 6);
    ENC_IS(t, "<s>xa", 0, 21, 4);      /* at 0 "<s>x" is longest; "s>xa" starts later */
    ENC_IS(t, "a<s>", 0, 4, 20);
    ENC_IS(t, "xx", 0, 13, 13);        /* "x" is an added token (same id as in the vocab) */
    ENC_IS(t, "a <s> a", 0, 4, 10, 20, 10, 4); /* spaces become ▁; no merge makes "a▁" or "▁a" here */
    /* special tokens as text: "<s>" is matched, skipped, and stays plain text (3 = unk per char < s >) */
    ENC_IS(t, "<s>", TOK_ENC_SPECIAL_AS_TEXT, 3, 3, 3);
    ENC_IS(t, "<s>x", TOK_ENC_SPECIAL_AS_TEXT, 21); /* non-special "<s>x" still matches */
    EXPECT(tok_is_special(t, 20) && !tok_is_special(t, 21) && tok_is_added(t, 21) && !tok_is_added(t, 7));
    EXPECT(tok_id(t, "<s>") == 20 && tok_id(t, "<s>x") == 21 && tok_id(t, "ab") == 7 && tok_id(t, "<s") == -1);
    EXPECT(tok_vocab_size(t) == 23);
    EXPECT(tok_piece(t, 21) && strcmp(tok_piece(t, 21), "<s>x") == 0);
    EXPECT(tok_piece(t, 23) == NULL && tok_piece(t, -1) == NULL);
    DEC_IS(t, 0, "ab<s>x a", 7, 20, 13, 11);
    DEC_IS(t, TOK_DEC_SKIP_SPECIAL, "abx a", 7, 20, 13, 11); /* only special ones are dropped */
    tok_free(t);
}

static void test_byte_fallback_and_unk(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .byte_fallback = true };
    struct tok *t = load_spec(&s);
    EXPECT(t);
    if (!t) return;
    /* é = C3 A9, 😀 = F0 9F 98 80 */
    ENC_IS(t, "a\xc3\xa9" "b", 0, 4, BYTE0 + 0xC3, BYTE0 + 0xA9, 5);
    ENC_IS(t, "\xf0\x9f\x98\x80", 0, BYTE0 + 0xF0, BYTE0 + 0x9F, BYTE0 + 0x98, BYTE0 + 0x80);
    DEC_IS(t, 0, "a\xc3\xa9" "b", 4, BYTE0 + 0xC3, BYTE0 + 0xA9, 5);
    tok_free(t);

    s.byte_fallback = false;
    s.fuse_unk = true;
    t = load_spec(&s);
    ENC_IS(t, "zzab", 0, 3, 7);        /* unknown run fused into one <unk> */
    ENC_IS(t, "azzbz", 0, 4, 3, 5, 3);
    tok_free(t);
    s.fuse_unk = false;
    t = load_spec(&s);
    ENC_IS(t, "zzab", 0, 3, 3, 7);
    tok_free(t);
    s.no_unk = true;
    t = load_spec(&s);
    ENC_IS(t, "zzab", 0, 7);           /* no unk token: tokenizers drops the characters */
    tok_free(t);
}

/* With only some byte tokens present, a character whose bytes are not all there becomes unk; tokenizers
 * (BPE::merge_word) then adds a byte-fallback character before the pending unk. */
static void test_partial_byte_fallback_quirk(void)
{
    const char *v[] = { "<pad>", "<eos>", "<bos>", "<unk>", "a", "<0xC3>", "<0xA9>", NULL };
    struct spec s = { .vocab = v, .fuse_unk = true };
    char *json = make_json(&s);
    /* switch byte_fallback on without the 256 generated byte tokens */
    char *at = strstr(json, "\"byte_fallback\":false");
    EXPECT(at);
    if (!at) return;
    memcpy(at, "\"byte_fallback\":true ", 21);
    char err[G4_ERR_MAX];
    struct tok *t = tok_load_mem(json, strlen(json), NULL, 0, "tiny.json", err);
    free(json);
    EXPECT(t);
    if (!t) return;
    ENC_IS(t, "\xf0\x9f\x98\x80\xc3\xa9" "a", 0, 5, 6, 3, 4);
    ENC_IS(t, "\xc3\xa9\xf0\x9f\x98\x80", 0, 5, 6, 3);
    tok_free(t);
}

static void test_split_pre_tokenizer(void)
{
    /* no normalizer: spaces stay spaces. "  " outranks every other merge, so any two spaces in one piece
     * would merge: they must not, as Split MergedWithPrevious puts a second space in a piece of its own */
    static const char *const v[] = { "<pad>", "<eos>", "<bos>", "<unk>", "a", "b", " ", "a ", " b", "  ", NULL };
    static const char *const m[][2] = { { " ", " " }, { " ", "b" }, { "a", " " } };
    struct spec s = { .vocab = v, .split = true };
    /* merges of pieces holding a space need the pair form */
    char *json = make_json(&s);
    cJSON *root = cJSON_Parse(json), *merges = cJSON_CreateArray();
    free(json);
    for (int i = 0; i < 3; i++) cJSON_AddItemToArray(merges, cJSON_CreateStringArray(m[i], 2));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(root, "model"), "merges", merges);
    json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    char err[G4_ERR_MAX];
    struct tok *t = tok_load_mem(json, strlen(json), NULL, 0, "split.json", err);
    free(json);
    EXPECT(t);
    if (!t) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    ENC_IS(t, "a b", 0, 7, 5);         /* pieces "a " "b": no " b" across the boundary */
    ENC_IS(t, "a  b", 0, 7, 6, 5);     /* "a " " " "b" */
    ENC_IS(t, "a   b", 0, 7, 6, 6, 5); /* "a " " " " " "b" */
    ENC_IS(t, " b", 0, 6, 5);          /* " " "b" */
    ENC_IS(t, "  ", 0, 6, 6);          /* " " " " */
    ENC_IS(t, "ab ", 0, 4, 5, 6);      /* one piece "ab ": no merge applies to a b or b " " */
    tok_free(t);
}

static void test_post_processor_and_bos(void)
{
    const char *post = "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<bos>\",\"type_id\":0}},"
                       "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"<eos>\",\"type_id\":0}}],"
                       "\"special_tokens\":{\"<bos>\":{\"id\":\"<bos>\",\"ids\":[2],\"tokens\":[\"<bos>\"]},"
                       "\"<eos>\":{\"id\":\"<eos>\",\"ids\":[1],\"tokens\":[\"<eos>\"]}}}";
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .post_json = post };
    char *json = make_json(&s);
    const char *config = "{\"bos_token\":\"<bos>\",\"eos_token\":{\"content\":\"<eos>\"},\"pad_token\":\"nope\",\"chat_template\":\"x\"}";
    char err[G4_ERR_MAX] = "";
    struct tok *t = tok_load_mem(json, strlen(json), config, strlen(config), "post.json", err);
    EXPECT(t);
    if (!t) return;
    ENC_IS(t, "ab", 0, 7);
    ENC_IS(t, "ab", TOK_ENC_POST_PROCESS, 2, 7, 1);
    ENC_IS(t, "ab", TOK_ENC_ADD_BOS, 2, 7);
    EXPECT(tok_config_id(t, "bos_token") == 2 && tok_config_id(t, "eos_token") == 1);
    EXPECT(tok_config_id(t, "pad_token") == -1 && tok_config_id(t, "chat_template") == -1);
    tok_free(t);
    /* without a config, ADD_BOS is an error that says why, and the output is untouched */
    t = tok_load_mem(json, strlen(json), NULL, 0, "post.json", err);
    struct tok_ids ids = { 0 };
    EXPECT(tok_encode(t, "ab", 2, TOK_ENC_ADD_BOS, &ids, err) < 0 && ids.n == 0);
    EXPECT_STR_HAS(err, "bos_token");
    tok_ids_free(&ids);
    tok_free(t);
    free(json);
}

static void test_invalid_utf8_rejected(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .byte_fallback = true };
    struct tok *t = load_spec(&s);
    static const struct { const char *text; size_t len; const char *where; } bad[] = {
        { "ab\xff" "cd", 5, "at byte 2" },
        { "\xc0\xaf", 2, "at byte 0" },           /* overlong '/' */
        { "a\xed\xa0\x80", 4, "at byte 1" },      /* UTF-16 surrogate */
        { "abc\xe2\x82", 5, "at byte 3" },        /* cut short */
        { "\xf4\x90\x80\x80", 4, "at byte 0" },   /* above U+10FFFF */
        { "a\x80", 2, "at byte 1" },              /* lone continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[G4_ERR_MAX] = "";
        struct tok_ids ids = { 0 };
        tok_ids_push(&ids, 42);
        EXPECT(tok_encode(t, bad[i].text, bad[i].len, 0, &ids, err) < 0);
        EXPECT(ids.n == 1);
        EXPECT_STR_HAS(err, "UTF-8");
        EXPECT_STR_HAS(err, bad[i].where);
        tok_ids_free(&ids);
    }
    /* NUL is valid UTF-8: it goes through byte fallback */
    struct tok_ids ids = { 0 };
    char err[G4_ERR_MAX];
    EXPECT(tok_encode(t, "a\0b", 3, 0, &ids, err) == 0 && ids.n == 3 && ids.ids[1] == BYTE0);
    tok_ids_free(&ids);
    tok_free(t);
}

static void test_decode_byte_runs(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .byte_fallback = true };
    struct tok *t = load_spec(&s);
    const char *fffd = "\xef\xbf\xbd";
    char want[64];
    DEC_IS(t, 0, "\xe2\x82\xac", BYTE0 + 0xE2, BYTE0 + 0x82, BYTE0 + 0xAC); /* € */
    DEC_IS(t, 0, " a b", 10, 4, 10, 5);                                    /* ▁ -> space */
    snprintf(want, sizeof want, "%s%sa", fffd, fffd);                       /* C3 28: not UTF-8 */
    DEC_IS(t, 0, want, BYTE0 + 0xC3, BYTE0 + 0x28, 4);
    /* tokenizers turns the whole run into U+FFFDs when any byte of it is bad, valid emoji included */
    snprintf(want, sizeof want, "%s%s%s%s%s", fffd, fffd, fffd, fffd, fffd);
    DEC_IS(t, 0, want, BYTE0 + 0xF0, BYTE0 + 0x9F, BYTE0 + 0x98, BYTE0 + 0x80, BYTE0 + 0xFF);
    /* a special token between byte tokens is dropped before the decoder sees the run */
    const char *added = "[{\"id\":271,\"content\":\"<x>\",\"special\":true}]"; /* after 15 + 256 */
    tok_free(t);
    s.added_json = added;
    t = load_spec(&s);
    EXPECT(t);
    if (!t) return;
    DEC_IS(t, TOK_DEC_SKIP_SPECIAL, "\xc3\xa9", BYTE0 + 0xC3, 271, BYTE0 + 0xA9);
    snprintf(want, sizeof want, "%s<x>%s", fffd, fffd);
    DEC_IS(t, 0, want, BYTE0 + 0xC3, 271, BYTE0 + 0xA9);
    /* an id outside the vocabulary is an error, not a crash */
    char err[G4_ERR_MAX] = "";
    int32_t badid[] = { 4, 99999 };
    EXPECT(tok_decode(t, badid, 2, 0, NULL, err) == NULL);
    EXPECT_STR_HAS(err, "99999");
    tok_free(t);
}

/* Concatenates stream pushes of ids (then the flush) into out. */
static int stream_all(const struct tok *t, const int32_t *ids, size_t n, int flags, char *out, size_t cap,
                      int *nonempty_pushes)
{
    char err[G4_ERR_MAX];
    struct tok_stream *s = tok_stream_create(t, flags);
    size_t used = 0;
    *nonempty_pushes = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *text;
        size_t len;
        if (i < n) {
            if (tok_stream_push(s, ids[i], &text, &len, err)) {
                tok_stream_destroy(s);
                return -1;
            }
        } else {
            tok_stream_flush(s, &text, &len);
        }
        if (len) (*nonempty_pushes)++;
        if (used + len + 1 > cap) break;
        memcpy(out + used, text, len);
        used += len;
    }
    out[used] = '\0';
    tok_stream_destroy(s);
    return 0;
}

static void test_stream_split_characters(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .byte_fallback = true, .normalize = true };
    struct tok *t = load_spec(&s);
    char err[G4_ERR_MAX];
    struct tok_stream *st = tok_stream_create(t, 0);
    const char *text;
    size_t len;
    /* 😀 pushed byte by byte: nothing until the fourth byte */
    const int32_t emoji[] = { BYTE0 + 0xF0, BYTE0 + 0x9F, BYTE0 + 0x98, BYTE0 + 0x80 };
    for (int i = 0; i < 4; i++) {
        EXPECT(tok_stream_push(st, emoji[i], &text, &len, err) == 0);
        if (i < 3) EXPECT(len == 0);
        else EXPECT(len == 4 && memcmp(text, "\xf0\x9f\x98\x80", 4) == 0);
    }
    EXPECT(tok_stream_push(st, 11, &text, &len, err) == 0 && len == 2 && memcmp(text, " a", 2) == 0);
    /* a cut character followed by text: U+FFFD per held byte, then the text */
    EXPECT(tok_stream_push(st, BYTE0 + 0xE2, &text, &len, err) == 0 && len == 0);
    EXPECT(tok_stream_push(st, BYTE0 + 0x82, &text, &len, err) == 0 && len == 0);
    EXPECT(tok_stream_push(st, 4, &text, &len, err) == 0 && len == 7 &&
           memcmp(text, "\xef\xbf\xbd\xef\xbf\xbd" "a", 7) == 0);
    /* a bad second byte: the held byte becomes U+FFFD and the new byte starts afresh */
    EXPECT(tok_stream_push(st, BYTE0 + 0xE0, &text, &len, err) == 0 && len == 0);
    EXPECT(tok_stream_push(st, BYTE0 + 0x41, &text, &len, err) == 0 && len == 4 &&
           memcmp(text, "\xef\xbf\xbd" "A", 4) == 0);
    /* second bytes UTF-8 forbids after these leads (overlong, surrogate, above U+10FFFF): both bytes bad */
    static const unsigned char leads[][2] = { { 0xE0, 0x9F }, { 0xED, 0xA0 }, { 0xF0, 0x8F }, { 0xF4, 0x90 }, { 0xC2, 0x41 } };
    for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++) {
        EXPECT(tok_stream_push(st, BYTE0 + leads[i][0], &text, &len, err) == 0 && len == 0);
        EXPECT(tok_stream_push(st, BYTE0 + leads[i][1], &text, &len, err) == 0);
        if (leads[i][1] < 0x80) EXPECT(len == 4 && memcmp(text, "\xef\xbf\xbd" "A", 4) == 0);
        else EXPECTF(len == 6 && memcmp(text, "\xef\xbf\xbd\xef\xbf\xbd", 6) == 0, "lead %02X", leads[i][0]);
    }
    /* flush: leftovers as U+FFFD, then the stream is empty */
    EXPECT(tok_stream_push(st, BYTE0 + 0xF0, &text, &len, err) == 0 && len == 0);
    tok_stream_flush(st, &text, &len);
    EXPECT(len == 3 && memcmp(text, "\xef\xbf\xbd", 3) == 0);
    tok_stream_flush(st, &text, &len);
    EXPECT(len == 0);
    EXPECT(tok_stream_push(st, 777777, &text, &len, err) < 0);
    EXPECT_STR_HAS(err, "777777");
    tok_stream_destroy(st);

    /* stream == whole decode for encodings of valid text */
    const char *texts[] = { "a b\xc3\xa9 \xf0\x9f\x98\x80" "abc", "\xe4\xbd\xa0\xe5\xa5\xbd a", "  ", "x\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd" };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct tok_ids ids = { 0 };
        char streamed[256];
        int pushes;
        EXPECT(tok_encode(t, texts[i], strlen(texts[i]), 0, &ids, err) == 0);
        char *whole = tok_decode(t, ids.ids, ids.n, 0, NULL, err);
        EXPECT(stream_all(t, ids.ids, ids.n, 0, streamed, sizeof streamed, &pushes) == 0);
        EXPECTF(whole && strcmp(whole, streamed) == 0, "whole \"%s\" streamed \"%s\"", whole, streamed);
        EXPECTF(strcmp(streamed, texts[i]) == 0, "round trip \"%s\" -> \"%s\"", texts[i], streamed);
        free(whole);
        tok_ids_free(&ids);
    }
    tok_free(t);
}

/* ---- randomised: the heap BPE against a naive one ---------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

#define RV_MAX 64
static char rv[RV_MAX][16];   /* random vocabulary: "<unk>", "a", "b", "c", then merge results */
static int rv_n, rm_left[RV_MAX], rm_right[RV_MAX], rm_n;

static int rv_find(const char *s)
{
    for (int i = 0; i < rv_n; i++)
        if (strcmp(rv[i], s) == 0) return i;
    return -1;
}

/* The naive BPE: repeatedly merge the lowest-rank adjacent pair, leftmost first. */
static int naive_bpe(const char *text, int *out)
{
    int n = 0;
    for (const char *p = text; *p; p++) out[n++] = rv_find((char[]){ *p, 0 });
    for (;;) {
        int best = -1, best_rank = RV_MAX;
        for (int i = 0; i + 1 < n; i++)
            for (int r = 0; r < rm_n && r < best_rank; r++)
                if (rm_left[r] == out[i] && rm_right[r] == out[i + 1]) {
                    best = i;
                    best_rank = r;
                }
        if (best < 0) return n;
        char merged[32];
        snprintf(merged, sizeof merged, "%s%s", rv[out[best]], rv[out[best + 1]]);
        out[best] = rv_find(merged);
        memmove(out + best + 1, out + best + 2, (size_t)(n - best - 2) * sizeof *out);
        n--;
    }
}

static void test_bpe_matches_naive_random(void)
{
    for (int round = 0; round < 20; round++) {
        rv_n = 0;
        rm_n = 0;
        const char *base[] = { "<unk>", "a", "b", "c" };
        for (int i = 0; i < 4; i++) strcpy(rv[rv_n++], base[i]);
        while (rv_n < 40) {
            int l = (int)rnd((uint32_t)rv_n - 1) + 1, r = (int)rnd((uint32_t)rv_n - 1) + 1;
            char m[32];
            if (strlen(rv[l]) + strlen(rv[r]) > 8) continue;
            snprintf(m, sizeof m, "%s%s", rv[l], rv[r]);
            if (rv_find(m) >= 0) continue;
            strcpy(rv[rv_n++], m);
            rm_left[rm_n] = l;
            rm_right[rm_n++] = r;
        }
        const char *vocab[RV_MAX + 1], *merges[RV_MAX + 1];
        char mtext[RV_MAX][40];
        for (int i = 0; i < rv_n; i++) vocab[i] = rv[i];
        vocab[rv_n] = NULL;
        for (int i = 0; i < rm_n; i++) {
            snprintf(mtext[i], sizeof mtext[i], "%s %s", rv[rm_left[i]], rv[rm_right[i]]);
            merges[i] = mtext[i];
        }
        merges[rm_n] = NULL;
        struct spec s = { .vocab = vocab, .merges = merges };
        struct tok *t = load_spec(&s);
        EXPECT(t);
        if (!t) return;
        for (int k = 0; k < 200; k++) {
            char text[64];
            int len = (int)rnd(40), want[64];
            for (int i = 0; i < len; i++) text[i] = (char)('a' + rnd(3));
            text[len] = '\0';
            int n = naive_bpe(text, want);
            want[n] = -1;
            EXPECT(enc_is(t, text, 0, want));
        }
        tok_free(t);
    }
}

/* ---- long space-free text: must be fast and equal to the pieces encoded one by one --------------------- */

static void test_long_word(void)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST, .byte_fallback = true, .normalize = true };
    struct tok *t = load_spec(&s);
    size_t n = 1 << 20;
    char *text = malloc(n + 1), err[G4_ERR_MAX];
    for (size_t i = 0; i < n; i += 2) memcpy(text + i, "ab", 2);
    text[n] = '\0';
    struct tok_ids ids = { 0 };
    EXPECT(tok_encode(t, text, n, 0, &ids, err) == 0);
    EXPECT(ids.n == n / 2);
    int all_ab = 1;
    for (size_t i = 0; i < ids.n; i++) all_ab &= ids.ids[i] == 7;
    EXPECT(all_ab);
    tok_ids_free(&ids);
    for (size_t i = 0; i < n; i++) text[i] = ' '; /* 1 MB of spaces: one run of ▁ */
    EXPECT(tok_encode(t, text, n, 0, &ids, err) == 0 && ids.n == n);
    tok_ids_free(&ids);
    free(text);
    tok_free(t);
}

/* ---- refusals ------------------------------------------------------------------------------------------ */

/* Loads json text and expects failure with a message containing want. */
static void expect_refused(const char *json, const char *want)
{
    char err[G4_ERR_MAX] = "";
    struct tok *t = tok_load_mem(json, strlen(json), NULL, 0, "bad.json", err);
    EXPECTF(t == NULL, "loaded although \"%s\" was expected", want);
    EXPECT_STR_HAS(err, want);
    EXPECT_STR_HAS(err, "bad.json");
    tok_free(t);
}

/* make_json for V_ABC with one member replaced (model key when model_key is set). */
static char *json_with(const char *key, const char *value_json, bool model_key)
{
    struct spec s = { .vocab = V_ABC, .merges = M_AB_FIRST };
    char *json = make_json(&s);
    cJSON *root = cJSON_Parse(json), *obj = model_key ? cJSON_GetObjectItem(root, "model") : root;
    free(json);
    cJSON *v = value_json ? cJSON_Parse(value_json) : NULL;
    if (v) {
        if (cJSON_GetObjectItem(obj, key)) cJSON_ReplaceItemInObject(obj, key, v);
        else cJSON_AddItemToObject(obj, key, v);
    } else {
        cJSON_DeleteItemFromObject(obj, key);
    }
    json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return json;
}

static void test_bad_tokenizer_json(void)
{
    static const struct { const char *key, *value; bool model; const char *want; } cases[] = {
        { "type", "\"WordPiece\"", true, "model.type \"WordPiece\" is not supported" },
        { "type", NULL, true, "model.type is missing" },
        { "model", NULL, false, "\"model\" is missing" },
        { "vocab", NULL, true, "model.vocab is missing" },
        { "merges", "[\"a zz\"]", true, "\"zz\" is not in model.vocab" },
        { "merges", "[\"a\"]", true, "model.merges[0]" },
        { "vocab", "{\"a\":0,\"b\":0}", true, "id 0 is given to both" },
        { "vocab", "{\"a\":-1}", true, "outside" },
        { "unk_token", "\"<nope>\"", true, "model.unk_token \"<nope>\" is not in model.vocab" },
        { "dropout", "0.1", true, "model.dropout" },
        { "continuing_subword_prefix", "\"##\"", true, "continuing_subword_prefix" },
        { "normalizer", "{\"type\":\"NFKC\"}", false, "normalizer type \"NFKC\" is not supported" },
        { "normalizer", "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},\"content\":\"x\"}", false, "Regex" },
        { "pre_tokenizer", "{\"type\":\"ByteLevel\"}", false, "pre_tokenizer type \"ByteLevel\"" },
        { "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Isolated\"}", false, "Isolated" },
        { "decoder", NULL, false, "decoder is missing" },
        { "decoder", "{\"type\":\"ByteLevel\"}", false, "decoder type \"ByteLevel\"" },
        { "post_processor", "{\"type\":\"BertProcessing\"}", false, "post_processor type \"BertProcessing\"" },
        { "added_tokens", "[{\"id\":15,\"content\":\"<t>\",\"lstrip\":true}]", false, "lstrip=true is not supported" },
        { "added_tokens", "[{\"id\":15,\"content\":\"<t>\",\"normalized\":true}]", false, "normalized=true" },
        { "added_tokens", "[{\"id\":99,\"content\":\"<t>\"}]", false, "would give it id 15" },
        { "added_tokens", "[{\"id\":4,\"content\":\"b\"}]", false, "would give it id 5" },
        { "added_tokens", "[{\"id\":15,\"content\":\"<t>\"},{\"id\":15,\"content\":\"<t>\"}]", false, "\"<t>\" appears twice" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = json_with(cases[i].key, cases[i].value, cases[i].model);
        expect_refused(json, cases[i].want);
        free(json);
    }
    /* broken JSON: the message gives the byte offset */
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,}", "bad JSON at byte 43");
    expect_refused("", "bad JSON at byte 0");
    expect_refused("[1, 2]", "expected '{'");
    expect_refused("{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}} x", "text after the top-level object");
    expect_refused("{\"model\": {\"vocab\": {\"\xff\": 0}, \"merges\": []}}", "invalid UTF-8");
    expect_refused("{\"model\": {\"vocab\": {\"\\ud800\": 0}, \"merges\": []}}", "surrogate");
    /* a missing file */
    char err[G4_ERR_MAX] = "";
    EXPECT(tok_load("/nonexistent/tokenizer.json", err) == NULL);
    EXPECT_STR_HAS(err, "/nonexistent/tokenizer.json");
}

/* tok_load and tok_load_dir read what was written to disk, merges in either order and form. */
static void test_load_from_files(void)
{
    const char *dir = test_tmpdir();
    char path[256], cpath[256], err[G4_ERR_MAX] = "";
    const char *json = "{\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,"
                       "\"decoder\":{\"type\":\"Fuse\"},"
                       "\"model\":{\"merges\":[[\"a\",\"b\"]],\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2}}}";
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
    EXPECT(util_write_file(path, json, strlen(json), err) == 0);
    struct tok *t = tok_load(path, err);
    EXPECTF(t != NULL, "%s", err);
    if (!t) return;
    ENC_IS(t, "abab", 0, 2, 2);
    EXPECT(tok_config_id(t, "bos_token") == -1);
    tok_free(t);
    EXPECT(util_write_file(cpath, "{\"bos_token\":\"a\"}", 17, err) == 0);
    t = tok_load_dir(dir, err);
    EXPECTF(t != NULL, "%s", err);
    if (!t) return;
    ENC_IS(t, "b", TOK_ENC_ADD_BOS, 0, 1);
    tok_free(t);
}

int main(void)
{
    RUN_TEST(test_merge_rank_order);
    RUN_TEST(test_merge_leftmost_on_ties_and_chains);
    RUN_TEST(test_added_tokens_longest_leftmost);
    RUN_TEST(test_byte_fallback_and_unk);
    RUN_TEST(test_partial_byte_fallback_quirk);
    RUN_TEST(test_split_pre_tokenizer);
    RUN_TEST(test_post_processor_and_bos);
    RUN_TEST(test_invalid_utf8_rejected);
    RUN_TEST(test_decode_byte_runs);
    RUN_TEST(test_stream_split_characters);
    RUN_TEST(test_bpe_matches_naive_random);
    RUN_TEST(test_long_word);
    RUN_TEST(test_bad_tokenizer_json);
    RUN_TEST(test_load_from_files);
    return test_report();
}
