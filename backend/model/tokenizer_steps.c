/* tokenizer_steps — the small members of tokenizer.json (normalizer, pre_tokenizer, decoder, post_processor),
 * tokenizer_config.json, and the lookup functions of tokenizer.h.
 *
 * Each member is accepted only in the forms encode/decode implement (see tokenizer_load.c's header);
 * anything else is refused with the member and the type named, so a checkpoint whose tokenizer g4 would get
 * wrong fails at load instead of producing wrong ids. Nothing here runs per token. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

/* The "type" string of a pipeline object, or "" when absent. */
static const char *type_of(const cJSON *o)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : "";
}

/* The string of {"String": "..."} in o[key]; NULL with err naming field otherwise (Regex included). */
static const char *string_pattern(const struct tok *t, const cJSON *o, const char *field, char *err)
{
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(pat, "String");
    if (cJSON_IsString(s) && s->valuestring[0]) return s->valuestring;
    if (cJSON_GetObjectItemCaseSensitive(pat, "Regex"))
        g4_errf(err, "%s: %s: a Regex pattern is not supported (only String)", t->name, field);
    else
        g4_errf(err, "%s: %s: needs a non-empty {\"String\": ...} pattern", t->name, field);
    return NULL;
}

/* Appends a Replace step (pattern -> content) to *list. */
static int add_replace(struct tok *t, const cJSON *o, const char *field, struct tok_replace **list, int *n,
                       char *err)
{
    const char *pat = string_pattern(t, o, field, err);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(o, "content");
    if (!pat) return -1;
    if (!cJSON_IsString(content)) return g4_errf(err, "%s: %s: needs a string \"content\"", t->name, field);
    *list = g4_realloc(*list, (size_t)(*n + 1) * sizeof **list);
    struct tok_replace *r = &(*list)[(*n)++];
    r->pat = g4_strdup(pat);
    r->pat_len = strlen(pat);
    r->rep = g4_strdup(content->valuestring);
    r->rep_len = strlen(content->valuestring);
    return 0;
}

/* normalizer: null, Replace, or Sequence of Replace. */
static int read_normalizer(struct tok *t, const cJSON *o, char *err)
{
    if (!o) return 0;
    const char *ty = type_of(o);
    if (strcmp(ty, "Replace") == 0) return add_replace(t, o, "normalizer", &t->norm, &t->n_norm, err);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *e, *list = cJSON_GetObjectItemCaseSensitive(o, "normalizers");
        if (!cJSON_IsArray(list)) return g4_errf(err, "%s: normalizer Sequence needs \"normalizers\"", t->name);
        cJSON_ArrayForEach(e, list) {
            if (strcmp(type_of(e), "Replace") != 0)
                return g4_errf(err, "%s: normalizer type \"%s\" is not supported (Replace with a String pattern, or a Sequence of those)",
                               t->name, type_of(e));
            if (add_replace(t, e, "normalizer", &t->norm, &t->n_norm, err)) return -1;
        }
        return 0;
    }
    return g4_errf(err, "%s: normalizer type \"%s\" is not supported (Replace with a String pattern, or a Sequence of those)",
                   t->name, ty);
}

/* pre_tokenizer: null, or Split on a string with behavior MergedWithPrevious. */
static int read_pre_tokenizer(struct tok *t, const cJSON *o, char *err)
{
    if (!o) return 0;
    const char *ty = type_of(o);
    if (strcmp(ty, "Split") != 0)
        return g4_errf(err, "%s: pre_tokenizer type \"%s\" is not supported (only Split)", t->name, ty);
    const char *pat = string_pattern(t, o, "pre_tokenizer", err);
    const cJSON *behavior = cJSON_GetObjectItemCaseSensitive(o, "behavior");
    if (!pat) return -1;
    if (!cJSON_IsString(behavior) || strcmp(behavior->valuestring, "MergedWithPrevious") != 0)
        return g4_errf(err, "%s: pre_tokenizer Split behavior \"%s\" is not supported (only MergedWithPrevious)",
                       t->name, cJSON_IsString(behavior) ? behavior->valuestring : "");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "invert")))
        return g4_errf(err, "%s: pre_tokenizer Split invert=true is not supported", t->name);
    t->split = g4_strdup(pat);
    t->split_len = strlen(pat);
    return 0;
}

/* decoder: Replace steps, then at most one ByteFallback, then at most a final Fuse; alone or in a Sequence. */
static int read_decoder(struct tok *t, const cJSON *o, char *err)
{
    if (!o) return g4_errf(err, "%s: decoder is missing (a Sequence of Replace, ByteFallback, Fuse is needed)", t->name);
    const cJSON *e, *list = o;
    cJSON *single = NULL;
    int stage = 0, rc = 0; /* 0: Replace allowed, 1: after ByteFallback, 2: after Fuse */
    if (strcmp(type_of(o), "Sequence") == 0) {
        list = cJSON_GetObjectItemCaseSensitive(o, "decoders");
        if (!cJSON_IsArray(list)) return g4_errf(err, "%s: decoder Sequence needs \"decoders\"", t->name);
    } else {
        single = cJSON_CreateArray();
        cJSON_AddItemReferenceToArray(single, (cJSON *)o);
        list = single;
    }
    cJSON_ArrayForEach(e, list) {
        const char *ty = type_of(e);
        if (stage == 2) {
            rc = g4_errf(err, "%s: decoder step \"%s\" after Fuse is not supported", t->name, ty);
        } else if (strcmp(ty, "Replace") == 0) {
            if (stage != 0) rc = g4_errf(err, "%s: decoder Replace after ByteFallback is not supported", t->name);
            else rc = add_replace(t, e, "decoder Replace", &t->dec_rep, &t->n_dec_rep, err);
        } else if (strcmp(ty, "ByteFallback") == 0) {
            if (stage != 0) rc = g4_errf(err, "%s: decoder has ByteFallback twice", t->name);
            t->dec_byte_fallback = true;
            stage = 1;
        } else if (strcmp(ty, "Fuse") == 0) {
            stage = 2;
        } else {
            rc = g4_errf(err, "%s: decoder type \"%s\" is not supported (Replace, ByteFallback, Fuse)", t->name, ty);
        }
        if (rc) break;
    }
    cJSON_Delete(single);
    return rc;
}

/* post_processor: null, or TemplateProcessing whose "single" template is special tokens around $A. */
static int read_post_processor(struct tok *t, const cJSON *o, char *err)
{
    if (!o) return 0;
    const char *ty = type_of(o);
    if (strcmp(ty, "TemplateProcessing") != 0)
        return g4_errf(err, "%s: post_processor type \"%s\" is not supported (only TemplateProcessing)", t->name, ty);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(o, "special_tokens");
    const cJSON *e;
    bool seen_a = false;
    if (!cJSON_IsArray(single))
        return g4_errf(err, "%s: post_processor TemplateProcessing needs a \"single\" list", t->name);
    cJSON_ArrayForEach(e, single) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq ? seq : sp, "id");
        if (!cJSON_IsString(id))
            return g4_errf(err, "%s: post_processor single: each item needs Sequence or SpecialToken with an id", t->name);
        if (seq) {
            if (strcmp(id->valuestring, "A") != 0 || seen_a)
                return g4_errf(err, "%s: post_processor single: only one Sequence A is supported", t->name);
            seen_a = true;
            continue;
        }
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(tok, "ids"), *x;
        if (!cJSON_IsArray(ids))
            return g4_errf(err, "%s: post_processor: special token \"%s\" has no \"ids\" in special_tokens", t->name,
                           id->valuestring);
        cJSON_ArrayForEach(x, ids) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= t->n_ids)
                return g4_errf(err, "%s: post_processor: special token \"%s\" has an id outside the vocabulary",
                               t->name, id->valuestring);
            tok_ids_push(seen_a ? &t->post_post : &t->post_pre, (int32_t)x->valuedouble);
        }
    }
    if (!seen_a) return g4_errf(err, "%s: post_processor single: no Sequence A", t->name);
    return 0;
}

int tok_read_steps(struct tok *t, const struct cJSON *norm, const struct cJSON *pre, const struct cJSON *dec,
                   const struct cJSON *post, char *err)
{
    if (read_normalizer(t, norm, err) || read_pre_tokenizer(t, pre, err) || read_decoder(t, dec, err) ||
        read_post_processor(t, post, err))
        return -1;
    return 0;
}

int tok_read_config(struct tok *t, const char *json, size_t len, char *err)
{
    cJSON *root = cJSON_ParseWithLength(json, len), *e;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return g4_errf(err, "%s: tokenizer_config.json is not a JSON object", t->name);
    }
    cJSON_ArrayForEach(e, root) {
        const cJSON *v = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "content") : e;
        size_t fl = e->string ? strlen(e->string) : 0;
        if (!cJSON_IsString(v) || fl < 6 || strcmp(e->string + fl - 6, "_token") != 0) continue;
        t->cfg = g4_realloc(t->cfg, (size_t)(t->n_cfg + 1) * sizeof *t->cfg);
        t->cfg[t->n_cfg].field = g4_strdup(e->string);
        t->cfg[t->n_cfg].value = g4_strdup(v->valuestring);
        t->n_cfg++;
    }
    cJSON_Delete(root);
    return 0;
}

/* ========================================================================================================
 * lookups
 * ====================================================================================================== */

void tok_ids_free(struct tok_ids *v)
{
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

void tok_ids_push(struct tok_ids *v, int32_t id)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->ids = g4_realloc(v->ids, v->cap * sizeof *v->ids);
    }
    v->ids[v->n++] = id;
}

int32_t tok_vocab_size(const struct tok *t)
{
    return t->n_ids;
}

int32_t tok_id(const struct tok *t, const char *piece)
{
    size_t n = strlen(piece), len = 0;
    int32_t a = n ? tok_added_match(t, (const unsigned char *)piece, n, &len) : -1;
    if (a >= 0 && len == n) return t->added[a].id;
    return tok_vocab_get(t, piece, n);
}

const char *tok_piece(const struct tok *t, int32_t id)
{
    size_t len;
    return tok_piece_len(t, id, &len);
}

bool tok_is_added(const struct tok *t, int32_t id)
{
    return id >= 0 && id < t->n_ids && t->added_of[id] >= 0;
}

bool tok_is_special(const struct tok *t, int32_t id)
{
    return tok_is_added(t, id) && t->added[t->added_of[id]].special;
}

int32_t tok_config_id(const struct tok *t, const char *field)
{
    for (int i = 0; i < t->n_cfg; i++)
        if (strcmp(t->cfg[i].field, field) == 0) return tok_id(t, t->cfg[i].value);
    return -1;
}
