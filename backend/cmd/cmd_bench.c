/* cmd_bench — `g4 bench`: the engine's speed on a checkpoint (real, or random weights of a real shape made
 * with --shape), printed as a markdown table for docs/perf.md. Decode tokens/s at several stream counts and
 * contexts with the fraction of the bandwidth floor, decode windows against one row, prefill tokens/s (prompts
 * longer than the main engine's context in an engine of their own), time to first token with and without an
 * image, memory. Timing: CUDA events are not used here; every step ends in a device sync inside the
 * engine, and the host clock brackets whole steps (medians of repeated steps, after warm-up). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"
#include "model/tiny_model.h"
#include "util/util.h"


#define BENCH_STEPS 16

/* Bytes of bf16 keys and values one stream's decode row reads at context C. */
static double kv_bytes_at(const struct cfg_model *c, int C)
{
    double b = 0;
    for (int i = 0; i < c->text.n_layers; i++) {
        const struct cfg_layer *l = &c->text.layer[i];
        int rows = l->is_full || C < l->window ? C : l->window;
        b += 2.0 * rows * l->kv_dim * 2;
    }
    return b;
}

/* Median seconds of one decode step with `streams` streams at context `ctx`, each giving `window` rows, every
 * row's next token drawn by the engine with Gemma 4's default sampling (as the server asks). */
static double time_decode(struct engine *e, int streams, int ctx, int window, int V)
{
    struct engine_item *it = g4_calloc((size_t)streams, sizeof *it);
    int32_t toks[ENGINE_MAX_WINDOW];
    int32_t *drawn = g4_malloc((size_t)streams * window * sizeof *drawn);
    struct samp_params p;
    double t[BENCH_STEPS];
    char err[G4_ERR_MAX];
    samp_params_gemma4(&p);
    for (int k = 0; k < p.n_suppress_ids; k++)
        if (p.suppress_ids[k] >= V) p.n_suppress_ids = 0; /* a small test vocabulary */
    for (int k = 0; k < window; k++) toks[k] = (1000 + 17 * k) % V;
    for (int s = 0; s < streams; s++) {
        it[s].stream = engine_stream_open(e);
        G4_CHECK(it[s].stream >= 0, "stream %d", s);
        engine_stream_skip(e, it[s].stream, ctx);
        it[s].n = window;
        it[s].tokens = toks;
        it[s].sample = &p;
        it[s].sampled = drawn + (size_t)s * window;
    }
    for (int r = 0; r < BENCH_STEPS + 2; r++) {
        double t0 = util_now();
        G4_CHECK(engine_step(e, it, streams, err) == 0, "%s", err);
        if (r >= 2) t[r - 2] = util_now() - t0;
        for (int s = 0; s < streams; s++) engine_stream_truncate(e, it[s].stream, ctx);
    }
    for (int s = 0; s < streams; s++) engine_stream_close(e, it[s].stream);
    free(it);
    free(drawn);
    return util_median(t, BENCH_STEPS);
}

/* The decode table (one row a stream, at each stream count and context the engine holds, with the bandwidth
 * floor: every matrix once plus each stream's keys and values at the context, over the copy rate), then, unless
 * decode_only, the window table (one stream giving 2 to 16 rows a step against one). */
static void decode_tables(struct engine *e, const struct cfg_model *c, const struct engine_opts *o, double rate,
                          double matrix_bytes, int decode_only)
{
    static const int streams[] = {1, 4, 16, 64}, contexts[] = {1024, 8192}, windows[] = {2, 4, 8, 16};
    int V = c->text.vocab;
    double one;
    printf("decode steps draw every row's next token in the engine (Gemma 4 defaults: T 1, top_k 64, top_p 0.95)\n\n");
    printf("| decode | streams | context | step ms | tokens/s | floor ms | %% of floor |\n|---|---|---|---|---|---|---|\n");
    for (size_t ci = 0; ci < sizeof contexts / sizeof *contexts; ci++)
        for (size_t si = 0; si < sizeof streams / sizeof *streams; si++) {
            int S = streams[si], C = contexts[ci];
            double step, floor_s;
            if (S > o->max_streams || C + ENGINE_MAX_WINDOW > o->max_context) continue;
            step = time_decode(e, S, C, 1, V);
            floor_s = rate > 0 ? (matrix_bytes + (double)S * kv_bytes_at(c, C)) / rate : 0;
            printf("| 1 row | %d | %d | %.2f | %.1f | %.2f | %.0f |\n", S, C, step * 1e3, S / step, floor_s * 1e3,
                   floor_s > 0 ? 100 * floor_s / step : 0);
            fflush(stdout);
        }
    if (decode_only) return;
    one = time_decode(e, 1, 1024, 1, V);
    printf("\n| decode window | rows | step ms | vs one row |\n|---|---|---|---|\n| 1 stream, context 1024 | 1 | %.2f | 1.00 |\n",
           one * 1e3);
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        double t = time_decode(e, 1, 1024, windows[w], V);
        printf("| 1 stream, context 1024 | %d | %.2f | %.2f |\n", windows[w], t * 1e3, t / one);
        fflush(stdout);
    }
}

/* Rows per prompt chunk in the prefill figures: 0 for the chunks a stream alone on the server gets
 * (prefill_next_end), or --chunk. */
static long bench_chunk = 0;

/* Seconds to prefill T tokens in one stream (chunks of bench_chunk), logits of the last row only. */
static double time_prefill(struct engine *e, int T, int V)
{
    int32_t *ids = g4_malloc((size_t)T * sizeof *ids);
    float *logits = g4_malloc((size_t)V * sizeof *logits);
    char err[G4_ERR_MAX];
    int s = engine_stream_open(e);
    double t0;
    for (int i = 0; i < T; i++) ids[i] = i ? 1000 + (i * 7919) % 200000 : 2;
    t0 = util_now();
    G4_CHECK(prefill_run(e, s, ids, T, NULL, 0, (int)bench_chunk, logits, 0, err) == 0, "%s", err);
    t0 = util_now() - t0;
    engine_stream_close(e, s);
    free(ids);
    free(logits);
    return t0;
}

/* Seconds to first token for a prompt of T rows holding one image of n_patches soft tokens (random patches on
 * a 14-column grid) after a few text rows: the image's embedding plus the prefill, logits of the last row. */
static double time_prefill_image(struct engine *e, const struct cfg_model *c, int T, int n_patches)
{
    int32_t *ids = g4_malloc((size_t)T * sizeof *ids), *pos = g4_malloc((size_t)n_patches * 2 * sizeof *pos);
    uint8_t *px = g4_malloc((size_t)n_patches * 6912);
    float *logits = g4_malloc((size_t)c->text.vocab * sizeof *logits);
    char err[G4_ERR_MAX];
    int s = engine_stream_open(e), first = 8;
    struct prefill_image img = {px, pos, n_patches};
    double t0;
    for (int i = 0; i < T; i++) ids[i] = i ? 1000 + (i * 7919) % 200000 : 2;
    ids[first - 1] = c->boi_token_id;
    for (int i = 0; i < n_patches; i++) ids[first + i] = c->image_token_id;
    ids[first + n_patches] = c->eoi_token_id;
    for (int i = 0; i < n_patches; i++) pos[2 * i] = i % 14, pos[2 * i + 1] = i / 14;
    for (size_t i = 0; i < (size_t)n_patches * 6912; i++) px[i] = (uint8_t)(i * 2654435761u >> 24);
    t0 = util_now();
    G4_CHECK(prefill_run(e, s, ids, T, &img, 1, (int)bench_chunk, logits, 0, err) == 0, "%s", err);
    t0 = util_now() - t0;
    engine_stream_close(e, s);
    free(ids);
    free(pos);
    free(px);
    free(logits);
    return t0;
}

/* Prefills longer than the main engine's context, each in an engine of one stream made for it. */
static int long_prefills(struct g4_model *m, struct engine_opts o, const int *lens, int n, long max_prefill,
                         int done_below, char *err)
{
    for (int p = 0; p < n; p++) {
        struct engine *e;
        double t;
        if (lens[p] < done_below || lens[p] > max_prefill) continue;
        o.max_streams = 1;
        o.max_context = lens[p] + ENGINE_MAX_WINDOW;
        if (!(e = engine_create(m, &o, err))) return -1;
        t = time_prefill(e, lens[p], m->cfg.text.vocab);
        printf("| %d (own engine: 1 stream, context %d) | %.3f | %.0f |\n", lens[p], o.max_context, t, lens[p] / t);
        fflush(stdout);
        engine_destroy(e);
    }
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *dir = NULL, *shape = NULL;
    enum engine_device dev = ENGINE_CUDA;
    long max_prefill = 8192, layers = 0, max_streams = 64;
    int decode_only = 0, prefill_only = 0;
    char err[G4_ERR_MAX];
    struct g4_model *m;
    struct engine *e;
    struct engine_opts o = {ENGINE_CUDA, 64, 8192 + ENGINE_MAX_WINDOW, 0, ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_FP32};
    struct engine_memory mem;
    double rate, matrix_bytes = 0;
    static const int prefills[] = {512, 2048, 8192, 32768};
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) shape = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            i++;
            if (!strcmp(argv[i], "cpu")) dev = ENGINE_CPU;
            else if (strcmp(argv[i], "cuda")) return cmd_usage_error("bench", "--device must be cpu or cuda");
        } else if (!strcmp(argv[i], "--max-prefill") && i + 1 < argc) {
            if (cmd_parse_int("bench", "--max-prefill", argv[++i], 512, 32768, &max_prefill)) return 2;
        } else if (!strcmp(argv[i], "--max-streams") && i + 1 < argc) {
            if (cmd_parse_int("bench", "--max-streams", argv[++i], 1, 64, &max_streams)) return 2;
        } else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) {
            if (cmd_parse_int("bench", "--chunk", argv[++i], 64, ENGINE_MAX_CHUNK, &bench_chunk)) return 2;
        } else if (!strcmp(argv[i], "--decode-only")) {
            decode_only = 1;
        } else if (!strcmp(argv[i], "--prefill-only")) { /* one prompt pass after another: for ncu's launch counts */
            prefill_only = 1;
        } else if (!strcmp(argv[i], "--layers") && i + 1 < argc) {
            if (cmd_parse_int("bench", "--layers", argv[++i], 1, 1000, &layers)) return 2;
        } else return cmd_usage_error("bench", "unknown argument %s", argv[i]);
    }
    if (!dir) return cmd_usage_error("bench", "--model DIR is required (with --shape, where to write the weights)");
    if (decode_only && prefill_only)
        return cmd_usage_error("bench", "--decode-only and --prefill-only exclude each other");
    if (shape) {
        struct stat st;
        char cfgp[1100];
        snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
        if (stat(cfgp, &st) != 0) {
            double t0 = util_now();
            fprintf(stderr, "g4 bench: writing random %s-shaped weights to %s\n", shape, dir);
            if (tiny_model_write_shape(dir, shape, (int)layers, 1, NULL, err)) goto fail_msg;
            fprintf(stderr, "g4 bench: written in %.1f s\n", util_now() - t0);
        }
    }
    if (!(m = model_load(dir, MODEL_CHECK_TENSORS, err))) goto fail_msg;
    o.device = dev;
    o.max_streams = (int)max_streams;
    if (dev == ENGINE_CPU) o.max_streams = 4, o.max_context = 2048 + ENGINE_MAX_WINDOW;
    if (!(e = engine_create(m, &o, err))) {
        model_free(m);
        goto fail_msg;
    }
    engine_memory(e, &mem);
    for (int i = 0; i < st_count(m->weights); i++)
        if (st_at(m->weights, i)->ndim == 2) matrix_bytes += (double)st_at(m->weights, i)->nbytes;
    rate = engine_copy_rate(e);
    printf("g4 bench: %s (%s, hidden %d, %d layers), device %s\n", dir, m->cfg.model_type, m->cfg.text.hidden,
           m->cfg.text.n_layers, dev == ENGINE_CUDA ? "cuda" : "cpu");
    printf("memory: weights %.2f GiB, KV per stream %.1f MiB (context %d), scratch %.2f GiB; copy rate %.2f TB/s\n\n",
           mem.weights / 1073741824.0, mem.kv_per_stream / 1048576.0, o.max_context, mem.scratch / 1073741824.0,
           rate / 1e12);
    if (!prefill_only) {
        decode_tables(e, &m->cfg, &o, rate, matrix_bytes, decode_only);
        if (decode_only) {
            engine_destroy(e);
            model_free(m);
            return 0;
        }
    }
    if (bench_chunk) printf("\nprefill in chunks of %ld rows\n", bench_chunk);
    else printf("\nprefill in the chunks of a stream alone: %d rows of text, %d with an image\n", ENGINE_SOLO_CHUNK_ROWS,
                ENGINE_CHUNK_ROWS);
    printf("\n| prefill tokens | seconds | tokens/s |\n|---|---|---|\n");
    for (size_t p = 0; p < sizeof prefills / sizeof *prefills; p++) {
        double t;
        if (prefills[p] > max_prefill || prefills[p] + 1 > o.max_context) continue;
        t = time_prefill(e, prefills[p], m->cfg.text.vocab);
        printf("| %d | %.3f | %.0f |\n", prefills[p], t, prefills[p] / t);
        fflush(stdout);
    }
    engine_destroy(e);
    e = NULL;
    if (long_prefills(m, o, prefills, (int)(sizeof prefills / sizeof *prefills), max_prefill, o.max_context, err)) {
        model_free(m);
        goto fail_msg;
    }
    o.max_streams = 1;
    o.max_context = 1024 + ENGINE_MAX_WINDOW;
    if (!(e = engine_create(m, &o, err))) {
        model_free(m);
        goto fail_msg;
    }
    {
        double ttft = time_prefill(e, 1000, m->cfg.text.vocab);
        ttft = time_prefill(e, 1000, m->cfg.text.vocab);
        printf("\ntime to first token, 1000-token prompt: %.1f ms\n", ttft * 1e3);
        if (m->cfg.vision.kind != CFG_VISION_NONE) {
            double ti = time_prefill_image(e, &m->cfg, 1000, 280);
            ti = time_prefill_image(e, &m->cfg, 1000, 280);
            printf("time to first token, 1000-token prompt holding one 280-patch image: %.1f ms (%.1f ms more)\n",
                   ti * 1e3, (ti - ttft) * 1e3);
        }
    }
    engine_destroy(e);
    model_free(m);
    return 0;
fail_msg:
    fprintf(stderr, "g4 bench: %s\n", err);
    return 1;
}
