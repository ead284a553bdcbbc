/* model — one checkpoint directory opened as a whole: its config, generation defaults, weights (mapped,
 * not copied) and, when present, its tokenizer. The engine, the CLI and the server take a struct g4_model
 * and never open files themselves. */
#ifndef G4_MODEL_H
#define G4_MODEL_H

#include "model/config.h"
#include "model/safetensors.h"

struct tok;

struct g4_model {
    char dir[1024];            /* the checkpoint directory */
    struct cfg_model cfg;      /* config.json */
    struct cfg_gen gen;        /* generation_config.json, or defaults from config.json */
    struct st_set *weights;    /* the safetensors files, mapped read-only */
    struct tok *tok;         /* tokenizer.json, or NULL when the directory has none */
};

#define MODEL_LOAD_TOKENIZER 1u  /* also load tokenizer.json (an error when missing) */
#define MODEL_CHECK_TENSORS 2u   /* check every tensor the config implies (shape, dtype) */

/* Opens dir. Returns NULL with err naming the file and the problem (missing config, unsupported model type,
 * broken safetensors, missing tensor, missing tokenizer when asked). */
struct g4_model *model_load(const char *dir, unsigned flags, char *err);
void model_free(struct g4_model *m);

#endif
