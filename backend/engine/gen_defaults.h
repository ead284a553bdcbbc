/* gen_defaults — a request's default sampling parameters from the checkpoint's generation_config.json
 * (sampling on or off, temperature, top-k/p, min-p, stop and suppressed ids, max new tokens). `g4 generate` and
 * `g4 serve` start every request from these, then apply what the user asked. */
#ifndef G4_GEN_DEFAULTS_H
#define G4_GEN_DEFAULTS_H

#include "engine/sampler.h"
#include "model/config.h"

void gen_defaults_params(const struct cfg_gen *g, struct samp_params *p);

#endif
