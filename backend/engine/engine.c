/* engine — the device-independent half of the engine API (engine.h): the stream table, item validation,
 * dispatch to the CPU or CUDA backend, and the host draw for backends that do not draw tokens themselves
 * (logits into a scratch buffer, then samp_sample). Runs on the one thread that drives the engine. */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine_backend.h"
#include "util/util.h"

struct engine {
    const struct engine_backend *be;
    void *impl;
    const struct g4_model *model;
    struct engine_opts opts;
    int *used;    /* (max_streams) 1 when open */
    int *length;  /* (max_streams) positions held */
    /* host draw (backends with draws == 0): the items as the backend sees them, and logits to draw from */
    struct engine_item *host_items;
    int host_items_cap;
    float *draw_logits;
    size_t draw_logits_cap;  /* floats */
    samp_ws *ws;             /* made at the first host draw */
};

struct engine *engine_create(const struct g4_model *model, const struct engine_opts *opts, char *err)
{
    const struct engine_backend *be = NULL;
    struct engine *e;
    if (opts->max_streams < 1 || opts->max_context < 1) {
        g4_errf(err, "engine: max_streams and max_context must be at least 1");
        return NULL;
    }
    if (opts->device == ENGINE_CPU) {
        be = &engine_cpu_backend;
    } else {
#ifdef G4_HAVE_CUDA
        be = &engine_cuda_backend;
#else
        g4_errf(err, "engine: this g4 has no CUDA engine (built without nvcc, or before the CUDA path landed); use --device cpu");
        return NULL;
#endif
    }
    e = g4_calloc(1, sizeof *e);
    e->be = be;
    e->model = model;
    e->opts = *opts;
    e->impl = be->create(model, opts, err);
    if (!e->impl) {
        free(e);
        return NULL;
    }
    e->used = g4_calloc((size_t)opts->max_streams, sizeof *e->used);
    e->length = g4_calloc((size_t)opts->max_streams, sizeof *e->length);
    return e;
}

void engine_destroy(struct engine *e)
{
    if (!e) return;
    e->be->destroy(e->impl);
    free(e->host_items);
    free(e->draw_logits);
    samp_ws_destroy(e->ws);
    free(e->used);
    free(e->length);
    free(e);
}

int engine_stream_open(struct engine *e)
{
    for (int s = 0; s < e->opts.max_streams; s++) {
        if (e->used[s]) continue;
        e->used[s] = 1;
        e->length[s] = 0; /* backends never read cache rows at or past a stream's length */
        return s;
    }
    return -1;
}

void engine_stream_close(struct engine *e, int stream)
{
    G4_CHECK(stream >= 0 && stream < e->opts.max_streams && e->used[stream], "closing stream %d not open", stream);
    e->used[stream] = 0;
    e->length[stream] = 0;
}

int engine_stream_length(const struct engine *e, int stream)
{
    G4_CHECK(stream >= 0 && stream < e->opts.max_streams && e->used[stream], "stream %d not open", stream);
    return e->length[stream];
}

void engine_stream_truncate(struct engine *e, int stream, int n)
{
    int len = engine_stream_length(e, stream);
    int window = e->model->cfg.text.sliding_window;
    G4_CHECK(n >= 0 && n <= len, "truncate stream %d to %d of %d", stream, n, len);
    G4_CHECK(len - n <= ENGINE_MAX_WINDOW || len <= window || n == 0,
             "truncate stream %d by %d rows past its window", stream, len - n);
    e->length[stream] = n;
}

void engine_stream_skip(struct engine *e, int stream, int n)
{
    int len = engine_stream_length(e, stream);
    G4_CHECK(n >= 0 && len + n <= e->opts.max_context, "skip %d past the context of %d", n, e->opts.max_context);
    e->length[stream] = len + n;
}

void engine_memory(const struct engine *e, struct engine_memory *out)
{
    memset(out, 0, sizeof *out);
    e->be->memory(e->impl, out);
}

double engine_copy_rate(struct engine *e)
{
    return e->be->copy_rate(e->impl);
}

/* Checks one item against the stream table and the model; -1 with err naming the item and the limit. */
static int check_item(const struct engine *e, const struct engine_item *it, int index, const int *seen, char *err)
{
    const struct cfg_model *c = &e->model->cfg;
    int images = 0;
    if (it->stream < 0 || it->stream >= e->opts.max_streams || !e->used[it->stream])
        return g4_errf(err, "item %d: stream %d is not open", index, it->stream);
    if (seen[it->stream]) return g4_errf(err, "item %d: stream %d appears twice in one step", index, it->stream);
    if (it->n < 1 || it->n > ENGINE_MAX_CHUNK)
        return g4_errf(err, "item %d: %d rows, allowed 1 to %d", index, it->n, ENGINE_MAX_CHUNK);
    if (e->length[it->stream] + it->n > e->opts.max_context)
        return g4_errf(err, "item %d: stream %d would hold %d positions, over the context limit of %d", index,
                       it->stream, e->length[it->stream] + it->n, e->opts.max_context);
    if ((it->logits || it->sample) && (it->logits_from < 0 || it->logits_from >= it->n))
        return g4_errf(err, "item %d: logits_from %d outside 0..%d", index, it->logits_from, it->n - 1);
    if (it->sample) {
        char why[G4_ERR_MAX];
        if (!it->sampled) return g4_errf(err, "item %d: sample set without a sampled array", index);
        if (samp_params_validate(it->sample, c->text.vocab, why)) return g4_errf(err, "item %d: %s", index, why);
    }
    for (int i = 0; i < it->n; i++) {
        int32_t t = it->tokens[i];
        if (t < 0 || t >= c->text.vocab)
            return g4_errf(err, "item %d row %d: token id %d outside the vocabulary of %d", index, i, t, c->text.vocab);
        if (it->image_block && it->image_block[i] >= 0) {
            images++;
            if (t != c->image_token_id)
                return g4_errf(err, "item %d row %d: an image row must carry the image token id %d", index, i,
                               c->image_token_id);
        }
    }
    if (images != it->n_image_rows || (images && !it->image_rows))
        return g4_errf(err, "item %d: %d image rows marked, %d embedding rows given", index, images, it->n_image_rows);
    return 0;
}

/* For a backend that does not draw: the items with every drawing item given host logits to fill (its own
 * array if it has one, else a slice of draw_logits). Returns the array the backend should run. */
static const struct engine_item *host_draw_items(struct engine *e, const struct engine_item *items, int n_items)
{
    const size_t V = (size_t)e->model->cfg.text.vocab;
    size_t need = 0, at = 0;
    for (int i = 0; i < n_items; i++)
        if (items[i].sample && !items[i].logits) need += (size_t)(items[i].n - items[i].logits_from) * V;
    if (!need) return items;
    if (need > e->draw_logits_cap) {
        free(e->draw_logits);
        e->draw_logits = g4_malloc(need * sizeof *e->draw_logits);
        e->draw_logits_cap = need;
    }
    if (n_items > e->host_items_cap) {
        free(e->host_items);
        e->host_items = g4_malloc((size_t)n_items * sizeof *e->host_items);
        e->host_items_cap = n_items;
    }
    memcpy(e->host_items, items, (size_t)n_items * sizeof *items);
    for (int i = 0; i < n_items; i++) {
        struct engine_item *it = &e->host_items[i];
        if (!it->sample || it->logits) continue;
        it->logits = e->draw_logits + at;
        at += (size_t)(it->n - it->logits_from) * V;
    }
    return e->host_items;
}

/* The host draw: each drawing item's rows through samp_sample, at the position after the row. */
static void host_draw(struct engine *e, const struct engine_item *run, int n_items, const int *lengths)
{
    const int32_t V = e->model->cfg.text.vocab;
    for (int i = 0; i < n_items; i++) {
        const struct engine_item *it = &run[i];
        if (!it->sample) continue;
        if (!e->ws) e->ws = samp_ws_create(V);
        for (int r = 0; r < it->n - it->logits_from; r++) {
            uint64_t position = (uint64_t)lengths[i] + (uint64_t)(it->logits_from + r) + 1;
            it->sampled[r] = samp_sample(it->sample, it->logits + (size_t)r * (size_t)V, position, e->ws);
        }
    }
}

int engine_step(struct engine *e, const struct engine_item *items, int n_items, char *err)
{
    int *seen = g4_calloc((size_t)e->opts.max_streams, sizeof *seen);
    int *lengths = g4_malloc((size_t)(n_items ? n_items : 1) * sizeof *lengths);
    int rc = 0;
    for (int i = 0; i < n_items && rc == 0; i++) {
        rc = check_item(e, &items[i], i, seen, err);
        if (rc == 0) {
            seen[items[i].stream] = 1;
            lengths[i] = e->length[items[i].stream];
        }
    }
    if (rc == 0) {
        const struct engine_item *run = e->be->draws ? items : host_draw_items(e, items, n_items);
        e->be->step(e->impl, run, n_items, lengths);
        if (!e->be->draws) host_draw(e, run, n_items, lengths);
        for (int i = 0; i < n_items; i++) e->length[items[i].stream] += items[i].n;
    }
    free(seen);
    free(lengths);
    return rc;
}

int engine_embed_image(struct engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                       char *err)
{
    if (e->model->cfg.vision.kind != CFG_VISION_EMBEDDER)
        return g4_errf(err, "this model (%s) has no image embedder g4 can run", e->model->cfg.model_type);
    if (n < 1) return g4_errf(err, "an image needs at least one patch");
    return e->be->embed_image(e->impl, patches, positions, n, out, err);
}

int32_t engine_embedding_id(const struct g4_model *m, int32_t tok)
{
    const struct cfg_model *c = &m->cfg;
    if (tok == c->image_token_id || tok == c->video_token_id || tok == c->audio_token_id)
        return c->text.pad_id >= 0 ? c->text.pad_id : 0;
    return tok;
}

int engine_cache_rows(const struct cfg_layer *l, int max_context)
{
    int rows = l->is_full ? max_context : l->window - 1 + ENGINE_MAX_WINDOW;
    return rows < max_context ? rows : max_context;
}

const struct g4_model *engine_model(const struct engine *e)
{
    return e->model;
}
