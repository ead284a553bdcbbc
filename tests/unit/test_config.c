/* Unit tests for backend/model/config.c, config_write.c and gen_config.c: the real-shaped 12B and 31B
 * configs (tests/fixtures/configs/, hand-written after the published files and the converters) give the
 * per-layer numbers of spec §1-§3; both head-config forms agree; drafters parse; every unsupported feature
 * is refused by name; the tiny writer's output loads back; generation_config.json defaults and overrides.
 * Run from the repository root (tests/run.sh does), or set G4_SRC to it. */
#include "test.h"

#include <sys/stat.h>

#include "model/config.h"

static struct cfg_model M, M2; /* large: kept off the stack */
static char err[G4_ERR_MAX];

static cJSON *fixture(const char *name)
{
    char p[512];
    size_t n;
    const char *src = getenv("G4_SRC");
    snprintf(p, sizeof p, "%s/tests/fixtures/configs/%s", src ? src : ".", name);
    char *text = util_read_file(p, 1 << 20, &n, err);
    if (!text) { fprintf(stderr, "%s\n", err); exit(2); }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) { fprintf(stderr, "%s: bad JSON\n", p); exit(2); }
    return j;
}

static int parse(const cJSON *root, struct cfg_model *m)
{
    err[0] = 0;
    return cfg_parse_json(root, "config.json", m, err);
}

static cJSON *tcfg(cJSON *root) { return cJSON_GetObjectItemCaseSensitive(root, "text_config"); }

static void set(cJSON *o, const char *key, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddItemToObject(o, key, v);
}

/* Parses root expecting a refusal whose message has both needles; deletes root. */
static void expect_refused(cJSON *root, const char *n1, const char *n2)
{
    EXPECTF(parse(root, &M) == -1, "should be refused (%s)", n1);
    if (getenv("G4_TEST_VERBOSE")) fprintf(stderr, "    err: %s\n", err);
    EXPECT_STR_HAS(err, "config.json");
    if (n1) EXPECT_STR_HAS(err, n1);
    if (n2) EXPECT_STR_HAS(err, n2);
    cJSON_Delete(root);
}

static void test_12b(void)
{
    cJSON *j = fixture("gemma4-12b-it.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    const struct cfg_text *t = &M.text;
    EXPECT(M.arch == CFG_ARCH_GEMMA4_UNIFIED && !M.is_drafter);
    EXPECT(!strcmp(M.text_prefix, "model.language_model."));
    EXPECT(!strcmp(M.architecture, "Gemma4UnifiedForConditionalGeneration") && !strcmp(M.dtype, "bfloat16"));
    EXPECT(t->hidden == 3840 && t->intermediate == 15360 && t->n_layers == 48 && t->vocab == 262144);
    EXPECT(t->n_full == 8 && t->n_sliding == 40 && !t->last_layer_forced && !t->per_layer_form);
    EXPECT(t->has_softcap && t->final_softcap == 30.0 && t->rms_eps == 1e-6 && t->tie_embeddings);
    EXPECT(t->bidir_vision && t->max_pos == 262144 && t->bos_id == 2 && t->pad_id == 0);
    EXPECT(t->global_head_dim == 512 && t->n_global_kv_heads == 1 && t->k_eq_v);
    for (int i = 0; i < 48; i++) {
        const struct cfg_layer *l = &t->layer[i];
        int full = (i + 1) % 6 == 0; /* spec §1.1: full at 5, 11, ..., 47 */
        EXPECTF(l->is_full == full, "layer %d", i);
        EXPECT(l->n_heads == 16 && l->intermediate == 15360 && !l->kv_shared);
        if (full) {
            EXPECTF(l->n_kv_heads == 1 && l->head_dim == 512 && l->q_dim == 8192 && l->kv_dim == 512 && l->k_eq_v,
                    "layer %d", i);
            EXPECT(l->window == 0 && l->rope_type == CFG_ROPE_PROPORTIONAL && l->rope_theta == 1e6);
            EXPECT(l->rope_dims == 128 && l->rope_pairs == 64 && l->rope_denom == 512); /* 0.25 x 512 */
        } else {
            EXPECTF(l->n_kv_heads == 8 && l->head_dim == 256 && l->q_dim == 4096 && l->kv_dim == 2048 && !l->k_eq_v,
                    "layer %d", i);
            EXPECT(l->window == 1024 && l->rope_type == CFG_ROPE_DEFAULT && l->rope_theta == 1e4);
            EXPECT(l->rope_dims == 256 && l->rope_pairs == 128 && l->rope_denom == 256);
        }
    }
    EXPECT(t->last_sliding == 46 && t->last_full == 47); /* what the drafter reads (spec §6.2) */
    const struct cfg_vision_embedder *v = &M.vision.emb;
    EXPECT(M.vision.kind == CFG_VISION_EMBEDDER);
    EXPECT(v->patch_size == 16 && v->pooling_kernel == 3 && v->model_patch == 48 && v->patch_dim == 6912);
    EXPECT(v->mm_embed_dim == 3840 && v->mm_posemb_size == 1120 && v->output_proj_dims == 3840);
    EXPECT(v->num_soft_tokens == 280 && v->rms_eps == 1e-6);
    EXPECT(M.has_audio && M.audio_embed_dim == 640);
    EXPECT(M.image_token_id == 258880 && M.boi_token_id == 255999 && M.eoi_token_id == 258882);
    EXPECT(M.video_token_id == 258884 && M.audio_token_id == 258881 && M.boa_token_id == 256000 &&
           M.eoa_token_id == 258883);
    EXPECT(M.n_eos == 2 && M.eos_ids[0] == 1 && M.eos_ids[1] == 106);
    EXPECT(t->n_eos == 1 && t->eos_ids[0] == 1);
    EXPECT(!M.quant_method[0]);
    /* a null top-level eos_token_id falls back to text_config's */
    j = fixture("gemma4-12b-it.json");
    set(j, "eos_token_id", cJSON_CreateNull());
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.n_eos == 1 && M.eos_ids[0] == 1);
    cJSON_Delete(j);
}

static void test_31b(void)
{
    cJSON *j = fixture("gemma4-31b-it.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    const struct cfg_text *t = &M.text;
    EXPECT(M.arch == CFG_ARCH_GEMMA4 && !strcmp(t->model_type, "gemma4_text"));
    EXPECT(t->hidden == 5376 && t->intermediate == 21504 && t->n_layers == 60 && t->n_full == 10);
    for (int i = 0; i < 60; i++) {
        const struct cfg_layer *l = &t->layer[i];
        int full = (i + 1) % 6 == 0;
        EXPECTF(l->is_full == full && l->n_heads == 32, "layer %d", i);
        if (full)
            EXPECTF(l->n_kv_heads == 4 && l->head_dim == 512 && l->q_dim == 16384 && l->kv_dim == 2048 && l->k_eq_v &&
                        l->rope_dims == 128,
                    "layer %d", i);
        else
            EXPECTF(l->n_kv_heads == 16 && l->head_dim == 256 && l->q_dim == 8192 && l->kv_dim == 4096 &&
                        !l->k_eq_v && l->window == 1024 && l->rope_dims == 256,
                    "layer %d", i);
    }
    EXPECT(t->last_sliding == 58 && t->last_full == 59);
    const struct cfg_vision_tower *v = &M.vision.tower;
    EXPECT(M.vision.kind == CFG_VISION_TOWER && !M.has_audio);
    EXPECT(v->hidden == 1152 && v->intermediate == 4304 && v->n_layers == 27 && v->n_heads == 16);
    EXPECT(v->n_kv_heads == 16 && v->head_dim == 72 && v->patch_size == 16 && v->pooling_kernel == 3);
    EXPECT(v->position_embedding_size == 10240 && v->rope_theta == 100.0 && v->standardize);
    EXPECT(v->default_output_length == 280 && M.vision_soft_tokens_per_image == 280);
    EXPECT(M.n_eos == 2 && M.eos_ids[1] == 106);
}

/* The per_layer_config form (transformers >= 5.15) describes the same layers as the older form. */
static void test_per_layer_form(void)
{
    cJSON *a = fixture("gemma4-31b-it.json"), *b = fixture("gemma4-31b-per-layer.json");
    EXPECTF(parse(a, &M) == 0, "%s", err);
    EXPECTF(parse(b, &M2) == 0, "%s", err);
    EXPECT(!M.text.per_layer_form && M2.text.per_layer_form);
    EXPECT(!memcmp(M.text.layer, M2.text.layer, sizeof M.text.layer[0] * 60));
    EXPECT(M2.text.global_head_dim == 512 && M2.text.n_global_kv_heads == 4);
    /* overrides may name any layer, and their keys are checked */
    cJSON *plc = cJSON_GetObjectItemCaseSensitive(tcfg(b), "per_layer_config");
    cJSON_AddItemToObject(plc, "0", cJSON_CreateObject());
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(plc, "0"), "intermediate_size", 1000);
    EXPECTF(parse(b, &M2) == 0, "%s", err);
    EXPECT(M2.text.layer[0].intermediate == 1000 && M2.text.layer[1].intermediate == 21504);
    cJSON_AddItemToObject(plc, "60", cJSON_CreateObject());
    expect_refused(b, "per_layer_config key \"60\" is not a layer index in [0, 60)", NULL);
    b = fixture("gemma4-31b-per-layer.json");
    plc = cJSON_GetObjectItemCaseSensitive(tcfg(b), "per_layer_config");
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(plc, "05"), "rope_theta", 5);
    expect_refused(b, "per_layer_config[\"05\"].rope_theta", "not supported");
    b = fixture("gemma4-31b-per-layer.json");
    plc = cJSON_GetObjectItemCaseSensitive(tcfg(b), "per_layer_config");
    cJSON_AddItemToObject(plc, "5", cJSON_CreateObject()); /* "05" and "5" are the same layer */
    expect_refused(b, "names layer 5 twice", NULL);
    cJSON_Delete(a);
}

static void test_rope_inv_freq(void)
{
    float f[256];
    cJSON *j = fixture("gemma4-12b-it.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    cfg_rope_inv_freq(&M.text.layer[5], f); /* full: 64 of 256 frequencies, denominator 512 */
    EXPECT(f[0] == 1.0f);
    EXPECTF(fabs(f[63] - pow(1e6, -126.0 / 512)) < 1e-7, "%.9g", f[63]);
    EXPECT(fabs(f[63] - 0.03338) < 5e-6); /* spec §2.5 */
    EXPECT(f[64] == 0.0f && f[255] == 0.0f);
    cfg_rope_inv_freq(&M.text.layer[0], f); /* sliding: 128 frequencies, denominator 256 */
    EXPECTF(fabs(f[127] / pow(1e4, -254.0 / 256) - 1) < 1e-6, "%.9g", f[127]);
    EXPECTF(fabs(f[40] / pow(1e4, -80.0 / 256) - 1) < 1e-6, "%.9g", f[40]);
}

static void test_assistants(void)
{
    cJSON *j = fixture("gemma4-12b-assistant.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.arch == CFG_ARCH_GEMMA4_UNIFIED_ASSISTANT && M.is_drafter && !strcmp(M.text_prefix, "model."));
    EXPECT(M.drafter.backbone_hidden == 3840 && !M.drafter.use_ordered_embeddings && M.drafter.num_centroids == 2048);
    EXPECT(M.text.hidden == 1024 && M.text.intermediate == 8192 && M.text.n_layers == 4 && M.text.n_kv_shared == 4);
    EXPECT(!M.text.has_softcap && M.vision.kind == CFG_VISION_NONE);
    for (int i = 0; i < 4; i++) EXPECT(M.text.layer[i].kv_shared && M.text.layer[i].n_heads == 16);
    EXPECT(!M.text.layer[2].is_full && M.text.layer[2].q_dim == 4096 && M.text.layer[2].head_dim == 256);
    EXPECT(M.text.layer[3].is_full && M.text.layer[3].q_dim == 8192 && M.text.layer[3].head_dim == 512);
    EXPECT(M.text.layer[3].rope_dims == 128 && M.text.layer[3].n_kv_heads == 1);
    EXPECT(M.text.last_full == -1 && M.text.last_sliding == -1); /* a drafter stores no KV of its own */
    /* every drafter layer must be shared */
    set(tcfg(j), "num_kv_shared_layers", cJSON_CreateNumber(2));
    expect_refused(j, "must be KV-shared", "num_kv_shared_layers is 2");

    j = fixture("gemma4-31b-assistant.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.arch == CFG_ARCH_GEMMA4_ASSISTANT && M.drafter.backbone_hidden == 5376);
    EXPECT(M.text.n_kv_shared == 4); /* 0 in the file: the assistant config sets it to num_hidden_layers */
    EXPECT(M.text.layer[3].n_kv_heads == 4 && M.text.layer[0].n_kv_heads == 16);
    /* transformers refuses a gemma4_assistant whose vocab_size_per_layer_input is not 0 (default 262144) */
    cJSON_DeleteItemFromObjectCaseSensitive(tcfg(j), "vocab_size_per_layer_input");
    expect_refused(j, "vocab_size_per_layer_input must be 0", "262144");
}

static void test_unsupported_files(void)
{
    expect_refused(fixture("gemma4-26b-a4b-moe.json"), "Mixture-of-Experts", "num_experts=128");
    expect_refused(fixture("gemma4-e2b-ple.json"), "per-layer embeddings (PLE", "hidden_size_per_layer_input=256");
    expect_refused(fixture("gemma4-audio-tower.json"), "audio tower", "not supported");
}

static void test_unsupported_fields(void)
{
    cJSON *j;
    j = fixture("gemma4-12b-it.json");
    set(j, "model_type", cJSON_CreateString("gemma3"));
    expect_refused(j, "model_type \"gemma3\" is not supported", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "hidden_activation", cJSON_CreateString("silu"));
    expect_refused(j, "text_config.hidden_activation \"silu\"", "gelu_pytorch_tanh");
    j = fixture("gemma4-12b-it.json");
    set(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tcfg(j), "rope_parameters"),
                                         "full_attention"),
        "rope_type", cJSON_CreateString("yarn"));
    expect_refused(j, "rope_parameters.full_attention.rope_type \"yarn\"", NULL);
    j = fixture("gemma4-12b-it.json");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(tcfg(j), "rope_parameters"),
                                            "full_attention");
    expect_refused(j, "no full_attention entry", "layer 5");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "num_kv_shared_layers", cJSON_CreateNumber(20));
    expect_refused(j, "KV-shared layers", "num_kv_shared_layers=20");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "use_double_wide_mlp", cJSON_CreateTrue());
    expect_refused(j, "double-wide MLP", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "enable_moe_block", cJSON_CreateTrue());
    expect_refused(j, "Mixture-of-Experts", "enable_moe_block=true");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "use_bidirectional_attention", cJSON_CreateString("all"));
    expect_refused(j, "use_bidirectional_attention \"all\"", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "attention_bias", cJSON_CreateTrue());
    expect_refused(j, "attention_bias", NULL);
    j = fixture("gemma4-12b-it.json");
    cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(tcfg(j), "layer_types"), 0);
    expect_refused(j, "layer_types has 47 entries but num_hidden_layers is 48", NULL);
    j = fixture("gemma4-12b-it.json");
    cJSON_ReplaceItemInArray(cJSON_GetObjectItemCaseSensitive(tcfg(j), "layer_types"), 3,
                             cJSON_CreateString("chunked_attention"));
    expect_refused(j, "layer_types[3]", "chunked_attention");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "num_key_value_heads", cJSON_CreateNumber(5));
    expect_refused(j, "16 query heads are not a multiple of 5", "layer 0");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "num_global_key_value_heads", cJSON_CreateNumber(3));
    expect_refused(j, "layer 5", "not a multiple of 3");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "head_dim", cJSON_CreateNumber(255));
    expect_refused(j, "head dim 255 must be even", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "hidden_size", cJSON_CreateString("big"));
    expect_refused(j, "text_config.hidden_size must be an integer", "\"big\"");
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "num_hidden_layers", cJSON_CreateNumber(1000));
    expect_refused(j, "num_hidden_layers must be an integer in [1, 256]", NULL);
    j = fixture("gemma4-12b-it.json");
    set(j, "eos_token_id", cJSON_CreateNumber(300000));
    expect_refused(j, "eos_token_id must be a token id", "262144");
    j = fixture("gemma4-12b-it.json");
    set(j, "image_token_id", cJSON_CreateNumber(-5));
    expect_refused(j, "image_token_id", NULL);
    j = fixture("gemma4-12b-it.json");
    set(cJSON_GetObjectItemCaseSensitive(j, "vision_config"), "output_proj_dims", cJSON_CreateNumber(1000));
    expect_refused(j, "output_proj_dims 1000 must equal mm_embed_dim 3840", NULL);
    j = fixture("gemma4-12b-it.json");
    set(cJSON_GetObjectItemCaseSensitive(j, "audio_config"), "model_type", cJSON_CreateString("gemma4_audio"));
    expect_refused(j, "audio_config.model_type \"gemma4_audio\"", NULL);
    j = fixture("gemma4-12b-it.json");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "text_config");
    expect_refused(j, "text_config is missing", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "model_type", cJSON_CreateString("gemma4_text"));
    expect_refused(j, "text_config.model_type is \"gemma4_text\", expected \"gemma4_unified_text\"", NULL);
    j = fixture("gemma4-12b-it.json");
    set(tcfg(j), "tie_word_embeddings", cJSON_CreateFalse());
    expect_refused(j, "tie_word_embeddings is true but text_config.tie_word_embeddings is false", NULL);
    j = fixture("gemma4-31b-it.json");
    set(cJSON_GetObjectItemCaseSensitive(j, "vision_config"), "use_clipped_linears", cJSON_CreateTrue());
    expect_refused(j, "use_clipped_linears", "E2B/E4B");
}

/* transformers' defaults when fields are absent: the layer rule, the forced last layer, per-type defaults. */
static void test_defaults(void)
{
    cJSON *j = cJSON_Parse("{\"model_type\": \"gemma4_unified_text\", \"num_hidden_layers\": 10, \"hidden_size\": 64,"
                           " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16}");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.arch == CFG_ARCH_GEMMA4_UNIFIED_TEXT && !strcmp(M.text_prefix, "model."));
    for (int i = 0; i < 10; i++) EXPECTF(M.text.layer[i].is_full == (i == 5 || i == 9), "layer %d", i);
    EXPECT(M.text.last_layer_forced); /* (i+1)%6 gives sliding for layer 9; HF forces it full */
    EXPECT(M.text.sliding_window == 1024 && M.text.bidir_vision && M.text.vocab == 262144);
    EXPECT(M.text.layer[5].head_dim == 512 && M.text.layer[5].n_kv_heads == 2); /* global_head_dim 512; no K=V */
    EXPECT(M.text.layer[5].rope_type == CFG_ROPE_PROPORTIONAL && M.text.layer[5].rope_dims == 128);
    EXPECT(!M.text.has_softcap && M.n_eos == 1 && M.eos_ids[0] == 1 && M.text.bos_id == 2);
    /* num_global_key_value_heads only applies with attention_k_eq_v */
    set(j, "num_global_key_value_heads", cJSON_CreateNumber(1));
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.text.layer[5].n_kv_heads == 2 && !M.text.layer[5].k_eq_v);
    set(j, "attention_k_eq_v", cJSON_CreateTrue());
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.text.layer[5].n_kv_heads == 1 && M.text.layer[5].k_eq_v && !M.text.layer[4].k_eq_v);
    /* a flat rope_parameters dict applies to both layer types */
    set(j, "rope_parameters", cJSON_Parse("{\"rope_type\": \"default\", \"rope_theta\": 500.0}"));
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.text.layer[5].rope_type == CFG_ROPE_DEFAULT && M.text.layer[5].rope_dims == 512 &&
           M.text.layer[0].rope_theta == 500.0);
    cJSON_Delete(j);

    /* gemma4_text defaults: PLE 256 when absent (refused), sliding window 512, no bidirectional attention */
    j = cJSON_Parse("{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"hidden_size\": 64}");
    expect_refused(j, "hidden_size_per_layer_input=256", NULL);
    j = cJSON_Parse("{\"model_type\": \"gemma4_text\", \"num_hidden_layers\": 6, \"hidden_size\": 64,"
                    " \"hidden_size_per_layer_input\": 0, \"final_logit_softcapping\": null,"
                    " \"pad_token_id\": null, \"eos_token_id\": [1, 106]}");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    EXPECT(M.arch == CFG_ARCH_GEMMA4_TEXT && M.text.sliding_window == 512 && !M.text.bidir_vision);
    EXPECT(M.text.pad_id == -1 && M.n_eos == 2 && !M.text.has_softcap);
    cJSON_Delete(j);
}

static void test_to_json(void)
{
    cJSON *j = fixture("gemma4-12b-it.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    cJSON *s = cfg_to_json(&M);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(s, "text");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(text, "full");
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(text, "sliding");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(full, "layers");
    EXPECT(cJSON_GetArraySize(layers) == 8 && cJSON_GetArrayItem(layers, 7)->valueint == 47);
    EXPECT(cJSON_GetObjectItemCaseSensitive(full, "kv_heads")->valueint == 1);
    EXPECT(cJSON_GetObjectItemCaseSensitive(full, "head_dim")->valueint == 512);
    EXPECT(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(full, "rope"), "rotary_dims")->valueint ==
           128);
    EXPECT(cJSON_GetObjectItemCaseSensitive(sl, "count")->valueint == 40);
    EXPECT(cJSON_GetObjectItemCaseSensitive(sl, "window")->valueint == 1024);
    EXPECT(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "tokens"), "image")->valueint ==
           258880);
    EXPECT(!strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "vision"), "kind")->valuestring,
                   "embedder"));
    cJSON_Delete(s);
}

/* The tiny demo config loads back with the numbers it was given, in both head-config forms. */
static void test_tiny_round_trip(void)
{
    struct cfg_tiny t;
    char path[256];
    size_t n;
    cfg_tiny_defaults(&t);
    cJSON *j = cfg_tiny_json(&t, err);
    EXPECTF(j != NULL, "%s", err);
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    EXPECT(M.arch == CFG_ARCH_GEMMA4_UNIFIED && M.text.hidden == 64 && M.text.n_layers == 4);
    for (int i = 0; i < 4; i++) {
        const struct cfg_layer *l = &M.text.layer[i];
        EXPECTF(l->is_full == (i % 2 == 1), "layer %d", i); /* full_every 2 */
        EXPECT(l->head_dim == (l->is_full ? 32 : 16) && l->n_kv_heads == (l->is_full ? 1 : 2));
        EXPECT(l->k_eq_v == l->is_full && l->rope_dims == (l->is_full ? 8 : 16)) /* 0.25 x 32; all of 16 */;
    }
    EXPECT(M.vision.emb.mm_embed_dim == 64 && M.vision.emb.patch_dim == 6912 && M.has_audio);
    EXPECT(M.n_eos == 2 && M.text.sliding_window == 32 && M.text.final_softcap == 30.0);

    t.per_layer_form = 1;
    j = cfg_tiny_json(&t, err);
    EXPECTF(parse(j, &M2) == 0, "%s", err);
    EXPECT(M2.text.per_layer_form && !memcmp(M.text.layer, M2.text.layer, 4 * sizeof M.text.layer[0]));
    cJSON_Delete(j);

    snprintf(path, sizeof path, "%s/config.json", test_tmpdir());
    t.per_layer_form = 0;
    t.n_layers = 12;
    t.full_every = 6;
    EXPECT(cfg_write_tiny(path, &t, err) == 0);
    EXPECTF(cfg_load(path, &M, err) == 0, "%s", err);
    EXPECT(M.text.n_layers == 12 && M.text.layer[5].is_full && M.text.layer[11].is_full && !M.text.layer[10].is_full);
    char *text = util_read_file(path, 1 << 20, &n, err);
    /* the layout transformers writes: sorted keys, 2-space indent, Python floats */
    EXPECT_STR_HAS(text, "{\n  \"architectures\": [\n    \"Gemma4UnifiedForConditionalGeneration\"\n  ],\n  \"audio_config\"");
    EXPECT_STR_HAS(text, "\"final_logit_softcapping\": 30.0,");
    EXPECT_STR_HAS(text, "\"rms_norm_eps\": 1e-06,");
    EXPECT_STR_HAS(text, "\"rope_theta\": 1000000.0,");
    EXPECT_STR_HAS(text, "\"partial_rotary_factor\": 0.25,");
    EXPECT_STR_HAS(text, "\"global_head_dim\": 32,");
    EXPECT(text && text[n - 1] == '\n' && strstr(text, "\"text_config\"") < strstr(text, "\"vision_config\""));
    free(text);

    t.n_heads = 3;
    EXPECT(cfg_tiny_json(&t, err) == NULL);
    EXPECT_STR_HAS(err, "not a multiple");
}

static void test_generation_config(void)
{
    struct cfg_gen g;
    cJSON *j = fixture("gemma4-12b-it.json");
    EXPECTF(parse(j, &M) == 0, "%s", err);
    cJSON_Delete(j);
    cfg_gen_defaults(&M, &g); /* no file: greedy, eos from config.json */
    EXPECT(!g.has_file && !g.do_sample && g.n_stop == 2 && g.stop_ids[1] == 106 && g.top_k == 50);
    EXPECT(g.top_p == 1.0 && g.temperature == 1.0 && g.min_p == 0 && g.n_suppress == 0 && g.pad_id == 0);

    j = fixture("gemma4-12b-it.generation_config.json");
    EXPECTF(cfg_gen_parse_json(j, "generation_config.json", &M, &g, err) == 0, "%s", err);
    EXPECT(g.has_file && g.do_sample && g.temperature == 1.0 && g.top_k == 64 && g.top_p == 0.95);
    EXPECT(g.n_stop == 3 && g.stop_ids[0] == 1 && g.stop_ids[1] == 106 && g.stop_ids[2] == 50);
    EXPECT(g.n_suppress == 2 && g.suppress_ids[0] == 258883 && g.suppress_ids[1] == 258882);
    EXPECT(g.bos_id == 2 && g.pad_id == 0 && g.n_begin_suppress == 0);
    set(j, "eos_token_id", cJSON_CreateNumber(106));
    set(j, "min_p", cJSON_CreateNumber(0.05));
    set(j, "begin_suppress_tokens", cJSON_Parse("[1]"));
    EXPECTF(cfg_gen_parse_json(j, "generation_config.json", &M, &g, err) == 0, "%s", err);
    EXPECT(g.n_stop == 1 && g.stop_ids[0] == 106 && g.min_p == 0.05 && g.n_begin_suppress == 1);
    set(j, "top_p", cJSON_CreateNumber(2));
    EXPECT(cfg_gen_parse_json(j, "generation_config.json", &M, &g, err) == -1);
    EXPECT_STR_HAS(err, "generation_config.json: top_p must be a number in [1e-09, 1]");
    set(j, "top_p", cJSON_CreateNumber(0.9));
    set(j, "suppress_tokens", cJSON_Parse("[999999]"));
    EXPECT(cfg_gen_parse_json(j, "generation_config.json", &M, &g, err) == -1);
    EXPECT_STR_HAS(err, "suppress_tokens");
    set(j, "suppress_tokens", cJSON_CreateNull());
    set(j, "top_k", cJSON_CreateNumber(2.5));
    EXPECT(cfg_gen_parse_json(j, "generation_config.json", &M, &g, err) == -1);
    EXPECT_STR_HAS(err, "top_k must be an integer");
    cJSON_Delete(j);

    /* cfg_gen_load: a directory without the file gives the defaults; a broken file is an error */
    const char *d = test_tmpdir();
    char p[256];
    EXPECT(cfg_gen_load(d, &M, &g, err) == 0 && !g.has_file && g.n_stop == 2);
    snprintf(p, sizeof p, "%s/generation_config.json", d);
    util_write_file(p, "{\"top_k\": ", 10, err);
    EXPECT(cfg_gen_load(d, &M, &g, err) == -1);
    EXPECT_STR_HAS(err, "generation_config.json: not valid JSON");
    util_write_file(p, "{\"top_k\": 7}", 12, err);
    EXPECT(cfg_gen_load(d, &M, &g, err) == 0 && g.has_file && g.top_k == 7 && g.n_stop == 2);
}

static void test_load_errors(void)
{
    const char *d = test_tmpdir();
    char p[256];
    EXPECT(cfg_load(d, &M, err) == -1);
    EXPECT_STR_HAS(err, "config.json");
    snprintf(p, sizeof p, "%s/config.json", d);
    util_write_file(p, "{\"model_type\": ", 15, err);
    EXPECT(cfg_load(d, &M, err) == -1);
    EXPECT_STR_HAS(err, "not valid JSON");
    util_write_file(p, "[]", 2, err);
    EXPECT(cfg_load(p, &M, err) == -1);
    EXPECT_STR_HAS(err, "not a JSON object");
    util_write_file(p, "{}", 2, err);
    EXPECT(cfg_load(p, &M, err) == -1);
    EXPECT_STR_HAS(err, "model_type is missing");
}

int main(void)
{
    RUN_TEST(test_12b);
    RUN_TEST(test_31b);
    RUN_TEST(test_per_layer_form);
    RUN_TEST(test_rope_inv_freq);
    RUN_TEST(test_assistants);
    RUN_TEST(test_unsupported_files);
    RUN_TEST(test_unsupported_fields);
    RUN_TEST(test_defaults);
    RUN_TEST(test_to_json);
    RUN_TEST(test_tiny_round_trip);
    RUN_TEST(test_generation_config);
    RUN_TEST(test_load_errors);
    return test_report();
}
