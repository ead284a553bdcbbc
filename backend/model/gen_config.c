/* gen_config — generation_config.json to struct cfg_gen (see config.h): stop ids, suppressed ids and the
 * sampling defaults a request falls back to.
 *
 * Defaults are transformers' GenerationConfig defaults (greedy, temperature 1.0, top_k 50, top_p 1.0, no
 * min_p); with no file, eos / pad / bos come from config.json as GenerationConfig.from_model_config takes
 * them (top-level eos_token_id, else text_config's). The sampler applies these; this file only reads. */
#include "model/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cfg_gen_defaults(const struct cfg_model *m, struct cfg_gen *g)
{
    memset(g, 0, sizeof *g);
    memcpy(g->stop_ids, m->eos_ids, sizeof g->stop_ids);
    g->n_stop = m->n_eos;
    g->temperature = 1.0;
    g->top_k = 50;
    g->top_p = 1.0;
    g->min_p = 0.0;
    g->repetition_penalty = 1.0;
    g->pad_id = m->text.pad_id;
    g->bos_id = m->text.bos_id;
}

/* A list of token ids (or one id) in [0, vocab); null -> empty; absent -> untouched. 0 or -1. */
static int read_ids(const char *src, const cJSON *root, const char *key, int vocab, int *ids, int *n, char *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 0;
    *n = 0;
    if (cJSON_IsNull(v)) return 0;
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > CFG_MAX_IDS)
        return g4_errf(err, "%s: %s has %d ids, over the limit of %d", src, key, cJSON_GetArraySize(v), CFG_MAX_IDS);
    const cJSON *e = cJSON_IsArray(v) ? v->child : v;
    for (; e; e = cJSON_IsArray(v) ? e->next : NULL) {
        double d = -1;
        if (!cfg_json_number(e, &d) || d != floor(d) || d < 0 || d >= vocab)
            return g4_errf(err, "%s: %s must be a token id or a list of token ids in [0, %d)", src, key, vocab);
        ids[(*n)++] = (int)d;
    }
    return 0;
}

/* A number in [lo, hi]; absent or null -> untouched. 0 or -1. */
static int read_num(const char *src, const cJSON *root, const char *key, double lo, double hi, double *out, char *err)
{
    double d = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cfg_json_number(v, &d) || !(d >= lo && d <= hi))
        return g4_errf(err, "%s: %s must be a number in [%g, %g]", src, key, lo, hi);
    *out = d;
    return 0;
}

/* An integer in [lo, hi]; absent or null -> untouched. 0 or -1. */
static int read_int(const char *src, const cJSON *root, const char *key, long lo, long hi, int *out, char *err)
{
    double d = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cfg_json_number(v, &d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return g4_errf(err, "%s: %s must be an integer in [%ld, %ld]", src, key, lo, hi);
    *out = (int)d;
    return 0;
}

int cfg_gen_parse_json(const cJSON *root, const char *src, const struct cfg_model *m, struct cfg_gen *g,
                       char *err)
{
    int V = m->text.vocab;
    cfg_gen_defaults(m, g);
    g->has_file = 1;
    if (!cJSON_IsObject(root)) return g4_errf(err, "%s: not a JSON object", src);
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(root, "do_sample");
    if (ds && !cJSON_IsNull(ds)) {
        if (!cJSON_IsBool(ds)) return g4_errf(err, "%s: do_sample must be true or false", src);
        g->do_sample = cJSON_IsTrue(ds);
    }
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    const cJSON *bos = cJSON_GetObjectItemCaseSensitive(root, "bos_token_id");
    if (read_ids(src, root, "eos_token_id", V, g->stop_ids, &g->n_stop, err) ||
        read_ids(src, root, "suppress_tokens", V, g->suppress_ids, &g->n_suppress, err) ||
        read_ids(src, root, "begin_suppress_tokens", V, g->begin_suppress_ids, &g->n_begin_suppress, err) ||
        read_num(src, root, "temperature", 0.0, 1e6, &g->temperature, err) ||
        read_int(src, root, "top_k", 0, V, &g->top_k, err) ||
        read_num(src, root, "top_p", 1e-9, 1.0, &g->top_p, err) ||
        read_num(src, root, "min_p", 0.0, 1.0, &g->min_p, err) ||
        read_num(src, root, "repetition_penalty", 1e-9, 1e6, &g->repetition_penalty, err) ||
        read_int(src, root, "max_new_tokens", 0, 1 << 30, &g->max_new_tokens, err) ||
        read_int(src, root, "pad_token_id", -1, V - 1, &g->pad_id, err) ||
        read_int(src, root, "bos_token_id", 0, V - 1, &g->bos_id, err))
        return -1;
    if (cJSON_IsNull(pad)) g->pad_id = -1;
    if (cJSON_IsNull(bos)) g->bos_id = -1;
    return 0;
}

int cfg_gen_load(const char *dir, const struct cfg_model *m, struct cfg_gen *g, char *err)
{
    char p[4096];
    struct stat sb;
    size_t len;
    if (util_path_join(p, sizeof p, dir, "generation_config.json")) return g4_errf(err, "%s: path too long", dir);
    if (stat(p, &sb) != 0 && errno == ENOENT) {
        cfg_gen_defaults(m, g);
        return 0;
    }
    char *text = util_read_file(p, CFG_MAX_JSON_BYTES, &len, err);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    int rc = root ? cfg_gen_parse_json(root, p, m, g, err) : g4_errf(err, "%s: not valid JSON", p);
    cJSON_Delete(root);
    free(text);
    return rc;
}
