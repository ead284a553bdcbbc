/* model — opens a checkpoint directory as one struct g4_model (see model.h): config.json, then
 * generation_config.json, then the safetensors files, then (when asked) tokenizer.json. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "util/util.h"

struct g4_model *model_load(const char *dir, unsigned flags, char *err)
{
    struct g4_model *m = g4_calloc(1, sizeof *m);
    if (strlen(dir) >= sizeof m->dir) {
        g4_errf(err, "%s: path too long", dir);
        goto fail;
    }
    strcpy(m->dir, dir);
    if (cfg_load(dir, &m->cfg, err)) goto fail;
    if (cfg_gen_load(dir, &m->cfg, &m->gen, err)) goto fail;
    if (!(m->weights = st_open(dir, err))) goto fail;
    if ((flags & MODEL_CHECK_TENSORS) && cfg_check_tensors(&m->cfg, m->weights, CFG_CHECK_ALL, NULL, err)) goto fail;
    if ((flags & MODEL_LOAD_TOKENIZER) && !(m->tok = tok_load_dir(dir, err))) goto fail;
    return m;
fail:
    model_free(m);
    return NULL;
}

void model_free(struct g4_model *m)
{
    if (!m) return;
    if (m->weights) st_close(m->weights);
    if (m->tok) tok_free(m->tok);
    free(m);
}
