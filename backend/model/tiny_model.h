/* tiny_model — the embedded demo model writer (`g4 make-tiny-model`, `make run`). */
#ifndef G4_TINY_MODEL_H
#define G4_TINY_MODEL_H

#include <stdint.h>

/* Writes a small random-weight gemma4_unified checkpoint into dir (created if absent): config.json,
 * generation_config.json, model.safetensors (bf16, deterministic for seed), and tokenizer.json +
 * tokenizer_config.json built from the Gemma tokenizer.json at tokenizer_src. 0, or -1 with err. */
int tiny_model_write(const char *dir, uint64_t seed, const char *tokenizer_src, char *err);

/* Random weights of a real shape for speed measurements ("12b": Gemma 4 12B unified; "31b": the 31B text
 * decoder's dimensions in the unified layout; "wide": the GPU exactness checks' model, hidden 1024 with the real
 * head dims, 4 layers): same files, no tokenizer when tokenizer_src is NULL. Values
 * are uniform random bf16 (cheap to make at 12 billion), never zeros. layers: 0 for the shape's own depth,
 * or fewer (the first `layers` of its pattern: the 31B's 62 GB do not fit a 64 GB disk beside anything else).
 * 0, or -1 with err (unknown shape, too many layers). */
int tiny_model_write_shape(const char *dir, const char *shape, int layers, uint64_t seed, const char *tokenizer_src,
                           char *err);

#endif
