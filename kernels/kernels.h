/* kernels.h — the C launchers of g4's CUDA kernels (one op per .cu file). Host code in
 * backend/engine/cuda/ calls these; shapes use the engine's letters (M rows, N outputs, K inputs, H hidden,
 * Q/KV heads, D head dim). Every launcher runs on the given stream, checks the launch, and aborts on a
 * CUDA error (a device fault is a bug, never a client error).
 *
 * Exactness: every kernel computes each output element with a reduction order fixed by the element's own
 * coordinates (never by M, by the number of items, or by where a row sits in the step), so a row's results
 * are bit-identical however it is batched. */
#ifndef G4_KERNELS_H
#define G4_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *kern_stream;

/* Per-row facts the attention and cache kernels need; one entry per row of the step. */
struct kern_row {
    int stream;   /* engine stream of the row */
    int pos;      /* absolute position of the row */
    int pos0;     /* position of its item's first row */
    int base;     /* step row of its item's first row */
    int block;    /* image block of the row within its item, -1 for text */
    int item_end; /* step row one past its item's last row */
};

/* y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias (N) fp32). K % 16 == 0. Tensor cores, fp32
 * accumulation over K in chunks of 16 in increasing order, for every M. */
void kern_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, float *y, int M, int N, int K,
                    kern_stream s);

/* Row-wise RMSNorm of x (rows, n) fp32 with weight w (n) fp32 (NULL: no weight); writes y32 (fp32) and/or
 * y16 (bf16) when not NULL. */
void kern_rmsnorm(const float *x, const float *w, float eps, int rows, int n, float *y32, uint16_t *y16,
                  kern_stream s);

/* x = (x + RMSNorm(t; w)) * scalar, rows of n. */
void kern_residual_norm_add(float *x, const float *t, const float *w, float eps, float scalar, int rows, int n,
                            kern_stream s);

/* x (rows, H) fp32 = table[token] * scale, or the image row image_rows[image_index[r]] (unscaled) where
 * image_index[r] >= 0 (image_index may be NULL). */
void kern_embed(const int32_t *tokens, const uint16_t *table, float scale, const float *image_rows,
                const int32_t *image_index, int rows, int H, float *x, kern_stream s);

/* Per row: q (rows, Q*D) fp32 in place: per-head RMSNorm (q_norm) then RoPE at the row's position;
 * k_raw (rows, KV*D) fp32 -> k_out bf16 (k_norm, RoPE); v_raw (rows, KV*D) fp32 (or k_raw when K = V) ->
 * v_out bf16 (weightless RMSNorm). inv_freq (D/2) fp32, zeros where a pair does not rotate. */
void kern_qkv_prep(float *q, const float *k_raw, const float *v_raw, const float *q_norm, const float *k_norm,
                   const float *inv_freq, const struct kern_row *rows_meta, float eps, int rows, int n_heads,
                   int n_kv, int D, uint16_t *k_out, uint16_t *v_out, kern_stream s);

/* Attention of every row over its stream's keys: keys at positions >= the item's first position come from
 * the step's k_new/v_new (rows, KV*D) bf16, older ones from the layer's cache (streams, cap, KV*D) bf16 at
 * slot pos % cap. is_full/window/mask_all select the mask (engine.h). out (rows, Q*D) bf16. Keys are visited
 * in increasing position; softmax online in fp32. */
void kern_attention(const float *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                    const uint16_t *cache_v, const struct kern_row *rows_meta, int rows, int n_heads, int n_kv,
                    int D, int cap, int is_full, int window, int mask_all, uint16_t *out, kern_stream s);

/* Copies each row's new k/v (rows, KV*D) bf16 into its stream's cache slot pos % cap, for rows whose
 * position is within the last cap positions of their item. */
void kern_kv_store(const uint16_t *k_new, const uint16_t *v_new, const struct kern_row *rows_meta, int rows,
                   int kvd, int cap, uint16_t *cache_k, uint16_t *cache_v, kern_stream s);

/* out (n) bf16 = gelu_tanh(gate) * up, fp32 math. */
void kern_geglu(const float *gate, const float *up, long n, uint16_t *out, kern_stream s);

/* logits (n) = cap * tanh(logits / cap). */
void kern_softcap(float *logits, long n, float cap, kern_stream s);

/* Row-wise LayerNorm (biased variance) of x (rows, n) fp32: y = (x - mean) / sqrt(var + eps) * w + b,
 * written as fp32 (y32) and/or bf16 (y16). */
void kern_layernorm(const float *x, const float *w, const float *b, float eps, int rows, int n, float *y32,
                    uint16_t *y16, kern_stream s);

/* Patch bytes (rows, n) uint8 -> fp32 pixel * (1/255). */
void kern_pixels_to_f32(const uint8_t *px, long n, float *out, kern_stream s);

/* h (rows, E) += table[x][0] + table[y][1] with table (posemb, 2, E) fp32 and positions (rows, 2) int32. */
void kern_add_positions(float *h, const float *table, const int32_t *positions, int rows, int E, kern_stream s);

#ifdef __cplusplus
}
#endif

#endif
