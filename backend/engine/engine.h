/* engine — the one narrow API between the scheduler (or a CLI command) and a Gemma 4 forward pass.
 *
 * An engine owns the weights of one model on one device (CPU fp32 reference, or CUDA) and the KV caches of
 * up to max_streams streams. The caller drives it in steps: each step is a list of items, every item a run of
 * consecutive rows of one stream — a prompt chunk (up to ENGINE_MAX_CHUNK rows, never cutting an image), a
 * decode row, or a decode window of up to ENGINE_MAX_WINDOW rows (drafting). The engine writes the logits of
 * the rows each item asks for, or draws their next tokens itself (sampler.h's algorithm; on the CUDA engine
 * on the device, so no logits row crosses the bus). Nothing here knows about sockets, JSON or text: ids and
 * floats in, floats or ids out.
 *
 * Exactness: a row's logits depend only on that row's stream contents, never on the other items of the step,
 * the chunking of the prompt, or the row's place in a window (design.md, "Exactness contract").
 *
 * Images: the caller turns an image's patches into embedding rows with engine_embed_image and passes them
 * with the chunk that holds the image's placeholder run; image rows form one attention block (bidirectional
 * on sliding layers in the generate-path mask, on every layer in the forward-path mask; see image_mask).
 *
 * Threads: one thread drives an engine; the engine may use worker threads internally. */
#ifndef G4_ENGINE_H
#define G4_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/sampler.h"
#include "model/model.h"

#define ENGINE_CHUNK_ROWS 512  /* rows a prompt chunk aims for */
#define ENGINE_SOLO_CHUNK_ROWS 1024  /* rows a text-only chunk aims for in a step of its own (prefill_next_end) */
#define ENGINE_MAX_CHUNK 1280  /* rows of one item: a chunk grows past ENGINE_CHUNK_ROWS only to hold a whole image (≤ 1120 rows) */
#define ENGINE_MAX_WINDOW 16  /* rows of one decode window */

enum engine_device { ENGINE_CPU, ENGINE_CUDA };

/* Which mask image rows get (spec §4.6; checked against transformers 5.17 on the GPU machine).
 * SLIDING_ONLY: bidirectional within an image on sliding layers, causal on full layers — what the 12B's
 *   create_masks_for_generate / create_masks_for_vision_model build ("Gemma 4 explicitly disables
 *   bidirectional attention on global attention layers"); transformers uses it in generate() with a static
 *   cache. The default.
 * ALL_LAYERS: bidirectional within an image on every layer (sliding: OR(AND(window, causal), block)) — what a
 *   direct forward with mm_token_type_ids builds, and what 5.17's generate() does with its default dynamic
 *   cache. */
enum engine_image_mask { ENGINE_IMAGE_MASK_SLIDING_ONLY, ENGINE_IMAGE_MASK_ALL_LAYERS };

/* CPU only: ENGINE_CPU_BF16_ACTIVATIONS rounds, as the CUDA path does, every matrix product's input and the
 * cached keys and values to bf16 (fp32 elsewhere). It measures what bf16 activations cost a network, and gives
 * the CUDA path a reference that differs from it only by summation order. */
enum engine_precision { ENGINE_FP32, ENGINE_CPU_BF16_ACTIVATIONS };

/* The CUDA attention's cut of the keys (kernels.h KERN_ATTN_*, checked equal at build time), which the CPU's
 * bf16-activation mode follows: blocks of 64 positions, block b in partial b mod 16. */
#define ENGINE_ATTN_KEY_BLOCK 64
#define ENGINE_ATTN_PARTIALS 16

struct engine_opts {
    enum engine_device device;
    int max_streams;   /* streams that can hold KV state at once */
    int max_context;   /* positions per stream (prompt + generated) */
    int n_threads;     /* CPU worker threads; 0 = one per core */
    enum engine_image_mask image_mask;
    enum engine_precision precision; /* zero (ENGINE_FP32) unless asked */
};

/* One item of a step: rows [pos0, pos0 + n) of stream `stream`. pos0 must equal the stream's length
 * (engine_stream_length); the rows are appended to its KV cache. */
struct engine_item {
    int stream;
    int n;                       /* rows, 1 … ENGINE_MAX_CHUNK */
    const int32_t *tokens;       /* (n) token ids; image placeholder rows carry the image token id */
    const float *image_rows;     /* (n_image_rows, H) embedding rows for the placeholder rows, in order, or NULL */
    int n_image_rows;            /* how many rows of `tokens` are image rows (must match their count) */
    const int *image_block;      /* (n) image block number of each row, -1 for text rows; NULL when no images */
    int logits_from;             /* logits are written (or tokens drawn) for rows logits_from … n-1 */
    float *logits;               /* ((n - logits_from), V) out, or NULL for no logits */
    /* Drawing by the engine: when sample is set, the token that follows each row logits_from … n-1 is drawn
     * with these parameters exactly as samp_sample would from that row's logits, at position (the row's
     * position + 1), and written to sampled; -1 where no token can be drawn. logits may stay NULL. */
    const struct samp_params *sample;  /* validated for the model's vocabulary, or NULL */
    int32_t *sampled;            /* (n - logits_from) out, when sample is set */
};

struct engine;

/* Loads the model's weights onto the device and plans the KV memory. NULL with err when the device is
 * missing or the plan does not fit (the message says how much was asked and how much there is). */
struct engine *engine_create(const struct g4_model *model, const struct engine_opts *opts, char *err);
void engine_destroy(struct engine *e);

/* Opens a stream with an empty cache; returns its id (0 … max_streams-1) or -1 when all are in use. */
int engine_stream_open(struct engine *e);
void engine_stream_close(struct engine *e, int stream);
int engine_stream_length(const struct engine *e, int stream);

/* Forgets the stream's positions from n on (n ≤ length, and length - n ≤ ENGINE_MAX_WINDOW for a stream
 * past its sliding window): how rejected draft rows are dropped. */
void engine_stream_truncate(struct engine *e, int stream, int n);

/* Benchmarks only: treats positions [length, length + n) as present, with whatever the cache holds there,
 * so decode at a long context can be timed without prefilling it. Results after this are meaningless. */
void engine_stream_skip(struct engine *e, int stream, int n);

/* Device memory the engine holds: weights, KV caches of one stream, scratch (bytes). */
struct engine_memory {
    size_t weights, kv_per_stream, scratch;
};
void engine_memory(const struct engine *e, struct engine_memory *out);

/* Measures the device's memory copy rate (bytes read + written per second over a large copy): the
 * denominator of the decode bandwidth floor. */
double engine_copy_rate(struct engine *e);

/* Runs one step. Returns 0, or -1 with err when an item is invalid (a client-caused condition the caller
 * should have caught: context full, wrong position, bad token id); the step then did nothing. */
int engine_step(struct engine *e, const struct engine_item *items, int n_items, char *err);

/* Embeds one image's merged patches: patches (n, 6912) uint8 in HWC order, positions (n, 2) as (x, y);
 * writes (n, H) float rows to out. Returns 0, or -1 with err (no vision embedder, position past the table). */
int engine_embed_image(struct engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                       char *err);

/* The embedding-table row a text row of token `tok` reads: the multimodal placeholder ids (image, video,
 * audio) read the pad row, as transformers does when no features replace them (a generated <|image|> fed back
 * as text, or a placeholder with no image). Both backends use this. */
int32_t engine_embedding_id(const struct g4_model *m, int32_t tok);

/* Cache rows a stream keeps for layer l: the whole context for a full layer; for a sliding layer the window
 * minus one plus ENGINE_MAX_WINDOW, so that dropping rejected draft rows never loses a key still in the window.
 * Both backends size their caches with this one rule. */
int engine_cache_rows(const struct cfg_layer *l, int max_context);

/* The model this engine runs. */
const struct g4_model *engine_model(const struct engine *e);

#endif
