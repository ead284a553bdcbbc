/* tokenizer_load — reads a Hugging Face tokenizer.json (+ optional tokenizer_config.json) into struct tok.
 *
 * Accepted (everything else is refused with a message naming the field):
 *   model          BPE: vocab, merges (["a","b"] pairs or "a b" strings), unk_token, fuse_unk, byte_fallback,
 *                  ignore_merges; dropout null/0; no continuing_subword_prefix / end_of_word_suffix
 *   added_tokens   any number, special or not; lstrip/rstrip/single_word/normalized must be false
 *   normalizer     null, Replace (String pattern), Sequence of those
 *   pre_tokenizer  null, Split (String pattern, MergedWithPrevious, invert false)
 *   decoder        Replace* then ByteFallback? then Fuse?, alone or in a Sequence
 *   post_processor null, TemplateProcessing (its "single" template)
 * Loading speed matters (Gemma's file is 33 MB): vocab and merges are read by the scanner in
 * tokenizer_util.c straight into hash maps; only the small members go through cJSON. Nothing here touches
 * text encoding or decoding. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the scan found: spans of the small members (parsed later with cJSON) and what was read in place. */
struct tok_spans {
    struct tj_span added, normalizer, pre_tokenizer, post_processor, decoder;
    struct tj_span type, merges, unk, fuse_unk, byte_fallback, ignore_merges, dropout, prefix, suffix;
    bool model, vocab, merges_read; /* "model" seen; vocab and merges already read into t */
    size_t vocab_count;             /* entries in model.vocab */
};

/* One vocab entry while loading, before the per-id arrays exist. */
struct vocab_entry {
    uint32_t off, len;
    int32_t id;
};

/* ========================================================================================================
 * strings and the vocabulary map
 * ====================================================================================================== */

/* Copies s[0..n) and a NUL into the arena; returns its offset. */
static uint32_t arena_add(struct tok *t, const char *s, size_t n)
{
    if (t->arena_len + n + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
        while (cap < t->arena_len + n + 1) cap *= 2;
        G4_CHECK(cap < UINT32_MAX, "tokenizer string arena over 4 GiB");
        t->arena = g4_realloc(t->arena, cap);
        t->arena_cap = cap;
    }
    uint32_t off = (uint32_t)t->arena_len;
    memcpy(t->arena + off, s, n);
    t->arena[off + n] = '\0';
    t->arena_len += n + 1;
    return off;
}

/* Whether the piece in slot v is s[0..n) (pieces are short: a plain loop beats a memcmp call). */
static inline bool slot_is(const struct tok *t, const struct tok_vslot *v, const char *s, size_t n)
{
    if (v->len != n) return false;
    const char *p = t->arena + v->off;
    for (size_t i = 0; i < n; i++)
        if (p[i] != s[i]) return false;
    return true;
}

int32_t tok_vocab_get(const struct tok *t, const char *s, size_t n)
{
    if (!t->vslot) return -1;
    uint32_t h = tok_hash(s, n), i = h & t->vmask;
    for (;;) {
        const struct tok_vslot *v = &t->vslot[i];
        if (v->id < 0) return -1;
        if (v->hash == h && slot_is(t, v, s, n)) return v->id;
        i = (i + 1) & t->vmask;
    }
}

/* Inserts id (whose piece is already set) into the vocabulary map. -1 if the piece is already there. */
static int vocab_insert(struct tok *t, int32_t id)
{
    const char *s = t->arena + t->piece_off[id];
    size_t n = t->piece_len[id];
    uint32_t h = tok_hash(s, n), i = h & t->vmask;
    while (t->vslot[i].id >= 0) {
        if (t->vslot[i].hash == h && slot_is(t, &t->vslot[i], s, n)) return -1;
        i = (i + 1) & t->vmask;
    }
    t->vslot[i] = (struct tok_vslot){ h, id, t->piece_off[id], (uint32_t)n };
    return 0;
}

const char *tok_piece_len(const struct tok *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_ids) return NULL;
    int32_t a = t->added_of[id];
    if (a >= 0) {
        *len = t->added[a].len;
        return t->arena + t->added[a].off;
    }
    if (t->piece_off[id] == TOK_NO_PIECE) return NULL;
    *len = t->piece_len[id];
    return t->arena + t->piece_off[id];
}

/* ========================================================================================================
 * small members
 * ====================================================================================================== */

/* Parses a member's span with cJSON; NULL (no error) when the member is absent or JSON null. */
static int span_json(const struct tj_span *sp, const char *name, const char *field, cJSON **out, char *err)
{
    *out = NULL;
    if (!sp->p) return 0;
    cJSON *v = cJSON_ParseWithLength(sp->p, sp->n);
    if (!v) return g4_errf(err, "%s: %s: cannot be parsed", name, field);
    if (cJSON_IsNull(v)) {
        cJSON_Delete(v);
        return 0;
    }
    *out = v;
    return 0;
}

/* A boolean member (absent or null = false). */
static int span_bool(const struct tj_span *sp, const char *name, const char *field, bool *out, char *err)
{
    cJSON *v;
    *out = false;
    if (span_json(sp, name, field, &v, err)) return -1;
    if (!v) return 0;
    int rc = 0;
    if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v);
    else rc = g4_errf(err, "%s: %s: expected true or false", name, field);
    cJSON_Delete(v);
    return rc;
}

/* ========================================================================================================
 * model: vocab and merges
 * ====================================================================================================== */

/* Grows the per-id arrays to n ids (new ids: no piece). */
static void grow_ids(struct tok *t, int32_t n)
{
    t->piece_off = g4_realloc(t->piece_off, (size_t)n * sizeof *t->piece_off + 1);
    t->piece_len = g4_realloc(t->piece_len, (size_t)n * sizeof *t->piece_len + 1);
    for (int32_t i = t->n_ids; i < n; i++) {
        t->piece_off[i] = TOK_NO_PIECE;
        t->piece_len[i] = 0;
    }
    t->n_ids = n;
}

/* Builds piece_off/len and the vocabulary map from the entries. Refuses duplicate pieces and ids. */
static int index_vocab(struct tok *t, const struct vocab_entry *e, size_t n, int32_t max_id, char *err)
{
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    grow_ids(t, max_id + 1);
    t->vslot = tok_table_alloc(cap * sizeof *t->vslot);
    memset(t->vslot, 0xff, cap * sizeof *t->vslot);
    t->vmask = (uint32_t)(cap - 1);
    for (size_t i = 0; i < n; i++) {
        int32_t id = e[i].id;
        if (t->piece_off[id] != TOK_NO_PIECE)
            return g4_errf(err, "%s: model.vocab: id %d is given to both \"%s\" and \"%s\"", t->name, id,
                           t->arena + t->piece_off[id], t->arena + e[i].off);
        t->piece_off[id] = e[i].off;
        t->piece_len[id] = e[i].len;
        if (vocab_insert(t, id))
            return g4_errf(err, "%s: model.vocab: \"%s\" appears twice", t->name, t->arena + e[i].off);
    }
    return 0;
}

/* Reads model.vocab (an object "piece": id) at the cursor and indexes it. */
static int read_vocab(struct tok *t, struct tj *j, size_t *count_out)
{
    struct tok_buf key = { 0 };
    struct vocab_entry *e = NULL;
    size_t n = 0, cap = 0;
    int count = 0, r, rc = -1;
    int32_t max_id = -1;
    if (tj_open(j, '{')) {
        g4_errf(j->err, "%s: model.vocab is not an object", t->name);
        goto fail;
    }
    while ((r = tj_next(j, '}', &count, &key)) == 1) {
        int64_t id;
        if (tj_int(j, &id)) goto fail;
        if (id < 0 || id >= TOK_MAX_ID) {
            g4_errf(j->err, "%s: model.vocab: id %lld of \"%s\" is outside 0..%d", t->name, (long long)id,
                    key.p, TOK_MAX_ID - 1);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            e = g4_realloc(e, cap * sizeof *e);
        }
        e[n].off = arena_add(t, key.p, key.n);
        e[n].len = (uint32_t)key.n;
        e[n].id = (int32_t)id;
        if (e[n].id > max_id) max_id = e[n].id;
        n++;
    }
    if (r == 0 && index_vocab(t, e, n, max_id, j->err) == 0) rc = 0;
    *count_out = n;
fail:
    tb_free(&key);
    free(e);
    return rc;
}

/* Looks up one side of a merge, with a message naming the merge when it is not in the vocabulary. */
static int merge_side(struct tok *t, size_t rank, const char *s, size_t n, int32_t *id, char *err)
{
    *id = tok_vocab_get(t, s, n);
    if (*id < 0) return g4_errf(err, "%s: model.merges[%zu]: \"%s\" is not in model.vocab", t->name, rank, s);
    return 0;
}

/* Reads model.merges at the cursor: rank = position; (left id, right id) -> (rank, id of left+right). A later duplicate of
 * a pair replaces the earlier one, as in tokenizers' HashMap. */
static int read_merges(struct tok *t, struct tj *j)
{
    struct tok_buf a = { 0 }, b = { 0 };
    int count = 0, r, rc = -1;
    size_t rank = 0;
    char *err = j->err;
    u64map_init(&t->merges, (size_t)t->n_ids * 2); /* the table grows if there are more */
    t->junction = g4_calloc(TOK_JUNCTION_BITS / 64, sizeof *t->junction);
    if (tj_open(j, '[')) {
        g4_errf(err, "%s: model.merges is not an array", t->name);
        goto free_bufs;
    }
    while ((r = tj_next(j, ']', &count, NULL)) == 1) {
        tj_ws(j);
        if (j->p < j->end && *j->p == '[') { /* ["left", "right"] */
            int c2 = 0;
            j->p++;
            if (tj_next(j, ']', &c2, NULL) != 1 || tj_string(j, &a) || tj_next(j, ']', &c2, NULL) != 1 ||
                tj_string(j, &b) || tj_next(j, ']', &c2, NULL) != 0) {
                g4_errf(err, "%s: model.merges[%zu]: expected a pair of strings", t->name, rank);
                goto free_bufs;
            }
        } else { /* "left right" */
            if (tj_string(j, &a)) goto free_bufs;
            char *sp1 = memchr(a.p, ' ', a.n);
            if (!sp1 || memchr(sp1 + 1, ' ', a.n - (size_t)(sp1 + 1 - a.p))) {
                g4_errf(err, "%s: model.merges[%zu]: \"%s\" is not two pieces separated by one space", t->name,
                        rank, a.p);
                goto free_bufs;
            }
            b.n = 0;
            tb_put(&b, sp1 + 1, a.n - (size_t)(sp1 + 1 - a.p));
            a.n = (size_t)(sp1 - a.p);
            a.p[a.n] = '\0';
        }
        int32_t la, lb, merged;
        if (merge_side(t, rank, a.p, a.n, &la, err) || merge_side(t, rank, b.p, b.n, &lb, err)) goto free_bufs;
        tb_put(&a, b.p, b.n);
        if (merge_side(t, rank, a.p, a.n, &merged, err)) goto free_bufs;
        if (rank >= UINT32_MAX) {
            g4_errf(err, "%s: model.merges: too many merges", t->name);
            goto free_bufs;
        }
        bool fresh;
        struct tok_u64slot *s = u64map_put(&t->merges, ((uint64_t)(uint32_t)la << 32) | (uint32_t)lb, &fresh);
        s->a = (uint32_t)rank;
        s->b = merged;
        rank++;
        /* the junction: last character of left, first of right (a now holds left + right) */
        size_t split = a.n - b.n, last = split ? split - 1 : 0;
        while (last > 0 && ((unsigned char)a.p[last] & 0xC0) == 0x80) last--;
        const unsigned char *u = (const unsigned char *)a.p;
        int l1 = split ? utf8_valid_len(u + last, split - last) : 0, l2 = utf8_valid_len(u + split, b.n);
        if (l1 && l2) {
            uint32_t bit = tok_junction_bit(utf8_cp(u + last, l1), utf8_cp(u + split, l2));
            t->junction[bit >> 6] |= 1ull << (bit & 63);
        }
    }
    if (r == 0) rc = 0;
free_bufs:
    tb_free(&a);
    tb_free(&b);
    return rc;
}

/* model.type must be "BPE". */
static int check_model_type(struct tok *t, const struct tj_span *sp, char *err)
{
    cJSON *v;
    int rc = 0;
    if (span_json(sp, t->name, "model.type", &v, err)) return -1;
    if (!cJSON_IsString(v)) rc = g4_errf(err, "%s: model.type is missing (only BPE is supported)", t->name);
    else if (strcmp(v->valuestring, "BPE") != 0)
        rc = g4_errf(err, "%s: model.type \"%s\" is not supported (only BPE)", t->name, v->valuestring);
    cJSON_Delete(v);
    return rc;
}

/* The scalar members of model: type, flags; refuses what is not implemented. */
static int read_model_options(struct tok *t, const struct tok_spans *sp, char *err)
{
    cJSON *v = NULL;
    int rc = -1;
    if (check_model_type(t, &sp->type, err)) return -1;
    if (span_json(&sp->dropout, t->name, "model.dropout", &v, err)) return -1;
    if (v && !(cJSON_IsNumber(v) && v->valuedouble == 0.0)) {
        g4_errf(err, "%s: model.dropout is not supported (must be null)", t->name);
        goto done;
    }
    cJSON_Delete(v);
    if (span_json(&sp->prefix, t->name, "model.continuing_subword_prefix", &v, err)) return -1;
    if (v && !(cJSON_IsString(v) && v->valuestring[0] == '\0')) {
        g4_errf(err, "%s: model.continuing_subword_prefix is not supported (must be null)", t->name);
        goto done;
    }
    cJSON_Delete(v);
    if (span_json(&sp->suffix, t->name, "model.end_of_word_suffix", &v, err)) return -1;
    if (v && !(cJSON_IsString(v) && v->valuestring[0] == '\0')) {
        g4_errf(err, "%s: model.end_of_word_suffix is not supported (must be null)", t->name);
        goto done;
    }
    cJSON_Delete(v);
    v = NULL;
    if (span_bool(&sp->fuse_unk, t->name, "model.fuse_unk", &t->fuse_unk, err) ||
        span_bool(&sp->byte_fallback, t->name, "model.byte_fallback", &t->byte_fallback, err) ||
        span_bool(&sp->ignore_merges, t->name, "model.ignore_merges", &t->ignore_merges, err))
        goto done;
    rc = 0;
done:
    cJSON_Delete(v);
    return rc;
}

/* ========================================================================================================
 * the scan: one pass over the file
 * ====================================================================================================== */

/* The members of "model", at the cursor: vocab (and merges, when vocab came first) are read in place, the
 * rest recorded as spans. */
static int scan_model(struct tok *t, struct tj *j, struct tok_spans *sp)
{
    static const struct { const char *key; size_t off; } members[] = {
        { "type", offsetof(struct tok_spans, type) },
        { "merges", offsetof(struct tok_spans, merges) },
        { "unk_token", offsetof(struct tok_spans, unk) },
        { "fuse_unk", offsetof(struct tok_spans, fuse_unk) },
        { "byte_fallback", offsetof(struct tok_spans, byte_fallback) },
        { "ignore_merges", offsetof(struct tok_spans, ignore_merges) },
        { "dropout", offsetof(struct tok_spans, dropout) },
        { "continuing_subword_prefix", offsetof(struct tok_spans, prefix) },
        { "end_of_word_suffix", offsetof(struct tok_spans, suffix) },
    };
    struct tok_buf key = { 0 };
    int count = 0, r, rc = -1;
    if (tj_open(j, '{')) {
        g4_errf(j->err, "%s: \"model\" is not an object", t->name);
        goto free_key;
    }
    while ((r = tj_next(j, '}', &count, &key)) == 1) {
        if (strcmp(key.p, "vocab") == 0 && !sp->vocab) {
            if (read_vocab(t, j, &sp->vocab_count)) goto free_key;
            sp->vocab = true;
            continue;
        }
        if (strcmp(key.p, "merges") == 0 && sp->vocab && !sp->merges_read) {
            if (read_merges(t, j)) goto free_key;
            sp->merges_read = true;
            continue;
        }
        struct tj_span tmp, *dst = &tmp;
        for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
            if (strcmp(key.p, members[i].key) == 0) dst = (struct tj_span *)((char *)sp + members[i].off);
        if (tj_skip_span(j, dst)) goto free_key;
        if (dst == &sp->type && check_model_type(t, dst, j->err)) goto free_key;
    }
    if (r == 0) rc = 0;
free_key:
    tb_free(&key);
    return rc;
}

/* The top-level object: "model" is scanned in place, the small members recorded as spans, unknown ones
 * skipped (validated). Then merges that came before vocab are read from their span. */
static int scan_file(struct tok *t, struct tj *j, struct tok_spans *sp)
{
    static const struct { const char *key; size_t off; } members[] = {
        { "added_tokens", offsetof(struct tok_spans, added) },
        { "normalizer", offsetof(struct tok_spans, normalizer) },
        { "pre_tokenizer", offsetof(struct tok_spans, pre_tokenizer) },
        { "post_processor", offsetof(struct tok_spans, post_processor) },
        { "decoder", offsetof(struct tok_spans, decoder) },
    };
    struct tok_buf key = { 0 };
    int count = 0, r, rc = -1;
    memset(sp, 0, sizeof *sp);
    if (tj_open(j, '{')) goto free_key;
    while ((r = tj_next(j, '}', &count, &key)) == 1) {
        if (strcmp(key.p, "model") == 0 && !sp->model) {
            sp->model = true;
            if (scan_model(t, j, sp)) goto free_key;
            continue;
        }
        struct tj_span tmp, *dst = &tmp;
        for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
            if (strcmp(key.p, members[i].key) == 0) dst = (struct tj_span *)((char *)sp + members[i].off);
        if (tj_skip_span(j, dst)) goto free_key;
    }
    if (r < 0) goto free_key;
    tj_ws(j);
    if (j->p != j->end) {
        tj_fail(j, "text after the top-level object");
        goto free_key;
    }
    if (!sp->model || !sp->vocab || (!sp->merges_read && !sp->merges.p)) {
        g4_errf(j->err, "%s: %s is missing", t->name, !sp->model ? "\"model\"" : !sp->vocab ? "model.vocab" : "model.merges");
        goto free_key;
    }
    if (!sp->merges_read) {
        struct tj m = { j->base, sp->merges.p, sp->merges.p + sp->merges.n, j->name, j->err };
        if (read_merges(t, &m)) goto free_key;
        sp->merges_read = true;
    }
    rc = 0;
free_key:
    tb_free(&key);
    return rc;
}

/* model.unk_token -> unk_id (it must be in the vocabulary), and the <0xNN> byte ids. */
static int resolve_model_tokens(struct tok *t, const struct tok_spans *sp, char *err)
{
    cJSON *v;
    t->unk_id = -1;
    if (span_json(&sp->unk, t->name, "model.unk_token", &v, err)) return -1;
    if (v) {
        int rc = 0;
        if (!cJSON_IsString(v)) rc = g4_errf(err, "%s: model.unk_token: expected a string", t->name);
        else if ((t->unk_id = tok_vocab_get(t, v->valuestring, strlen(v->valuestring))) < 0)
            rc = g4_errf(err, "%s: model.unk_token \"%s\" is not in model.vocab", t->name, v->valuestring);
        cJSON_Delete(v);
        if (rc) return rc;
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = tok_vocab_get(t, name, 6);
    }
    return 0;
}

/* The one-character pieces by code point, for the first step of BPE. */
static void index_chars(struct tok *t)
{
    for (int32_t id = 0; id < t->n_ids; id++) {
        if (t->piece_off[id] == TOK_NO_PIECE) continue;
        const unsigned char *s = (const unsigned char *)t->arena + t->piece_off[id];
        int len = utf8_valid_len(s, t->piece_len[id]);
        if (len == 0 || (uint32_t)len != t->piece_len[id]) continue;
        uint32_t cp = utf8_cp(s, len);
        int32_t **page = &t->cp_page[cp >> 8];
        if (!*page) {
            *page = g4_malloc(256 * sizeof **page);
            for (int i = 0; i < 256; i++) (*page)[i] = -1;
        }
        (*page)[cp & 0xff] = id;
    }
}

/* ========================================================================================================
 * added tokens
 * ====================================================================================================== */

/* One boolean flag of an added token entry (absent = false). */
static bool added_flag(const cJSON *e, const char *flag)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, flag));
}

/* Reads added_tokens into t->added (ids as written; index_added checks them). *max_id is raised to the
 * largest id. */
static int read_added(struct tok *t, const struct tj_span *sp, int32_t *max_id, char *err)
{
    cJSON *arr, *e;
    int rc = -1, i = 0;
    if (span_json(sp, t->name, "added_tokens", &arr, err)) return -1;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr)) {
        g4_errf(err, "%s: added_tokens is not an array", t->name);
        goto done;
    }
    t->added = g4_calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *t->added);
    cJSON_ArrayForEach(e, arr) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        static const char *const flags[] = { "lstrip", "rstrip", "single_word", "normalized" };
        if (!cJSON_IsNumber(id) || !cJSON_IsString(content)) {
            g4_errf(err, "%s: added_tokens[%d]: needs a numeric \"id\" and a string \"content\"", t->name, i);
            goto done;
        }
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            if (added_flag(e, flags[f])) {
                g4_errf(err, "%s: added_tokens[%d] (\"%s\"): %s=true is not supported", t->name, i,
                        content->valuestring, flags[f]);
                goto done;
            }
        double d = id->valuedouble;
        if (d < 0 || d >= TOK_MAX_ID || d != (double)(int32_t)d) {
            g4_errf(err, "%s: added_tokens[%d] (\"%s\"): id %g is outside 0..%d", t->name, i, content->valuestring,
                    d, TOK_MAX_ID - 1);
            goto done;
        }
        i++;
        size_t len = strlen(content->valuestring);
        if (len == 0) continue; /* tokenizers ignores empty added tokens */
        struct tok_added *a = &t->added[t->n_added++];
        a->id = (int32_t)d;
        a->off = arena_add(t, content->valuestring, len);
        a->len = (uint32_t)len;
        a->special = added_flag(e, "special");
        if (a->id > *max_id) *max_id = a->id;
    }
    rc = 0;
done:
    cJSON_Delete(arr);
    return rc;
}

/* Builds the byte trie of added-token contents and added_of[], checking each id the way tokenizers assigns
 * them in file order: a content already in the vocabulary keeps its vocabulary id, a new one gets the next id
 * after the vocabulary (vocab_count entries) and the added tokens so far. Refuses repeated contents. */
static int index_added(struct tok *t, size_t vocab_count, char *err)
{
    int64_t max_added = -1;
    t->trie_cap = 64;
    t->trie_term = g4_malloc(t->trie_cap * sizeof *t->trie_term);
    t->trie_term[0] = -1;
    t->trie_nodes = 1;
    u64map_init(&t->trie, 64);
    for (int32_t k = 0; k < t->n_added; k++) {
        const struct tok_added *a = &t->added[k];
        const char *content = t->arena + a->off;
        const unsigned char *s = (const unsigned char *)content;
        uint32_t node = 0;
        t->first_byte[s[0]] = true;
        for (uint32_t i = 0; i < a->len; i++) {
            bool fresh;
            struct tok_u64slot *slot = u64map_put(&t->trie, ((uint64_t)node << 8) | s[i], &fresh);
            if (fresh) {
                if (t->trie_nodes == t->trie_cap) {
                    t->trie_cap *= 2;
                    t->trie_term = g4_realloc(t->trie_term, t->trie_cap * sizeof *t->trie_term);
                }
                t->trie_term[t->trie_nodes] = -1;
                slot->a = t->trie_nodes++;
            }
            node = slot->a;
        }
        if (t->trie_term[node] >= 0) return g4_errf(err, "%s: added_tokens: \"%s\" appears twice", t->name, content);
        t->trie_term[node] = k;
        int32_t want = tok_vocab_get(t, content, a->len);
        if (want < 0) {
            want = max_added >= (int64_t)vocab_count ? (int32_t)max_added + 1 : (int32_t)vocab_count;
            if (want < t->n_ids && t->piece_off[want] != TOK_NO_PIECE)
                return g4_errf(err, "%s: added token \"%s\" would get id %d, which model.vocab gives to \"%s\"",
                               t->name, content, want, t->arena + t->piece_off[want]);
        }
        if (a->id != want)
            return g4_errf(err, "%s: added token \"%s\" has id %d but tokenizers would give it id %d", t->name,
                           content, a->id, want);
        if (t->added_of[a->id] >= 0) return g4_errf(err, "%s: added_tokens: id %d appears twice", t->name, a->id);
        t->added_of[a->id] = k;
        if (want > max_added) max_added = want;
    }
    return 0;
}

int32_t tok_added_match(const struct tok *t, const unsigned char *s, size_t n, size_t *len)
{
    uint32_t node = 0;
    int32_t best = -1;
    for (size_t i = 0; i < n; i++) {
        const struct tok_u64slot *slot = u64map_get(&t->trie, ((uint64_t)node << 8) | s[i]);
        if (!slot) break;
        node = slot->a;
        if (t->trie_term[node] >= 0) {
            best = t->trie_term[node];
            *len = i + 1;
        }
    }
    return best;
}

/* ========================================================================================================
 * entry points
 * ====================================================================================================== */

/* Parses the four pipeline members with cJSON and hands them to tok_read_steps. */
static int read_pipeline(struct tok *t, const struct tok_spans *sp, char *err)
{
    cJSON *norm = NULL, *pre = NULL, *dec = NULL, *post = NULL;
    int rc = -1;
    if (span_json(&sp->normalizer, t->name, "normalizer", &norm, err) ||
        span_json(&sp->pre_tokenizer, t->name, "pre_tokenizer", &pre, err) ||
        span_json(&sp->decoder, t->name, "decoder", &dec, err) ||
        span_json(&sp->post_processor, t->name, "post_processor", &post, err))
        goto free_json;
    rc = tok_read_steps(t, norm, pre, dec, post, err);
free_json:
    cJSON_Delete(norm);
    cJSON_Delete(pre);
    cJSON_Delete(dec);
    cJSON_Delete(post);
    return rc;
}

struct tok *tok_load_mem(const char *json, size_t len, const char *config, size_t config_len, const char *name,
                         char *err)
{
    struct tok *t = g4_calloc(1, sizeof *t);
    struct tok_spans sp;
    int32_t max_id;
    t->name = g4_strdup(name ? name : "tokenizer.json");
    struct tj j = { json, json, json + len, t->name, err };
    if (scan_file(t, &j, &sp) || read_model_options(t, &sp, err)) goto fail;
    max_id = t->n_ids - 1;
    if (read_added(t, &sp.added, &max_id, err)) goto fail;
    if (max_id + 1 > t->n_ids) grow_ids(t, max_id + 1);
    t->added_of = g4_malloc((size_t)t->n_ids * sizeof *t->added_of + 1);
    memset(t->added_of, 0xff, (size_t)t->n_ids * sizeof *t->added_of);
    if (index_added(t, sp.vocab_count, err) || resolve_model_tokens(t, &sp, err) || read_pipeline(t, &sp, err)) goto fail;
    index_chars(t);
    if (config && tok_read_config(t, config, config_len, err)) goto fail;
    return t;
fail:
    tok_free(t);
    return NULL;
}

const char *tok_map_file(const char *path, size_t *len, char *err)
{
    struct stat st;
    const char *p = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        g4_errf(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        g4_errf(err, "%s: not a regular file", path);
        goto close_fd;
    }
    if ((uint64_t)st.st_size > TOK_MAX_FILE_BYTES) {
        g4_errf(err, "%s: %lld bytes is over the limit of %zu bytes", path, (long long)st.st_size, TOK_MAX_FILE_BYTES);
        goto close_fd;
    }
    *len = (size_t)st.st_size;
    if (*len == 0) {
        p = "";
        goto close_fd;
    }
    void *m = mmap(NULL, *len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) g4_errf(err, "%s: cannot map: %s", path, strerror(errno));
    else p = m;
close_fd:
    close(fd);
    return p;
}

void tok_unmap_file(const char *p, size_t len)
{
    if (p && len) munmap((void *)p, len);
}

struct tok *tok_load(const char *tokenizer_json, char *err)
{
    size_t len = 0;
    const char *json = tok_map_file(tokenizer_json, &len, err);
    if (!json) return NULL;
    struct tok *t = tok_load_mem(json, len, NULL, 0, tokenizer_json, err);
    tok_unmap_file(json, len);
    return t;
}

struct tok *tok_load_dir(const char *dir, char *err)
{
    char path[4096], cpath[4096];
    const char *json;
    char *config = NULL;
    size_t len = 0, clen = 0;
    struct tok *t = NULL;
    if (util_path_join(path, sizeof path, dir, "tokenizer.json") ||
        util_path_join(cpath, sizeof cpath, dir, "tokenizer_config.json")) {
        g4_errf(err, "%s: path too long", dir);
        return NULL;
    }
    if (!(json = tok_map_file(path, &len, err))) return NULL;
    if (access(cpath, F_OK) == 0 && !(config = util_read_file(cpath, TOK_MAX_FILE_BYTES, &clen, err)))
        goto unmap_json;
    t = tok_load_mem(json, len, config, clen, path, err);
unmap_json:
    tok_unmap_file(json, len);
    free(config);
    return t;
}

void tok_free(struct tok *t)
{
    if (!t) return;
    free(t->name);
    free(t->arena);
    free(t->piece_off);
    free(t->piece_len);
    tok_table_free(t->vslot, ((size_t)t->vmask + 1) * sizeof *t->vslot);
    u64map_free(&t->merges);
    free(t->junction);
    for (int i = 0; i < TOK_CP_PAGES; i++) free(t->cp_page[i]);
    free(t->added);
    free(t->added_of);
    u64map_free(&t->trie);
    free(t->trie_term);
    for (int i = 0; i < t->n_norm; i++) {
        free(t->norm[i].pat);
        free(t->norm[i].rep);
    }
    free(t->norm);
    free(t->split);
    for (int i = 0; i < t->n_dec_rep; i++) {
        free(t->dec_rep[i].pat);
        free(t->dec_rep[i].rep);
    }
    free(t->dec_rep);
    tok_ids_free(&t->post_pre);
    tok_ids_free(&t->post_post);
    for (int i = 0; i < t->n_cfg; i++) {
        free(t->cfg[i].field);
        free(t->cfg[i].value);
    }
    free(t->cfg);
    free(t);
}
