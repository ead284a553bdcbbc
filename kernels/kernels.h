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

#include <stddef.h>
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

/* ---- run-time switches (knobs.cu) ----------------------------------------------------------------------
 * Early loads: the kernels a decode step waits on between its products (attention, kern_qkv_prep,
 * kern_residual_norm_add) issue every load a thread needs (norm weights, positions, frequencies) before the
 * first use, instead of a memory round trip after each reduction or branch; and what no kernel of the pass
 * writes (the row table and tiles, norm weights, frequencies, the attention's cached keys and values) they ask
 * for before kern_dep_wait, while the previous kernel finishes. The same arithmetic in the same order: the
 * same bits (H100, 2026-12-06: each part alone and attention's order after the wait, with programmatic
 * launch; docs/cuda.md). The merge took them too until that run showed its early form wrong under
 * programmatic launch (exact without it); it was removed. On by default since the H100 run of 2026-12-06
 * (one stream 10.27 -> 9.89 ms, 16 streams 12.73 -> 12.39 ms; docs/perf.md, version 12); G4_CUDA_EARLY_LOADS=0
 * turns them off; G4_CUDA_EARLY_PARTS (a mask of the parts below, default all) picks kernels, a diagnostic;
 * kern_set_early_loads overrides the environment (tests: on and off must agree). Set it before a pass is
 * captured in a graph: a graph keeps the kernels it was captured with. */
enum { KERN_EARLY_ATTENTION = 1, KERN_EARLY_QKV_PREP = 2, KERN_EARLY_RESIDUAL = 4, KERN_EARLY_ALL = 7,
       KERN_EARLY_ATTN_AFTER_WAIT = 16 /* diagnostic: attention's early order, all after the wait */ };
int kern_early_loads(int part);
void kern_set_early_loads(int on);
/* The decode product's weight stages asked for before kern_dep_wait, while the kernel before it finishes (its
 * ring holds 4 to 10): G4_CUDA_EARLY_WEIGHTS, default all of them. A tuning knob: the same bits either way. */
int kern_early_weight_stages(void);
/* Whether the tensor-copy decode products of up to 8 rows load boxes of 8 activation rows (more weight stages
 * a block: gemm_skinny_tma.cu); G4_CUDA_SKINNY_ROWS8=0 gives them 16-row boxes. The same bits either way. */
int kern_skinny_rows8(void);
/* The attention merge's block width: 128 threads folding D / 128 dimensions each, or wide, one thread a
 * dimension (head dims over 128), for merges of up to KERN_MERGE_WIDE_ROWS rows: one stream's 12B step 9.72 ->
 * 9.63 ms, 4 streams 10.14 -> 10.10, where 16 streams went 11.93 -> 11.98 and 64 20.89 -> 20.98 (H100,
 * docs/perf.md, version 13.4). G4_CUDA_MERGE_WIDE=0 or 1 makes every merge narrow or wide;
 * kern_set_merge_wide overrides the environment (-1: by rows; tests: every mode gives the same bits). Set
 * before a pass is captured in a graph. */
#define KERN_MERGE_WIDE_ROWS 4
int kern_merge_wide_mode(void);
int kern_merge_wide(int rows);
void kern_set_merge_wide(int mode);
/* Whether prompt passes (KERN_ATTN_PROMPT) at head dims 256 and 512 run the warpgroup attention kernel
 * (attention_wg.cu); G4_CUDA_ATTN_WG=0 keeps them on attention.cu's 8-warp kernel. kern_set_attention_wg
 * overrides the environment (tests: both give the same bits). Not for use mid-pass. */
int kern_attention_wg(void);
void kern_set_attention_wg(int on);
/* The warpgroup kernel's outputs by mma.sync steps in place of N-major wgmma ones (G4_CUDA_ATTN_WG_PV_MMA=1):
 * a diagnostic for the tests, the same bits. */
void kern_set_attention_wg_pv_mma(int on);
/* attention.cu's 8-warp kernel with its keys and values by tensor boxes (G4_CUDA_ATTN_PROMPT_BOXES=1; off by
 * default): the same bits. Not for use mid-pass, nor before a graph capture of a pass it has not run eagerly. */
void kern_set_attention_prompt_boxes(int on);

/* ---- matrix products ------------------------------------------------------------------------------------
 * y (M, N) fp32 = x (M, K) bf16 · w (N, K)ᵀ bf16 (+ bias (N) fp32), K % 16 == 0, on tensor cores (mma.sync
 * m16n8k16, bf16 in, fp32 accumulate). Every product takes h too: NULL, or, for the gate|up product, where
 * the finished values go instead of y: h (M, N/2) bf16 = GeGLU(gate, up), N % 4 == 0, the weight rows
 * interleaved in pairs (gate rows 2j, 2j+1, then up rows 2j, 2j+1: rows 4j .. 4j+3),
 * so y (M, N) fp32 never reaches memory. The same bits as the product into y then GeGLU (segments.cuh).
 *
 * The reduction rule, the same in every kernel: K is cut into kern_gemm_segments(N, K) equal segments; each
 * segment's chunks of 16 run in increasing order through one fp32 accumulator that starts at zero; the
 * segments' results are added in segment order to a total that starts at 0.0f; the bias (or 0.0f) is added
 * last. The cut is a function of N and K only — never of M — so a row's outputs are bit-identical whichever
 * kernel computes them and whatever other rows share the launch. Segments let a product with few outputs
 * (N = hidden) spread its weights over enough blocks to stream them at the memory's rate. */
#define KERN_GEMM_MAX_SEGMENTS 8
static inline int kern_gemm_segments(int N, int K)
{
    int s = 1;
    while (s < KERN_GEMM_MAX_SEGMENTS && (N + 31) / 32 * s < 288 && K % (64 * s) == 0 && K / (2 * s) >= 512) s *= 2;
    return s;
}

/* Scratch of the products cut into segments: partial tiles and per-tile arrival counters (zero at rest: the
 * block that completes a tile resets its counter). kern_gemm_ws_floats / _counters say how much a product of
 * M rows needs (either kernel); the caller allocates the largest. */
struct kern_gemm_ws {
    float *partial;
    int *counters;
};
static inline long kern_gemm_ws_floats(int M, int N, int K)
{
    int s = kern_gemm_segments(N, K);
    return s > 1 ? (long)s * M * N : 0;
}
static inline int kern_gemm_ws_counters(int M, int N)
{
    int skinny = (N + 31) / 32, tiled = ((M + 127) / 128) * ((N + 127) / 128);
    return skinny > tiled ? skinny : tiled;
}

/* The decode kernel (M <= 64): weights streamed once, by tensor copies from a producer warp into 4 consumer
 * warps (variant 6 below), blocks over (N, segment). */
void kern_gemm_skinny(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                      int K, const struct kern_gemm_ws *ws, kern_stream s);

/* The decode kernel with its block shape forced, for tests and benchmarks: variant 0 is the cp.async shapes'
 * choice by M (a lighter shape where only that runs the grid in one wave), 1..KERN_SKINNY_VARIANTS-1 are
 * (warps, stages) = (4, 4), (8, 4), (4, 5), (8, 3), then (4, 4) with 16 shared activation rows even for M <= 8
 * (4 x 3, slower at every M, was dropped), then warps fed by tensor copies from a producer warp
 * (gemm_skinny_tma.cu): 4 and 8 warps of 8 columns, 4 warps of 16 and of 32. Every variant gives the same bits
 * (tests/unit/test_cuda_kernels.c). */
#define KERN_SKINNY_VARIANTS 10
void kern_gemm_skinny_variant(int variant, const uint16_t *x, const uint16_t *w, const float *bias, float *y,
                              uint16_t *h, int M, int N, int K, const struct kern_gemm_ws *ws, kern_stream s);

/* The prompt kernel (any M): 128x128 tiles, a 4-stage cp.async pipeline, segments in CTAs of their own. */
void kern_gemm_bf16(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                    int K, const struct kern_gemm_ws *ws, kern_stream s);

/* The prompt kernel's contract on Hopper wgmma (gemm_wgmma.cu): 128x256 tiles, 128-byte swizzled stages;
 * segments not a multiple of 64 long go to kern_gemm_bf16. Same bits (tests/unit/test_cuda_wgmma.c). */
void kern_gemm_wgmma(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
                     int K, const struct kern_gemm_ws *ws, kern_stream s);

/* The product by the kernel that suits M (decode kernel up to 64 rows, wgmma above; G4_CUDA_WGMMA_ROWS moves
 * the cut down; kern_gemm_on_decode_kernel says which kernel M rows take); same bits either way. */
int kern_gemm_on_decode_kernel(int M);
void kern_gemm(const uint16_t *x, const uint16_t *w, const float *bias, float *y, uint16_t *h, int M, int N,
               int K, const struct kern_gemm_ws *ws, kern_stream s);

/* ---- product tails (gemm_tail.cuh) ----------------------------------------------------------------------
 * In a decode step the product y = x · wᵀ is followed by a small kernel that needs whole pieces of y: the
 * q/k/v preparation (a head's columns) after q|k|v, the residual update (the whole row) after o and down.
 * Each costs a launch and a dependency per layer (one stream: 0.31 ms of preparation and 0.33 ms of
 * residual updates in a 9.95 ms step, H100, `pending.sh costs`). A tail runs that kernel's work inside the
 * product instead: the CTA that completes a head's last column tile (an arrival counter per head), or the
 * product's last tile (one counter), runs kern_qkv_prep's or kern_residual_norm_add's arithmetic for those
 * rows, with the same device functions and order (qkv_prep.cuh, norm_rows.cuh): the same bits
 * (test_cuda_kernels). Only the decode product's tensor-copy variants take tails, and only for up to
 * kern_tail_rows(kind) rows (one CTA does all rows: slower than the standalone kernel's grid beyond a few);
 * kern_gemm_tail says whether it took the tail, else the caller launches the standalone kernel.
 * G4_CUDA_TAIL_ROWS_RESIDUAL and G4_CUDA_TAIL_ROWS_QKV set the row limits (default 0 and 4; 0: no tail), tuning
 * knobs: either way gives the same bits. The residual tail is off by default: it made one stream's step 0.5 ms
 * longer on the H100 where the q|k|v tail saves 0.12 ms (docs/perf.md, version 13). */
enum { KERN_TAIL_NONE, KERN_TAIL_RESIDUAL, KERN_TAIL_QKV_PREP };
#define KERN_TAIL_COUNTERS 256 /* arrival counters a tail needs at most (heads of a q|k|v product) */
struct kern_tail {
    int kind;
    int *counters; /* KERN_TAIL_COUNTERS ints, zero at rest (the last arrival resets its counter) */
    float eps;
    /* residual: x = (x + RMSNorm(y; w)) * scalar, then xn16 = bf16(RMSNorm(x; w_next)) when w_next */
    float *x;
    const float *w, *w_next;
    float scalar;
    uint16_t *xn16;
    /* q/k/v preparation of y (rows, N): kern_qkv_prep's arguments, ld = N */
    int k_off, v_off, n_heads, n_kv, D;
    const float *q_norm, *k_norm, *inv_freq;
    const struct kern_row *meta;
    uint16_t *q_out, *k_out, *v_out;
};
int kern_tail_rows(int kind);

/* y = x · wᵀ by kern_gemm (no bias, no GeGLU), then the tail's work; returns 1 where the product ran the
 * tail, 0 where the caller must launch the standalone kernel (another kernel, too many rows, a shape the tail
 * does not cover). */
int kern_gemm_tail(const uint16_t *x, const uint16_t *w, float *y, int M, int N, int K, const struct kern_gemm_ws *ws,
                   const struct kern_tail *tail, kern_stream s);

/* Row-wise RMSNorm of x (rows, n) fp32 with weight w (n) fp32 (NULL: no weight); writes y32 (fp32) and/or
 * y16 (bf16) when not NULL. */
void kern_rmsnorm(const float *x, const float *w, float eps, int rows, int n, float *y32, uint16_t *y16,
                  kern_stream s);

/* y16 (rows, n) bf16 = RMSNorm(x[index[j]]; w) for j < rows: the rows that need logits, gathered. */
void kern_rmsnorm_gather(const float *x, const int32_t *index, const float *w, float eps, int rows, int n,
                         uint16_t *y16, kern_stream s);

/* dst row j = src row index[j] for j < rows (device index; rows of row_bytes, a multiple of 16); src and dst must
 * not overlap. */
void kern_gather_rows(const void *src, const int32_t *index, int rows, size_t row_bytes, void *dst, kern_stream s);

/* x = (x + RMSNorm(t; w)) * scalar, rows of n; then, when w_next is not NULL, xn16 = bf16(RMSNorm(x; w_next))
 * (the next block's input norm, fused). */
void kern_residual_norm_add(float *x, const float *t, const float *w, float eps, float scalar, const float *w_next,
                            uint16_t *xn16, int rows, int n, kern_stream s);

/* x (rows, H) fp32 = table[token] * scale, or the image row image_rows[image_index[r]] (unscaled) where
 * image_index[r] >= 0 (image_index may be NULL). */
void kern_embed(const int32_t *tokens, const uint16_t *table, float scale, const float *image_rows,
                const int32_t *image_index, int rows, int H, float *x, kern_stream s);

/* Per row, from the fused projection qkv (rows, ld) fp32 — queries at column 0, raw keys at k_off, raw values
 * at v_off (v_off == k_off when K = V): per-head RMSNorm of each query head (q_norm) then RoPE at the row's
 * position -> q_out (rows, Q*D) bf16; keys: k_norm then RoPE -> k_out (rows, KV*D) bf16; values: weightless
 * RMSNorm -> v_out bf16. inv_freq (D/2) fp32, zeros where a pair does not rotate. */
void kern_qkv_prep(const float *qkv, int ld, int k_off, int v_off, const float *q_norm, const float *k_norm,
                   const float *inv_freq, const struct kern_row *rows_meta, float eps, int rows, int n_heads, int n_kv,
                   int D, uint16_t *q_out, uint16_t *k_out, uint16_t *v_out, kern_stream s);

/* ---- attention (attention.cu) ------------------------------------------------------------------------- */
#define KERN_ATTN_KEY_BLOCK 64 /* key positions per block, cut at absolute positions */
#define KERN_ATTN_PARTIALS 16  /* partial states per (row, head): key block b goes to partial b mod 16 */

/* How a pass's attention runs: KERN_ATTN_WIDE, blocks of 8 warps (passes of 1-3 rows: few CTAs, each wide);
 * KERN_ATTN_NARROW, blocks of 4 (decode passes of 4 to 64 rows: two a multiprocessor); KERN_ATTN_PROMPT, longer
 * passes: at head dims 256 and 512 the warpgroup kernel (attention_wg.cu) unless kern_attention_wg is off,
 * else as wide. The mode never changes a bit. */
enum { KERN_ATTN_WIDE = 0, KERN_ATTN_NARROW = 1, KERN_ATTN_PROMPT = 2 };

/* A tile: consecutive rows [row0, row0 + nrows) of one item, at most kern_attention_tile_rows(D, group, mode). */
struct kern_tile {
    int row0, nrows;
};

/* The step's new keys and values (rows, kvd) bf16 and the layer's caches they join (kern_kv_store). */
struct kern_kv_new {
    const uint16_t *k_new, *v_new;
    const struct kern_row *meta;
    int kvd, cap;
    uint16_t *cache_k, *cache_v;
};

/* Rows of one tile for head dim D and `group` query heads per kv head in a pass of this mode (KERN_ATTN_*); 0
 * when unsupported. A tile's size never changes a row's results. */
int kern_attention_tile_rows(int D, int group, int mode);

/* Attention of every row over its stream's keys: keys at positions >= the item's first position come from the step's
 * k_new/v_new (rows, KV*D) bf16, older ones from the layer's cache (streams, cap, KV*D) bf16 at slot pos % cap. q
 * (rows, Q*D) bf16. tiles: *n_tiles (device) of at most max_tiles, cut for the pass's mode (kern_attention_tile_rows);
 * split_tiles is the pass's own tile count (*n_tiles), which chooses how many CTAs share a tile's partials
 * (kern_attention_groups), also where the grid covers max_tiles for a graph. is_full/window/mask_all select the mask
 * (engine.h). Writes out (rows, Q*D) bf16 and returns 0, or returns 1 having left KERN_ATTN_PARTIALS partial states per
 * (row, head) in part_acc (rows, Q, KERN_ATTN_PARTIALS, D) and part_ml (rows, Q, KERN_ATTN_PARTIALS, 2) fp32 for
 * kern_attention_merge to fold into out. Either way the same bits. */
int kern_attention(const uint16_t *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                   const uint16_t *cache_v, const struct kern_row *rows_meta, const struct kern_tile *tiles,
                   const int *n_tiles, int max_tiles, int split_tiles, int rows, int n_heads, int n_kv, int D, int cap,
                   int is_full, int window, int mask_all, int mode, float *part_acc, float *part_ml, uint16_t *out,
                   kern_stream s);

/* How many CTAs kern_attention gives each (tile, kv head) of a pass of `tiles` tiles at head dim D: 1, 2, 4, 8
 * or 16. A graph of a pass is only replayed for passes with the same choice (cuda_step.c). */
int kern_attention_groups(int tiles, int n_kv, int D, int mode);

/* out (rows, Q*D) bf16 = each (row, head)'s partials left by kern_attention, folded in partial order; with kv
 * (or NULL), the rows' new keys and values also go to their caches as kern_kv_store puts them, in the same
 * launch (one kernel less a layer: attention has read the caches by then). */
void kern_attention_merge(const float *part_acc, const float *part_ml, int rows, int n_heads, int D, uint16_t *out,
                          const struct kern_kv_new *kv, kern_stream s);

/* Forces how many CTAs share a (tile, kv head)'s partials: 1, 2, 4, 8 or 16 (KERN_ATTN_PARTIALS); 0 restores
 * the choice by the launch's shape. For tests: the choice must never change a bit. Not for use mid-pass. */
void kern_attention_force_partial_groups(int groups);

/* Copies each of the rows' new k/v (kv) into its stream's cache slot pos % cap, for rows whose position is
 * within the last cap positions of their item. */
void kern_kv_store(const struct kern_kv_new *kv, int rows, kern_stream s);


/* h (rows, I) bf16 = GeGLU of gu (rows, 2I) fp32, a gate|up product whose columns come in the interleaved
 * order (gate 2j, 2j+1, up 2j, 2j+1): exactly what the product's fused epilogue writes from the same values
 * (segments.cuh, geglu1). I even. */
void kern_geglu(const float *gu, int rows, int I, uint16_t *h, kern_stream s);

/* logits (n) = cap * tanh(logits / cap). */
void kern_softcap(float *logits, long n, float cap, kern_stream s);

/* ---- sampling on the device (topk.cu) ------------------------------------------------------------------- */
#define KERN_TOPK_MAX 1024          /* candidates a row can ask for (top_k above this is drawn on the host) */
#define KERN_SELECT_MAX_SUPPRESS 64 /* = SAMP_MAX_SUPPRESS_IDS */

/* What one logits row asks: k > 0 best candidates (1 for greedy), none of the suppressed ids; k = 0: nothing. */
struct kern_select_row {
    int32_t k, n_supp;
    int32_t supp[KERN_SELECT_MAX_SUPPRESS];
};

/* For each of n_rows rows of logits (n_rows, V): the min(k, candidates) best candidates in the sampler's rank
 * order (logit descending, then id ascending; suppressed ids, -inf and NaN excluded) -> out_ids and
 * out_logits (n_rows, KERN_TOPK_MAX), their count -> out_n (n_rows). kmax: the largest k of the rows (1 ..
 * KERN_TOPK_MAX). ws: scratch of ws_keys keys, at least kern_topk_ws_keys(V, 1, kmax); rows run in batches
 * that fit. */
void kern_topk(const float *logits, int V, const struct kern_select_row *rows, int n_rows, int kmax, uint64_t *ws,
               size_t ws_keys, int32_t *out_ids, float *out_logits, int32_t *out_n, kern_stream s);

#define KERN_TOPK_CHUNK 4096 /* keys a CTA sorts */
/* Keys of kern_topk scratch for `rows` rows at k <= kmax: two lists of each row's chunks' kmax best. */
static inline size_t kern_topk_ws_keys(int V, int rows, int kmax)
{
    size_t chunks = ((size_t)V + KERN_TOPK_CHUNK - 1) / KERN_TOPK_CHUNK;
    return chunks > 1 ? 2 * (size_t)rows * chunks * (size_t)kmax : 0;
}

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
