/* weights — tensor lookup for the engine backends (see weights.h). */
#include "engine/weights.h"

#include <string.h>

#include "util/util.h"

const uint16_t *weights_matrix(const struct st_set *s, const char *name, int64_t rows, int64_t cols, char *err)
{
    int64_t shape[2] = {rows, cols};
    const struct st_tensor *t = st_require(s, name, ST_BF16, 2, shape, err);
    return t ? t->data : NULL;
}

float *weights_vector_nd(const struct st_set *s, const char *name, int ndim, const int64_t *shape, char *err)
{
    const struct st_tensor *t = st_require(s, name, ST_ANY_FLOAT, ndim, shape, err);
    float *out;
    if (!t) return NULL;
    out = g4_malloc((size_t)t->numel * sizeof *out);
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == ST_BF16) out[i] = bf16_to_f32(((const uint16_t *)t->data)[i]);
        else if (t->dtype == ST_F16) out[i] = f16_to_f32(((const uint16_t *)t->data)[i]);
        else memcpy(&out[i], (const char *)t->data + i * 4, 4);
    }
    return out;
}

float *weights_vector(const struct st_set *s, const char *name, int64_t n, char *err)
{
    return weights_vector_nd(s, name, 1, &n, err);
}
