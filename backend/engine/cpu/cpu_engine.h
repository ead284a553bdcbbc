/* cpu_engine — private structures of the CPU reference backend, shared by its files: weights resolved
 * from the checkpoint (cpu_weights.c), the decoder forward and attention (cpu_forward.c), the patch
 * embedder (cpu_vision.c) and the backend entry points (cpu_engine.c).
 *
 * Everything is fp32 except the large matrices, which stay bf16 in the mapped checkpoint and are widened
 * inside the dot products. Dimension letters: T rows of a chunk, H hidden, Q query heads, K kv heads,
 * D head dim, I MLP width, V vocab, E vision embed dim, P patch values (6912), C cache rows. */
#ifndef G4_CPU_ENGINE_H
#define G4_CPU_ENGINE_H

#include <stdint.h>

#include "engine/cpu/pool.h"
#include "engine/engine.h"

struct cpu_layer {
    const struct cfg_layer *c;  /* geometry, owned by the model's config */
    const uint16_t *wq;         /* (Q*D, H) bf16 */
    const uint16_t *wk;         /* (K*D, H) bf16 */
    const uint16_t *wv;         /* (K*D, H) bf16, NULL when k_eq_v */
    const uint16_t *wo;         /* (H, Q*D) bf16 */
    const uint16_t *w_gate;     /* (I, H) bf16 */
    const uint16_t *w_up;       /* (I, H) bf16 */
    const uint16_t *w_down;     /* (H, I) bf16 */
    float *q_norm, *k_norm;     /* (D) */
    float *in_norm, *post_attn_norm, *pre_ff_norm, *post_ff_norm; /* (H) */
    float scalar;               /* layer_scalar */
    float *inv_freq;            /* (D/2) RoPE inverse frequencies, zeros where a pair does not rotate */
    int cache_rows;             /* C: ring of window-1+ENGINE_MAX_WINDOW (sliding) or max_context (full) */
};

struct cpu_vision {
    int E, P, posemb;           /* embed dim, patch values, rows of each position table */
    float rms_eps;
    float *ln1_w, *ln1_b;       /* (P) */
    const uint16_t *dense;      /* (E, P) bf16 */
    float *dense_b;             /* (E) */
    float *ln2_w, *ln2_b;       /* (E) */
    float *pos;                 /* (posemb, 2, E): [x][0] column table, [x][1] row table */
    float *pos_w, *pos_b;       /* (E) */
    const uint16_t *proj;       /* (H, E) bf16 */
};

struct cpu_stream {
    float **k, **v;             /* per layer: (C, K*D) keys (normed, roped) and values (normed) */
};

struct cpu_engine {
    const struct g4_model *model;
    struct engine_opts opts;
    struct pool *pool;
    int H, V, L;
    float embed_scale;          /* bf16(sqrt(H)): the scale a bf16 checkpoint applies */
    const uint16_t *embed;      /* (V, H) bf16, also the tied LM head */
    float *final_norm;          /* (H) */
    int has_softcap;
    float softcap;
    float rms_eps;
    int bf16_act;               /* ENGINE_CPU_BF16_ACTIVATIONS: round product inputs and K/V like the GPU */
    struct cpu_layer *layers;   /* (L) */
    int has_vision;
    struct cpu_vision vision;
    struct cpu_stream *streams; /* (max_streams) */
    /* scratch for one item of up to ENGINE_MAX_CHUNK rows */
    float *x, *a, *q, *k, *v, *o, *t1, *gate, *up; /* sized for the widest layer */
    float *scores;              /* per worker: (max_context + ENGINE_MAX_CHUNK) */
    int max_qd, max_kvd, max_i;
};

/* cpu_weights.c: fills e's weights from the model; -1 with err naming the tensor. */
int cpu_weights_load(struct cpu_engine *e, char *err);
void cpu_weights_free(struct cpu_engine *e);

/* cpu_forward.c: appends item rows [pos0, pos0 + n) to the stream and writes the logits asked for. */
void cpu_forward_item(struct cpu_engine *e, const struct engine_item *it, int pos0, enum engine_image_mask mask);

/* cpu_vision.c: (n, P) uint8 patches with (n, 2) positions -> (n, H) rows. -1 with err (position range). */
int cpu_vision_embed(struct cpu_engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                     char *err);

#endif
