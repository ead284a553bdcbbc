/* cuda_engine — private structures of the CUDA backend (engine_backend.h), shared by cuda_engine.c (create,
 * memory plan, streams), cuda_step.c (the forward of one step) and cuda_vision.c (the patch embedder).
 *
 * Precision: weights bf16 as shipped; the residual stream fp32; every matrix product takes bf16 inputs
 * (normed activations rounded once) and accumulates in fp32; K/V caches bf16; norms, RoPE, softmax, GeGLU
 * and the soft-cap in fp32. A step runs all its rows through each projection at once (the weights stream
 * once per step); attention is per row over the row's own stream. */
#ifndef G4_CUDA_ENGINE_H
#define G4_CUDA_ENGINE_H

#include <stdint.h>

#include <cuda_runtime.h>

#include "engine/engine.h"
#include "kernels.h"

#define CUDA_CHECK(call)                                                                                        \
    do {                                                                                                        \
        cudaError_t e_ = (call);                                                                                \
        G4_CHECK(e_ == cudaSuccess, "CUDA error %s", cudaGetErrorString(e_));                                   \
    } while (0)

#define CUDA_GEGLU_ROWS 1024 /* prompt rows per gate|up product into fp32 (then kern_geglu); see cuda_step.c */
#define CUDA_LOGIT_ROWS 64 /* logits rows computed per product against the (V, H) table */
#define CUDA_TILE_SETS 4   /* distinct attention tile shapes a model may need (sliding, full) */
#define CUDA_MAX_IMAGE_ROWS 1120 /* patches of the largest image (max_soft_tokens 1120) */
#define CUDA_GRAPH_MAX_ROWS 64 /* passes of up to this many rows are replayed from CUDA graphs */
#define CUDA_MAX_GRAPHS 256

/* A captured decode pass, by shape. */
struct cuda_graph {
    int rows, logits, stride;
    int split[CUDA_TILE_SETS]; /* kern_attention_groups of each tile set */
    cudaGraphExec_t exec; /* NULL until the shape is seen a second time */
};

struct cuda_layer {
    const struct cfg_layer *c;
    /* device bf16, products fused where they share an input: q|k|v (q_dim + kv_dim, or + 2 kv_dim without
     * K = V) x H, and gate|up (2 I) x H */
    uint16_t *w_qkv, *wo, *w_gu, *w_down;
    int qkv_n;                                            /* rows of w_qkv */
    float *q_norm, *k_norm;                               /* (D) device */
    float *in_norm, *post_attn_norm, *pre_ff_norm, *post_ff_norm; /* (H) device */
    float scalar;                                         /* layer_scalar (host) */
    float *inv_freq;                                      /* (D/2) device */
    int cap;                                              /* cache rows per stream */
    int tile_set;                                         /* which attention tile list (tile_d[], ...) */
    uint16_t *cache_k, *cache_v;                          /* (max_streams, cap, K*D) device bf16 */
};

struct cuda_vision {
    int E, P, posemb;
    float rms_eps;
    float *ln1_w, *ln1_b, *dense_b, *ln2_w, *ln2_b, *pos, *pos_w, *pos_b; /* device fp32 */
    uint16_t *dense, *proj;                                               /* device bf16 (E, P), (H, E) */
};

/* Where logits row j of a pass goes: its item, its row among the item's logits rows, and the host logits it
 * is copied to (the item's own, or host_logits for a host draw; NULL for neither). */
struct cuda_draw_row {
    int item, row;
    float *dst;
};

/* G4_CUDA_PROFILE=1: CUDA events between the kernels of every pass (graphs off), device time per kind of
 * kernel, averaged per pass shape and printed when the engine is destroyed (cuda_profile.c). */
enum cuda_prof_kind {
    PROF_START, PROF_EMBED, PROF_QKV, PROF_QKV_PREP, PROF_ATTN_SLIDING, PROF_ATTN_FULL, PROF_ATTN_MERGE,
    PROF_KV_STORE, PROF_O, PROF_RESID, PROF_GU, PROF_GEGLU, PROF_DOWN, PROF_HEAD, PROF_DRAW, PROF_KINDS
};
#define CUDA_PROF_EVENTS 1024
#define CUDA_PROF_SHAPES 16
struct cuda_prof {
    cudaEvent_t ev[CUDA_PROF_EVENTS];
    int kind[CUDA_PROF_EVENTS], n;
    int rows[CUDA_PROF_SHAPES], n_shapes;
    long passes[CUDA_PROF_SHAPES];
    double ms[CUDA_PROF_SHAPES][PROF_KINDS];
};

struct cuda_engine {
    const struct g4_model *model;
    struct engine_opts opts;
    cudaStream_t stream;
    int H, V, L, max_rows;      /* max_rows: rows of one device pass (items are grouped up to it) */
    float embed_scale, rms_eps, softcap;
    int has_softcap, has_vision;
    uint16_t *embed;            /* (V, H) device bf16; also the LM head */
    float *final_norm;          /* (H) device */
    struct cuda_layer *layers;
    struct cuda_vision vision;
    size_t weight_bytes, kv_bytes, scratch_bytes;
    /* scratch, device, sized for max_rows */
    float *x, *t, *qkv, *logits, *image_rows, *part_acc, *part_ml;
    uint16_t *xn, *q16, *k_new, *v_new, *o, *h;
    int32_t *tokens, *image_index, *logit_rows;
    struct kern_row *meta;
    struct kern_tile *tiles;    /* CUDA_TILE_SETS lists of max_rows tiles */
    int *n_tiles;               /* (CUDA_TILE_SETS) */
    struct kern_gemm_ws gemm_ws;
    int *tail_counters;         /* the product tails' arrival counters (KERN_TAIL_COUNTERS, zero at rest) */
    int image_rows_cap;         /* rows image_rows can hold */
    int max_qd, max_kvd, max_qkv, max_i, max_heads;
    int tile_d[CUDA_TILE_SETS], tile_group[CUDA_TILE_SETS], n_tile_sets; /* head dim, group of each list */
    int tile_kv[CUDA_TILE_SETS];   /* kv heads of each list's layers */
    int tile_rows[CUDA_TILE_SETS]; /* rows per attention tile of each list in this pass */
    int attn_mode;                 /* KERN_ATTN_*: narrow for 4 … CUDA_GRAPH_MAX_ROWS rows, prompt past them */
    /* the draws (cuda_sample.c): per logits row what to select, the selected candidates, and for rows
     * drawn on the host (top_k off or over KERN_TOPK_MAX) their whole logits */
    struct kern_select_row *select, *h_select;
    int32_t *cand_ids, *cand_n, *h_cand_ids, *h_cand_n;
    float *cand_logits, *h_cand_logits;
    int cand_stride;             /* candidates kept per row this pass (the largest k) */
    float *gu;                   /* (CUDA_GEGLU_ROWS, 2 max_i) a prompt pass's gate|up product, pairs interleaved,
                                  * only with G4_CUDA_GEGLU_FUSED=0 */
    int geglu_fused_prompt;      /* prompt passes too apply GeGLU in the product (G4_CUDA_GEGLU_FUSED=0: not) */
    uint64_t *topk_ws;           /* kern_topk's scratch: topk_ws_keys keys */
    size_t topk_ws_keys;
    struct cuda_draw_row *draw;  /* (max_rows) host bookkeeping of each logits row */
    float *host_logits;          /* (n_host_rows, V) for host draws */
    size_t host_logits_cap;      /* floats */
    int n_host_rows;
    double *pick_w;              /* samp_pick_sorted scratch (KERN_TOPK_MAX) */
    samp_ws *ws;                 /* samp_sample scratch for host draws */
    struct cuda_prof *prof;      /* NULL unless G4_CUDA_PROFILE=1 */
    unsigned prof_skip;          /* G4_CUDA_PROFILE_SKIP: kinds left out (bits of enum cuda_prof_kind) */
    struct cuda_graph graphs[CUDA_MAX_GRAPHS];
    int n_graphs, use_graphs;    /* use_graphs: 1 unless G4_CUDA_GRAPHS=0 */
    /* host staging (pinned) */
    int32_t *h_tokens, *h_image_index, *h_logit_rows;
    struct kern_row *h_meta;
    struct kern_tile *h_tiles;
    int *h_n_tiles;
    void **allocs;              /* every cudaMalloc, freed at destroy */
    int n_allocs, cap_allocs;
};

/* The current device's copy rate: the median of 5 device-to-device copies of 2 GiB (after one warm-up), bytes
 * read + written per second (the measure of `g4 bench`'s floor and of the kernel benches); 0 when 4 GiB cannot
 * be had. */
double cuda_device_copy_rate(void);

/* cudaMalloc tracked by the engine (aborts on failure: the plan checked the size first). */
void *cuda_alloc(struct cuda_engine *e, size_t bytes);
/* Pinned host memory for staging (cudaMallocHost; aborts on failure); freed with cudaFreeHost. */
void *cuda_alloc_pinned(size_t bytes);

/* Weights to the device, counted in weight_bytes: a bf16 matrix from the mapping, and an fp32 array from
 * weights_vector* (freed here). NULL in, NULL out. */
uint16_t *cuda_upload_bf16(struct cuda_engine *e, const uint16_t *host, size_t count);
/* n bf16 matrices of `cols` columns stacked into one (their rows in order), for fused products. */
uint16_t *cuda_upload_bf16_stack(struct cuda_engine *e, const uint16_t *const *parts, const int *rows, int n, int cols);
/* The gate|up product's weights (kernels.h): gate and up (rows, cols) interleaved in pairs of rows (rows even). */
uint16_t *cuda_upload_bf16_pairs(struct cuda_engine *e, const uint16_t *gate, const uint16_t *up, int rows, int cols);
float *cuda_upload_f32(struct cuda_engine *e, float *host, size_t count);

/* cuda_sample.c: plan (after the row table), select per logits chunk, finish (after the sync) */
/* Keys of kern_topk scratch: a logits chunk at the usual top_k (64) in one batch, any k in batches. */
static inline size_t cuda_topk_ws_keys(int V)
{
    size_t usual = kern_topk_ws_keys(V, CUDA_LOGIT_ROWS, 64), one = kern_topk_ws_keys(V, 1, KERN_TOPK_MAX);
    return usual > one ? usual : one;
}
void cuda_sample_alloc(struct cuda_engine *e);
void cuda_sample_free(struct cuda_engine *e);
void cuda_sample_plan(struct cuda_engine *e, const struct engine_item *items, int n_items, int n_logits);
void cuda_sample_upload(struct cuda_engine *e, int n_logits);
void cuda_sample_chunk(struct cuda_engine *e, int first, int n);
void cuda_sample_finish(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths,
                        int n_logits);

/* cuda_profile.c */
void cuda_prof_create(struct cuda_engine *e);
void cuda_prof_mark(struct cuda_engine *e, enum cuda_prof_kind kind);
void cuda_prof_pass_done(struct cuda_engine *e, int rows); /* after the pass's sync */
void cuda_prof_report_free(struct cuda_engine *e);
int cuda_prof_skips(const struct cuda_engine *e, enum cuda_prof_kind kind); /* G4_CUDA_PROFILE_SKIP leaves it out */

/* cuda_step.c */
void cuda_run_items(struct cuda_engine *e, const struct engine_item *items, int n_items, const int *lengths);

/* cuda_vision.c */
int cuda_load_vision(struct cuda_engine *e, char *err);
int cuda_vision_embed(struct cuda_engine *e, const uint8_t *patches, const int32_t *positions, int n, float *out,
                      char *err);

#endif
