/* gen_defaults — generation_config.json -> struct samp_params (see gen_defaults.h). */
#include "engine/gen_defaults.h"

void gen_defaults_params(const struct cfg_gen *g, struct samp_params *p)
{
    samp_params_init(p);
    p->temperature = g->do_sample ? (float)g->temperature : 0.0f;
    p->top_k = g->top_k;
    p->top_p = (float)g->top_p;
    p->min_p = (float)g->min_p;
    for (int i = 0; i < g->n_stop && p->n_stop_ids < SAMP_MAX_STOP_IDS; i++) p->stop_ids[p->n_stop_ids++] = g->stop_ids[i];
    for (int i = 0; i < g->n_suppress && p->n_suppress_ids < SAMP_MAX_SUPPRESS_IDS; i++)
        p->suppress_ids[p->n_suppress_ids++] = g->suppress_ids[i];
    if (g->max_new_tokens > 0) p->max_tokens = g->max_new_tokens;
}
