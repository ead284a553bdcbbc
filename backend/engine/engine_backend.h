/* engine_backend — what a device backend (cpu/, cuda/) provides to engine.c. Private to the engine room.
 *
 * engine.c owns the stream table and validates every item before a backend sees it; a backend only
 * computes: it keeps per-stream KV state, appends the rows of each item and writes the logits asked for.
 * A backend that draws tokens itself (draws = 1) also fills `sampled` for items with `sample`; for the others
 * engine.c gives such items host logits to fill and draws with samp_sample. */
#ifndef G4_ENGINE_BACKEND_H
#define G4_ENGINE_BACKEND_H

#include "engine/engine.h"

struct engine_backend {
    const char *name;
    int draws;   /* 1: step() handles items' sample/sampled itself */
    /* Loads weights, allocates KV for opts->max_streams × opts->max_context. NULL with err. */
    void *(*create)(const struct g4_model *m, const struct engine_opts *opts, char *err);
    void (*destroy)(void *impl);
    /* Runs validated items; lengths[] holds each stream's length before the step. Bugs abort. */
    void (*step)(void *impl, const struct engine_item *items, int n_items, const int *lengths);
    int (*embed_image)(void *impl, const uint8_t *patches, const int32_t *positions, int n, float *out, char *err);
    void (*memory)(void *impl, struct engine_memory *out);
    double (*copy_rate)(void *impl);
};

extern const struct engine_backend engine_cpu_backend;
#ifdef G4_HAVE_CUDA
extern const struct engine_backend engine_cuda_backend;
#endif

#endif
