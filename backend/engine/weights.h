/* weights — fetching a checkpoint's tensors by name for an engine backend: bf16 matrices as they are in
 * the mapping, and small float tensors (norm weights, biases, scalars, tables) widened to new fp32 arrays.
 * Both refuse a wrong shape or dtype with st_require's message (file, tensor, expected, found). */
#ifndef G4_WEIGHTS_H
#define G4_WEIGHTS_H

#include <stdint.h>

#include "model/safetensors.h"

/* A BF16 (rows, cols) matrix in the mapping, or NULL with err. */
const uint16_t *weights_matrix(const struct st_set *s, const char *name, int64_t rows, int64_t cols, char *err);

/* A BF16/F16/F32 tensor of the given shape widened into a new fp32 array (caller frees), or NULL with err. */
float *weights_vector_nd(const struct st_set *s, const char *name, int ndim, const int64_t *shape, char *err);

/* Same for a vector of n elements. */
float *weights_vector(const struct st_set *s, const char *name, int64_t n, char *err);

#endif
