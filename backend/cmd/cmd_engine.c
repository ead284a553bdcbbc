/* cmd_engine — the commands that run the engine: `g4 logits` (float32 logits of every prompt position, for
 * checking against other implementations) and `g4 generate` (a streamed reply). They build prompts (ids,
 * chat messages, images), drive one engine stream, sample, and print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cmd/cmd.h"
#include "cmd/cmd_prompt.h"
#include "engine/engine.h"
#include "engine/gen_defaults.h"
#include "engine/prefill.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/util.h"

/* ---- logits -------------------------------------------------------------------------------------------- */

int cmd_logits(int argc, char **argv)
{
    struct prompt_args pa;
    const char *out = NULL;
    long chunk = ENGINE_CHUNK_ROWS;
    char err[G4_ERR_MAX];
    struct g4_model *m = NULL;
    struct prompt pr = {0};
    struct engine *e = NULL;
    float *logits = NULL;
    int rc = 1;
    prompt_args_init(&pa);
    for (int i = 0; i < argc; i++) {
        int used = prompt_args_parse(&pa, "logits", argc, argv, i);
        if (used < 0) return 2;
        if (used > 0) {
            i += used - 1;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) {
            if (cmd_parse_int("logits", "--chunk", argv[++i], 1, ENGINE_CHUNK_ROWS, &chunk)) return 2;
        } else {
            return cmd_usage_error("logits", "unknown argument %s", argv[i]);
        }
    }
    if (!pa.model || !out) return cmd_usage_error("logits", "--model DIR and --out FILE are required");
    if (!pa.ids) return cmd_usage_error("logits", "--ids is required (logits works on token ids)");
    if (!(m = model_load(pa.model, MODEL_CHECK_TENSORS, err))) goto fail;
    if (prompt_build(&pa, m, &pr, err)) goto fail;
    {
        struct engine_opts o = {pa.device, 1, pr.n, 0, pa.image_mask, ENGINE_FP32};
        size_t bytes = (size_t)pr.n * m->cfg.text.vocab * sizeof *logits;
        if (!(e = engine_create(m, &o, err))) goto fail;
        logits = g4_malloc(bytes);
        if (prefill_run(e, engine_stream_open(e), pr.ids, pr.n, pr.images, pr.n_images, (int)chunk, logits, 1, err))
            goto fail;
        if (util_write_file(out, logits, bytes, err)) goto fail;
        printf("{\"T\":%d,\"V\":%d,\"out\":\"%s\"}\n", pr.n, m->cfg.text.vocab, out);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "g4 logits: %s\n", err);
done:
    free(logits);
    engine_destroy(e);
    prompt_free(&pr);
    model_free(m);
    return rc;
}

/* ---- generate ------------------------------------------------------------------------------------------ */

struct gen_flags {
    int json;
    int have_temp, have_top_k, have_top_p, have_min_p, have_max;
    double temp, top_p, min_p;
    long top_k, max_tokens, seed;
};

static int parse_gen_flag(struct gen_flags *f, struct samp_params *p, int argc, char **argv, int i)
{
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--json")) return f->json = 1;
    if (!strcmp(argv[i], "--temperature"))
        return cmd_parse_float("generate", "--temperature", v, 0, SAMP_MAX_TEMPERATURE, &f->temp) ? -1 : (f->have_temp = 2);
    if (!strcmp(argv[i], "--top-k"))
        return cmd_parse_int("generate", "--top-k", v, 0, 1 << 24, &f->top_k) ? -1 : (f->have_top_k = 2);
    /* the sampler's own ranges (samp_params_validate): top_p in (0, 1] with 1 = off, min_p in [0, 1) with 0 = off */
    if (!strcmp(argv[i], "--top-p"))
        return cmd_parse_float_in("generate", "--top-p", v, 0, 1, 1, 0, &f->top_p) ? -1 : (f->have_top_p = 2);
    if (!strcmp(argv[i], "--min-p"))
        return cmd_parse_float_in("generate", "--min-p", v, 0, 0, 1, 1, &f->min_p) ? -1 : (f->have_min_p = 2);
    if (!strcmp(argv[i], "--max-tokens"))
        return cmd_parse_int("generate", "--max-tokens", v, 1, SAMP_MAX_TOKENS_LIMIT, &f->max_tokens) ? -1
                                                                                                     : (f->have_max = 2);
    if (!strcmp(argv[i], "--seed")) return cmd_parse_int("generate", "--seed", v, 0, 0x7fffffffL, &f->seed) ? -1 : 2;
    if (!strcmp(argv[i], "--stop") && v) {
        if (p->n_stop_strings >= SAMP_MAX_STOP_STRINGS) {
            cmd_usage_error("generate", "at most %d --stop strings", SAMP_MAX_STOP_STRINGS);
            return -1;
        }
        snprintf(p->stop_strings[p->n_stop_strings++], sizeof p->stop_strings[0], "%s", v);
        return 2;
    }
    (void)p;
    return 0;
}

/* Writes text to stdout as it comes (the stream is the product: flush each piece). */
static void emit(const char *s, size_t n)
{
    if (n) {
        fwrite(s, 1, n, stdout);
        fflush(stdout);
    }
}

int cmd_generate(int argc, char **argv)
{
    struct prompt_args pa;
    struct gen_flags f = {0};
    struct samp_params p;
    char err[G4_ERR_MAX];
    struct g4_model *m = NULL;
    struct prompt pr = {0};
    struct engine *e = NULL;
    samp_ws *ws = NULL;
    struct tok_stream *ts = NULL;
    struct samp_stop stop = {0};
    float *logits = NULL;
    int32_t *out_ids = NULL;
    int rc = 1, n_out = 0, s, stop_inited = 0;
    enum samp_finish fin = SAMP_FINISH_NONE;
    double t0, t_first = 0, t_end;
    samp_params_init(&p);
    prompt_args_init(&pa);
    for (int i = 0; i < argc; i++) {
        int used = prompt_args_parse(&pa, "generate", argc, argv, i);
        if (used < 0) return 2;
        if (used == 0 && (used = parse_gen_flag(&f, &p, argc, argv, i)) < 0) return 2;
        if (used == 0) return cmd_usage_error("generate", "unknown argument %s", argv[i]);
        i += used - 1;
    }
    if (!pa.model) return cmd_usage_error("generate", "--model DIR is required");
    if (!pa.ids && !pa.prompt && !pa.messages)
        return cmd_usage_error("generate", "one of --prompt, --ids or --messages is required");
    if (!(m = model_load(pa.model, MODEL_CHECK_TENSORS | MODEL_LOAD_TOKENIZER, err))) goto fail;
    if (f.have_top_k && f.top_k > m->cfg.text.vocab) {
        rc = cmd_usage_error("generate", "--top-k must be at most the vocabulary size %d, got %ld", m->cfg.text.vocab,
                             f.top_k);
        goto done;
    }
    {
        int n_stop_strings = p.n_stop_strings;
        char saved[SAMP_MAX_STOP_STRINGS][SAMP_MAX_STOP_STRING_LEN + 1];
        memcpy(saved, p.stop_strings, sizeof saved);
        gen_defaults_params(&m->gen, &p);
        memcpy(p.stop_strings, saved, sizeof saved);
        p.n_stop_strings = n_stop_strings;
    }
    if (f.have_temp) p.temperature = (float)f.temp;
    if (f.have_top_k) p.top_k = (int32_t)f.top_k;
    if (f.have_top_p) p.top_p = (float)f.top_p;
    if (f.have_min_p) p.min_p = (float)f.min_p;
    if (f.have_max) p.max_tokens = (int32_t)f.max_tokens;
    p.seed = (uint64_t)f.seed;
    if (samp_params_validate(&p, m->cfg.text.vocab, err)) goto fail;
    if (prompt_build(&pa, m, &pr, err)) goto fail;
    {
        struct engine_opts o = {pa.device, 1, pr.n + p.max_tokens, 0, pa.image_mask, ENGINE_FP32};
        if (!(e = engine_create(m, &o, err))) goto fail;
    }
    ws = samp_ws_create(m->cfg.text.vocab);
    ts = tok_stream_create(m->tok, TOK_DEC_SKIP_SPECIAL);
    samp_stop_init(&stop, &p);
    stop_inited = 1;
    logits = g4_malloc((size_t)m->cfg.text.vocab * sizeof *logits);
    out_ids = g4_malloc((size_t)p.max_tokens * sizeof *out_ids);
    s = engine_stream_open(e);
    t0 = util_now();
    if (prefill_run(e, s, pr.ids, pr.n, pr.images, pr.n_images, 0, logits, 0, err)) goto fail; /* as served alone */
    /* the first token from the prompt's logits on the host; the rest drawn by the engine (on the device for
     * CUDA): the same algorithm, so the same tokens */
    int32_t next = samp_sample(&p, logits, (uint64_t)pr.n, ws);
    while (fin == SAMP_FINISH_NONE) {
        int32_t tok = next;
        const char *piece, *text;
        size_t plen, tlen;
        int matched = 0;
        if (tok < 0) {
            g4_errf(err, "no token can be sampled (every candidate suppressed or not finite)");
            goto fail;
        }
        if (n_out == 0) t_first = util_now();
        out_ids[n_out++] = tok;
        fin = samp_finish_after_token(&p, tok, n_out);
        if (fin != SAMP_FINISH_STOP_ID) {
            if (tok_stream_push(ts, tok, &piece, &plen, err)) goto fail;
            tlen = samp_stop_feed(&stop, piece, plen, &text, &matched);
            if (!f.json) emit(text, tlen);
            if (matched) fin = SAMP_FINISH_STOP_STRING;
        }
        if (fin == SAMP_FINISH_NONE) {
            struct engine_item it = {.stream = s, .n = 1, .tokens = &tok, .sample = &p, .sampled = &next};
            if (engine_step(e, &it, 1, err)) goto fail;
        }
    }
    if (fin != SAMP_FINISH_STOP_STRING) {
        const char *text;
        size_t tlen;
        tok_stream_flush(ts, &text, &tlen);
        if (tlen && !f.json) {
            int matched;
            tlen = samp_stop_feed(&stop, text, tlen, &text, &matched);
            emit(text, tlen);
        }
        tlen = samp_stop_flush(&stop, &text);
        if (!f.json) emit(text, tlen);
    }
    t_end = util_now();
    if (f.json) {
        cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "ids");
        char *str;
        for (int i = 0; i < n_out; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(out_ids[i]));
        cJSON_AddStringToObject(o, "finish_reason", samp_finish_name(fin));
        cJSON_AddNumberToObject(o, "prompt_tokens", pr.n);
        cJSON_AddNumberToObject(o, "completion_tokens", n_out);
        str = cJSON_PrintUnformatted(o);
        puts(str);
        free(str);
        cJSON_Delete(o);
    } else {
        putchar('\n');
    }
    fprintf(stderr, "g4 generate: %d prompt tokens, %d generated (%s); first token %.1f ms, %.1f tokens/s after\n",
            pr.n, n_out, samp_finish_name(fin), (t_first - t0) * 1e3,
            n_out > 1 ? (n_out - 1) / (t_end - t_first) : 0.0);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "g4 generate: %s\n", err);
done:
    if (stop_inited) samp_stop_free(&stop);
    tok_stream_destroy(ts);
    samp_ws_destroy(ws);
    free(logits);
    free(out_ids);
    engine_destroy(e);
    prompt_free(&pr);
    model_free(m);
    return rc;
}
