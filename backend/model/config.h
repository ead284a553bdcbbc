/* config — a Gemma 4 checkpoint's config.json and generation_config.json as plain structs.
 *
 * The engine reads struct cfg_model and never looks at JSON: every per-layer number it needs (full or
 * sliding, heads, head dim, K=V, RoPE frequencies) is derived here once, with transformers' rules and
 * defaults (configuration_gemma4*.py, both the older global_head_dim / num_global_key_value_heads form and
 * the newer per_layer_config form). What g4 does not run is refused by name with a clear message: MoE,
 * per-layer embeddings (PLE), KV sharing outside a drafter, double-wide MLP, the E2B/E4B audio tower,
 * unknown model types, activations or RoPE types, inconsistent numbers.
 *
 * Model types: gemma4_unified (12B: text + encoder-free vision embedder; its audio embedder is ignored),
 * gemma4 (31B dense: text + SigLIP-like vision tower, recorded for later), gemma4_text and
 * gemma4_unified_text alone (text-only checkpoints), and the MTP drafters gemma4_unified_assistant /
 * gemma4_assistant.
 *
 * Dimension letters: H hidden, I MLP width, L layers, Q query heads, K kv heads, D head dim, V vocab,
 * W sliding window, E vision embed dim, P patch values. This room reads files and describes tensors; it
 * does no arithmetic on weights. */
#ifndef G4_CONFIG_H
#define G4_CONFIG_H

#include <stdint.h>

#include <cJSON.h>

#include "model/safetensors.h"
#include "util/util.h"

#define CFG_MAX_LAYERS 256           /* decoder layers */
#define CFG_MAX_IDS 64               /* ids in one eos / suppress list */
#define CFG_MAX_JSON_BYTES (4u << 20) /* config.json, generation_config.json */
#define CFG_NAME_MAX 160             /* bytes in one expected tensor name */

enum cfg_arch {
    CFG_ARCH_GEMMA4_UNIFIED,           /* "gemma4_unified": text + vision embedder (+ ignored audio embedder) */
    CFG_ARCH_GEMMA4,                   /* "gemma4": text + SigLIP-like vision tower */
    CFG_ARCH_GEMMA4_UNIFIED_TEXT,      /* "gemma4_unified_text": text only */
    CFG_ARCH_GEMMA4_TEXT,              /* "gemma4_text": text only */
    CFG_ARCH_GEMMA4_UNIFIED_ASSISTANT, /* "gemma4_unified_assistant": MTP drafter */
    CFG_ARCH_GEMMA4_ASSISTANT,         /* "gemma4_assistant": MTP drafter */
};

enum cfg_rope_type { CFG_ROPE_DEFAULT, CFG_ROPE_PROPORTIONAL };

enum cfg_vision_kind {
    CFG_VISION_NONE,
    CFG_VISION_EMBEDDER, /* gemma4_unified: LN -> Dense -> LN -> +pos -> LN -> RMSNorm -> Linear */
    CFG_VISION_TOWER,    /* gemma4: 27-layer ViT + pooler (recorded; not run yet) */
};

/* One entry of rope_parameters (per layer type). */
struct cfg_rope {
    enum cfg_rope_type type;
    double theta;                 /* rope_theta (base wavelength) */
    double partial_rotary_factor; /* fraction of the head dim that rotates; 1.0 when absent */
    double factor;                /* proportional: inv_freq is divided by it; 1.0 when absent */
};

/* Everything one decoder layer needs, derived once. */
struct cfg_layer {
    int is_full;      /* 1: full_attention (causal over the whole history); 0: sliding_attention */
    int n_heads;      /* Q query heads */
    int n_kv_heads;   /* K key/value heads; Q % K == 0, query head h reads kv head h / (Q/K) */
    int head_dim;     /* D */
    int q_dim;        /* Q*D: rows of q_proj, columns of o_proj */
    int kv_dim;       /* K*D: rows of k_proj (and v_proj) */
    int k_eq_v;       /* 1: no v_proj; V is the raw k_proj output (before k_norm and RoPE) */
    int kv_shared;    /* 1: no k/v projections or k_norm; attends over the target's KV (drafter layers) */
    int window;       /* sliding: W (a query at p sees keys p-W+1..p); full: 0 */
    int intermediate; /* I: gate/up [I, H], down [H, I] */
    enum cfg_rope_type rope_type;
    double rope_theta;  /* base */
    double rope_factor; /* inv_freq divisor (1.0) */
    int rope_pairs;     /* rotating frequency pairs: channels (i, i + D/2) for i < rope_pairs; others pass */
    int rope_dims;      /* 2 * rope_pairs: the rotary dims of spec §2.5 (256 sliding, 128 full at D=512) */
    int rope_denom;     /* inv_freq[i] = rope_theta^(-2i / rope_denom) / rope_factor for i < rope_pairs */
};

/* The text decoder (text_config, or the top level of a text-only config). */
struct cfg_text {
    char model_type[32];     /* "gemma4_unified_text" or "gemma4_text" */
    int hidden;              /* H */
    int intermediate;        /* I (global value; per-layer value in layer[]) */
    int n_layers;            /* L */
    int n_heads;             /* num_attention_heads */
    int n_kv_heads;          /* num_key_value_heads: sliding layers */
    int head_dim;            /* head_dim: sliding layers */
    int n_global_kv_heads;   /* K of the full layers (derived from layer[] in the per_layer_config form) */
    int global_head_dim;     /* D of the full layers (likewise) */
    int k_eq_v;              /* attention_k_eq_v (applies to full layers) */
    int sliding_window;      /* W */
    int vocab;               /* V */
    int max_pos;             /* max_position_embeddings (RoPE bookkeeping only) */
    double rms_eps;          /* every RMSNorm */
    int has_softcap;         /* 0 when final_logit_softcapping is null or absent */
    double final_softcap;    /* logits = c * tanh(logits / c) */
    int tie_embeddings;      /* 1: the LM head is embed_tokens */
    int bidir_vision;        /* use_bidirectional_attention == "vision" */
    int pad_id, bos_id;      /* -1 when null */
    int eos_ids[CFG_MAX_IDS];/* text_config.eos_token_id (int or list) */
    int n_eos;
    int n_kv_shared;         /* num_kv_shared_layers (drafters: L) */
    int per_layer_form;      /* 1: the JSON had per_layer_config; 0: global_head_dim / num_global_... */
    int last_layer_forced;   /* 1: layer_types ended in sliding and the last layer was forced full (as HF) */
    struct cfg_rope rope_sliding, rope_full; /* rope_parameters per layer type */
    int n_full, n_sliding;
    int last_sliding, last_full; /* last layer of each type, -1 if none: the KV a drafter reads */
    struct cfg_layer layer[CFG_MAX_LAYERS]; /* (n_layers) */
};

/* gemma4_unified vision_config: the encoder-free patch embedder. */
struct cfg_vision_embedder {
    int patch_size;       /* 16 px */
    int pooling_kernel;   /* 3: a merged patch is 3x3 patches */
    int model_patch;      /* patch_size * pooling_kernel = 48 px */
    int patch_dim;        /* P = model_patch^2 * 3 = 6912 values per merged patch (HWC) */
    int mm_embed_dim;     /* E: patch_dense out, pos_embedding [mm_posemb_size, 2, E], norms */
    int mm_posemb_size;   /* rows of each positional table */
    int output_proj_dims; /* embed_vision.embedding_projection is [H, output_proj_dims]; equals E */
    double rms_eps;       /* RMSNorm before the projection */
    int num_soft_tokens;  /* default soft-token budget per image (280) */
};

/* gemma4 vision_config: the SigLIP-like tower (recorded for the later vision path). */
struct cfg_vision_tower {
    int hidden, intermediate, n_layers, n_heads, n_kv_heads, head_dim;
    int patch_size, pooling_kernel, position_embedding_size;
    double rope_theta, rms_eps;
    int standardize;           /* std_bias / std_scale applied after the pooler */
    int default_output_length; /* soft tokens per image (280) */
};

struct cfg_vision {
    enum cfg_vision_kind kind;
    struct cfg_vision_embedder emb;   /* kind == CFG_VISION_EMBEDDER */
    struct cfg_vision_tower tower;    /* kind == CFG_VISION_TOWER */
};

/* MTP assistant fields (is_drafter). */
struct cfg_drafter {
    int backbone_hidden;        /* H of the target: pre_projection [H_d, 2*backbone], post [backbone, H_d] */
    int use_ordered_embeddings; /* 1: centroid masked embedder (E2B/E4B assistants) */
    int num_centroids;          /* masked_embedding.centroids [num_centroids, H_d] */
    int centroid_top_k;         /* centroid_intermediate_top_k */
};

struct cfg_model {
    enum cfg_arch arch;
    char model_type[40];         /* top-level model_type */
    char architecture[80];       /* architectures[0], or "" */
    char dtype[16];              /* "bfloat16" etc. (dtype / torch_dtype), or "" */
    char text_prefix[32];        /* tensor prefix of the decoder: "model.language_model." or "model." */
    struct cfg_text text;
    struct cfg_vision vision;
    int has_audio;               /* gemma4_unified audio_config present (embedder ignored by g4) */
    int audio_embed_dim;         /* model.embed_audio.embedding_projection is [H, audio_embed_dim] */
    int is_drafter;
    struct cfg_drafter drafter;
    /* multimodal token ids from the config (-1 when absent/null): never constants */
    int image_token_id, boi_token_id, eoi_token_id, video_token_id, audio_token_id, boa_token_id, eoa_token_id;
    int vision_soft_tokens_per_image; /* gemma4 top level, 0 when absent */
    int eos_ids[CFG_MAX_IDS];    /* top-level eos_token_id when present, else text_config's */
    int n_eos;
    char quant_method[32];       /* "" unquantized; "mlx" ("quantization" key) or quantization_config's */
    int quant_bits, quant_group_size;
};

/* Loads path/config.json (path a directory) or path itself. 0, or -1 with err naming the file and field. */
int cfg_load(const char *path, struct cfg_model *m, char *err);

/* Parses a config.json object; src names it in messages. 0 or -1 with err. */
int cfg_parse_json(const cJSON *root, const char *src, struct cfg_model *m, char *err);

/* A JSON number, or a raw item holding one (cfg_tiny_json writes floats as raw "30.0"). 1 and *out, or 0. */
int cfg_json_number(const cJSON *v, double *out);

/* "gemma4_unified" etc. */
const char *cfg_arch_name(enum cfg_arch a);

/* inv_freq of a layer, D/2 values in float32: theta^(-2i/denom)/factor for i < rope_pairs, 0 after
 * (computed as HF does: the exponent in float32, then 1/pow). */
void cfg_rope_inv_freq(const struct cfg_layer *l, float *inv_freq);

/* A summary for `g4 info` (caller deletes): model type, decoder geometry per layer type, full-layer
 * indices, RoPE, vision, drafter fields, token ids, quantization. */
cJSON *cfg_to_json(const struct cfg_model *m);

/* ---- expected tensors (config_check.c) --------------------------------------------------------------- */

#define CFG_CHECK_TEXT 1u    /* decoder, embeddings, final norm, drafter projections */
#define CFG_CHECK_VISION 2u  /* the 12B embedder / the 31B tower and embed_vision */
#define CFG_CHECK_ALL 3u

/* One tensor the config implies (names exactly as on disk, spec §3). */
struct cfg_tensor_spec {
    char name[CFG_NAME_MAX];
    char alt_name[CFG_NAME_MAX]; /* also accepted instead of name ("" if none) */
    int ndim;
    int64_t shape[4];
    int optional;                /* 1: may be absent (checked when present) */
    int is_int;                  /* 1: an integer tensor (I64/I32), else BF16/F16/F32 */
    int layer;                   /* decoder layer, or -1 */
};

/* Calls fn for every tensor the config implies (what: CFG_CHECK_* bits), in a stable order; stops and
 * returns fn's value when it is non-zero. Returns 0 when all were visited. */
int cfg_for_each_tensor(const struct cfg_model *m, unsigned what,
                        int (*fn)(const struct cfg_tensor_spec *t, void *ctx), void *ctx);

/* Counts from cfg_check_tensors. */
struct cfg_check_report {
    int n_expected;      /* specs visited */
    int n_found;         /* present with the right shape and dtype */
    int n_optional_missing;
    int n_unused;        /* checkpoint tensors no spec asked for (lm_head copies, audio, other towers) */
    uint64_t bytes_used; /* bytes of the found tensors */
    char drafter_norm[CFG_NAME_MAX]; /* the drafter's final norm name found on disk, or "" */
};

/* Checks that every implied tensor is present with the right shape and a BF16/F16/F32 dtype (integer
 * ones: I64/I32), that the decoder has no tensor the config does not describe (e.g. a v_proj on a K=V
 * layer, a layer past L), and that the checkpoint is not quantized. rep may be NULL. 0, or -1 with err
 * naming the first problem (file, tensor, expected, found). */
int cfg_check_tensors(const struct cfg_model *m, const struct st_set *s, unsigned what,
                      struct cfg_check_report *rep, char *err);

/* ---- the tiny demo model's config.json (config_write.c) ---------------------------------------------- */

struct cfg_tiny {
    int hidden, intermediate, n_layers, n_heads, n_kv_heads, head_dim;
    int n_global_kv_heads, global_head_dim;
    int full_every;          /* layer i is full iff (i+1) % full_every == 0 (the last is full anyway); 0: 6 */
    int sliding_window;
    int vocab;               /* 262144 for a real Gemma tokenizer */
    double final_softcap;    /* 0: null */
    /* vision embedder: 0 for the 12B defaults scaled to hidden (16, 3, E = hidden, 1120, 280) */
    int patch_size, pooling_kernel, mm_embed_dim, mm_posemb_size, num_soft_tokens;
    int audio_embed_dim;     /* 0: no audio_config; else audio_config with this dim */
    int per_layer_form;      /* 1: write per_layer_config (transformers >= 5.15); 0: the published form */
    int instruct;            /* 1: top-level eos_token_id [1, 106] as in the -it checkpoints */
};

/* The 12B-shaped defaults for the tiny model (hidden 64, 4 layers...), for callers to adjust. */
void cfg_tiny_defaults(struct cfg_tiny *t);

/* A gemma4_unified config.json (real on-disk layout, keys sorted as transformers writes them) with the
 * dimensions of t. NULL with err when t is inconsistent. Caller deletes. */
cJSON *cfg_tiny_json(const struct cfg_tiny *t, char *err);

/* The matching generation_config.json object: eos [1, 106, 50], suppress [eoa, eoi], sampling defaults. */
cJSON *cfg_tiny_generation_json(void);

/* Writes cfg_tiny_json to path (as cfg_write_json). 0 or -1 with err. */
int cfg_write_tiny(const char *path, const struct cfg_tiny *t, char *err);

/* Writes o as transformers writes configs: 2-space indent, one member per line, floats as Python prints
 * them (raw items), newline at the end. Keys are written in o's order (cfg_tiny_json sorts them). */
int cfg_write_json(const char *path, const cJSON *o, char *err);

/* ---- generation_config.json (gen_config.c) ----------------------------------------------------------- */

struct cfg_gen {
    int has_file;                 /* 1: read from generation_config.json; 0: defaults from config.json */
    int stop_ids[CFG_MAX_IDS];    /* eos_token_id (int or list) */
    int n_stop;
    int suppress_ids[CFG_MAX_IDS];/* suppress_tokens: never sampled */
    int n_suppress;
    int begin_suppress_ids[CFG_MAX_IDS]; /* begin_suppress_tokens: not sampled as the first new token */
    int n_begin_suppress;
    int do_sample;                /* 0: greedy */
    double temperature;           /* 1.0 */
    int top_k;                    /* 50 (HF default); 0: off */
    double top_p;                 /* 1.0: off */
    double min_p;                 /* 0: off */
    double repetition_penalty;    /* 1.0: off */
    int max_new_tokens;           /* 0 when absent */
    int pad_id, bos_id;           /* -1 when absent */
};

/* HF GenerationConfig defaults with the model's eos / pad / bos (what transformers uses when the file is
 * missing). */
void cfg_gen_defaults(const struct cfg_model *m, struct cfg_gen *g);

/* Parses a generation_config.json object over the defaults. 0 or -1 with err naming src and the field. */
int cfg_gen_parse_json(const cJSON *root, const char *src, const struct cfg_model *m, struct cfg_gen *g,
                       char *err);

/* Reads dir/generation_config.json when it exists, else the defaults. 0 or -1 with err. */
int cfg_gen_load(const char *dir, const struct cfg_model *m, struct cfg_gen *g, char *err);

#endif
