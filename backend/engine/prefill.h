/* prefill — running a whole prompt (ids plus images) through an engine stream in chunks: finds the image
 * placeholder runs, embeds each image, cuts chunks of about ENGINE_CHUNK_ROWS rows (ENGINE_SOLO_CHUNK_ROWS for
 * text alone on the engine) that never split an image, and collects logits. Used by `g4 logits` / `g4 generate`;
 * the scheduler uses prefill_next_end and prefill_image_blocks to interleave chunks with other streams' decode
 * rows. */
#ifndef G4_PREFILL_H
#define G4_PREFILL_H

#include <stdint.h>

#include "engine/engine.h"

struct prefill_image {
    const uint8_t *patches;   /* (n, 6912) uint8, HWC 48x48 blocks */
    const int32_t *positions; /* (n, 2) (x, y) */
    int n;                    /* soft tokens */
};

/* The end (exclusive) of the chunk that starts at `start`: at most `target` rows, shortened to end before an
 * image run it would cut, or lengthened to the end of an image run that starts at `start`. */
int prefill_chunk_end(const int32_t *ids, int n, int start, int32_t image_token, int target);

/* The end of the chunk from `start` under the engine's policy: ENGINE_SOLO_CHUNK_ROWS rows when the chunk runs
 * in a step of its own (`alone`: no decode rows or other chunks beside it) and holds no image row; else
 * prefill_chunk_end at ENGINE_CHUNK_ROWS. Fewer passes bring a lone text prompt's first token sooner; an image
 * keeps 512, since its whole run then shares a pass with fewer text rows (docs/perf.md, version 13). */
int prefill_next_end(const int32_t *ids, int n, int start, int32_t image_token, int alone);

/* Checks that the image placeholder runs of ids match imgs (count and lengths) and gives each row its block
 * number (-1 for text) in block (n). 0, or -1 with err naming the run and both counts. */
int prefill_image_blocks(const int32_t *ids, int n, int32_t image_token, const struct prefill_image *imgs,
                         int n_imgs, int *block, char *err);

/* Runs ids (n rows) into `stream` from its current length, in chunks of chunk_rows (prefill_chunk_end), or
 * with chunk_rows 0 in the chunks prefill_next_end cuts for a stream alone on the engine.
 * logits: NULL, or (n, V) when all_rows, or (V) for the last row only. 0, or -1 with err. */
int prefill_run(struct engine *e, int stream, const int32_t *ids, int n, const struct prefill_image *imgs,
                int n_imgs, int chunk_rows, float *logits, int all_rows, char *err);

#endif
