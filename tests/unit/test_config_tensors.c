/* Unit tests for backend/model/config_tensors.c: the tensor list a config implies matches spec §3 (names,
 * shapes, the 677 tensors of the 12B, the 31B tower, the drafter's query-only layers), and
 * cfg_check_tensors accepts a complete checkpoint and names the first problem of a broken one. Checkpoints
 * are small models written with st_write from the spec list itself, then altered one way each. */
#include "test.h"

#include "model/config.h"

enum { MAX_SPECS = 4096 };

static struct cfg_model M;
static struct cfg_tensor_spec specs[MAX_SPECS];
static int n_specs;
static char err[G4_ERR_MAX];
static char dir[64];

static int collect(const struct cfg_tensor_spec *t, void *ctx)
{
    (void)ctx;
    if (n_specs >= MAX_SPECS) return 1;
    specs[n_specs++] = *t;
    return 0;
}

static int load_specs(const struct cfg_model *m, unsigned what)
{
    n_specs = 0;
    return cfg_for_each_tensor(m, what, collect, NULL);
}

static const struct cfg_tensor_spec *spec(const char *name)
{
    for (int i = 0; i < n_specs; i++)
        if (!strcmp(specs[i].name, name)) return &specs[i];
    return NULL;
}

/* The spec named `name` has exactly this shape (n dims). */
static int has_shape(const char *name, int n, int64_t a, int64_t b, int64_t c)
{
    const struct cfg_tensor_spec *s = spec(name);
    int64_t want[3] = {a, b, c};
    if (!s || s->ndim != n) return 0;
    for (int i = 0; i < n; i++)
        if (s->shape[i] != want[i]) return 0;
    return 1;
}

static int count_with(const char *needle)
{
    int k = 0;
    for (int i = 0; i < n_specs; i++) k += strstr(specs[i].name, needle) != NULL;
    return k;
}

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
    return j;
}

static void parse_fixture(const char *name)
{
    cJSON *j = fixture(name);
    if (cfg_parse_json(j, name, &M, err)) { fprintf(stderr, "%s\n", err); exit(2); }
    cJSON_Delete(j);
}

/* Spec §3.1: 40 sliding x 14 + 8 full x 13 + 2 = 666 text tensors; 9 embedder + 2 projections = 677. */
static void test_12b_list(void)
{
    parse_fixture("gemma4-12b-it.json");
    EXPECT(load_specs(&M, CFG_CHECK_TEXT) == 0);
    EXPECT(n_specs == 666);
    EXPECT(load_specs(&M, CFG_CHECK_ALL) == 0);
    EXPECT(n_specs == 677);
    EXPECT(has_shape("model.language_model.embed_tokens.weight", 2, 262144, 3840, 0));
    EXPECT(has_shape("model.language_model.norm.weight", 1, 3840, 0, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.q_proj.weight", 2, 4096, 3840, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.k_proj.weight", 2, 2048, 3840, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.v_proj.weight", 2, 2048, 3840, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.o_proj.weight", 2, 3840, 4096, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.q_norm.weight", 1, 256, 0, 0));
    EXPECT(has_shape("model.language_model.layers.5.self_attn.q_proj.weight", 2, 8192, 3840, 0));
    EXPECT(has_shape("model.language_model.layers.5.self_attn.k_proj.weight", 2, 512, 3840, 0));
    EXPECT(spec("model.language_model.layers.5.self_attn.v_proj.weight") == NULL);
    EXPECT(has_shape("model.language_model.layers.47.self_attn.o_proj.weight", 2, 3840, 8192, 0));
    EXPECT(has_shape("model.language_model.layers.47.self_attn.k_norm.weight", 1, 512, 0, 0));
    EXPECT(has_shape("model.language_model.layers.47.layer_scalar", 1, 1, 0, 0));
    EXPECT(has_shape("model.language_model.layers.3.mlp.gate_proj.weight", 2, 15360, 3840, 0));
    EXPECT(has_shape("model.language_model.layers.3.mlp.down_proj.weight", 2, 3840, 15360, 0));
    EXPECT(has_shape("model.language_model.layers.3.post_feedforward_layernorm.weight", 1, 3840, 0, 0));
    EXPECT(has_shape("model.vision_embedder.patch_ln1.bias", 1, 6912, 0, 0));
    EXPECT(has_shape("model.vision_embedder.patch_dense.weight", 2, 3840, 6912, 0));
    EXPECT(has_shape("model.vision_embedder.pos_embedding", 3, 1120, 2, 3840));
    EXPECT(has_shape("model.vision_embedder.pos_norm.weight", 1, 3840, 0, 0));
    EXPECT(has_shape("model.embed_vision.embedding_projection.weight", 2, 3840, 3840, 0));
    EXPECT(has_shape("model.embed_audio.embedding_projection.weight", 2, 3840, 640, 0));
    EXPECT(spec("model.embed_audio.embedding_projection.weight")->optional);
    EXPECT(spec("lm_head.weight") == NULL && count_with("v_proj") == 40);
    /* spec §3.1: the real header holds 23.92 GB of BF16 */
    double bytes = 0;
    for (int i = 0; i < n_specs; i++) {
        double b = 2;
        for (int d = 0; d < specs[i].ndim; d++) b *= (double)specs[i].shape[d];
        bytes += b;
    }
    EXPECTF(bytes >= 23.915e9 && bytes < 23.925e9, "%.0f bytes", bytes);
}

/* Spec §3.2: 50 x 14 + 10 x 13 + 2 = 832 text tensors; the tower 2 + 2 + 27 x 13 and embed_vision. */
static void test_31b_list(void)
{
    parse_fixture("gemma4-31b-it.json");
    EXPECT(load_specs(&M, CFG_CHECK_TEXT) == 0 && n_specs == 832);
    EXPECT(load_specs(&M, CFG_CHECK_VISION) == 0 && n_specs == 2 + 2 + 27 * 13 + 1);
    EXPECT(has_shape("model.vision_tower.patch_embedder.input_proj.weight", 2, 1152, 768, 0));
    EXPECT(has_shape("model.vision_tower.patch_embedder.position_embedding_table", 3, 2, 10240, 1152));
    EXPECT(has_shape("model.vision_tower.std_scale", 1, 1152, 0, 0));
    EXPECT(has_shape("model.vision_tower.encoder.layers.26.self_attn.q_proj.linear.weight", 2, 1152, 1152, 0));
    EXPECT(has_shape("model.vision_tower.encoder.layers.0.self_attn.k_norm.weight", 1, 72, 0, 0));
    EXPECT(has_shape("model.vision_tower.encoder.layers.0.mlp.down_proj.linear.weight", 2, 1152, 4304, 0));
    EXPECT(has_shape("model.embed_vision.embedding_projection.weight", 2, 5376, 1152, 0));
    EXPECT(load_specs(&M, CFG_CHECK_TEXT) == 0);
    EXPECT(has_shape("model.language_model.layers.59.self_attn.k_proj.weight", 2, 2048, 5376, 0));
    EXPECT(has_shape("model.language_model.layers.58.self_attn.v_proj.weight", 2, 4096, 5376, 0));
    EXPECT(has_shape("model.language_model.layers.0.self_attn.q_proj.weight", 2, 8192, 5376, 0));
}

/* Spec §3.4: query-only layers, projections at the top level, the drafter's own tied embedding. */
static void test_drafter_list(void)
{
    parse_fixture("gemma4-12b-assistant.json");
    EXPECT(load_specs(&M, CFG_CHECK_ALL) == 0);
    EXPECT(n_specs == 4 * 11 + 4);
    EXPECT(has_shape("pre_projection.weight", 2, 1024, 7680, 0));
    EXPECT(has_shape("post_projection.weight", 2, 3840, 1024, 0));
    EXPECT(has_shape("model.embed_tokens.weight", 2, 262144, 1024, 0));
    EXPECT(has_shape("model.norm.weight", 1, 1024, 0, 0));
    EXPECT(!strcmp(spec("model.norm.weight")->alt_name, "model.final_norm.weight"));
    EXPECT(has_shape("model.layers.0.self_attn.q_proj.weight", 2, 4096, 1024, 0));
    EXPECT(has_shape("model.layers.3.self_attn.q_proj.weight", 2, 8192, 1024, 0));
    EXPECT(has_shape("model.layers.3.self_attn.o_proj.weight", 2, 1024, 8192, 0));
    EXPECT(has_shape("model.layers.3.self_attn.q_norm.weight", 1, 512, 0, 0));
    EXPECT(has_shape("model.layers.2.mlp.up_proj.weight", 2, 8192, 1024, 0));
    EXPECT(count_with("k_proj") == 0 && count_with("v_proj") == 0 && count_with("k_norm") == 0);
    EXPECT(spec("model.layers.1.layer_scalar")->optional);
}

/* ---- checkpoints --------------------------------------------------------------------------------- */

/* A unified config with the tiny defaults and a 1024-token vocabulary (token ids moved inside it). */
static void tiny_model(int quantized)
{
    struct cfg_tiny t;
    cfg_tiny_defaults(&t);
    cJSON *j = cfg_tiny_json(&t, err);
    cJSON *tc = cJSON_GetObjectItemCaseSensitive(j, "text_config");
    static const char *ids[] = {"image_token_id", "boi_token_id", "eoi_token_id", "video_token_id",
                                "audio_token_id", "boa_token_id", "eoa_token_index"};
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "vocab_size", cJSON_CreateNumber(1024));
    for (int i = 0; i < 7; i++) cJSON_ReplaceItemInObjectCaseSensitive(j, ids[i], cJSON_CreateNumber(1000 + i));
    if (quantized) cJSON_AddItemToObject(j, "quantization", cJSON_Parse("{\"bits\": 4, \"group_size\": 64}"));
    if (cfg_parse_json(j, "tiny", &M, err)) { fprintf(stderr, "%s\n", err); exit(2); }
    cJSON_Delete(j);
}

/* Writes the current specs (BF16 unless dtype says otherwise) to dir/name; returns the opened set. */
static struct st_set *write_ckpt(const char *name, enum st_dtype dtype)
{
    static struct st_write_tensor w[MAX_SPECS];
    char path[256];
    size_t maxb = 4;
    for (int i = 0; i < n_specs; i++) {
        size_t b = st_dtype_size(specs[i].is_int ? ST_I64 : dtype);
        for (int d = 0; d < specs[i].ndim; d++) b *= (size_t)specs[i].shape[d];
        if (b > maxb) maxb = b;
    }
    void *zero = calloc(1, maxb);
    for (int i = 0; i < n_specs; i++) {
        w[i].name = specs[i].name;
        w[i].dtype = specs[i].is_int ? ST_I64 : dtype;
        w[i].ndim = specs[i].ndim;
        for (int d = 0; d < specs[i].ndim; d++) w[i].shape[d] = specs[i].shape[d];
        w[i].data = zero;
    }
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    if (st_write(path, w, n_specs, NULL, err)) { fprintf(stderr, "%s\n", err); exit(2); }
    free(zero);
    struct st_set *s = st_open(path, err);
    if (!s) { fprintf(stderr, "%s\n", err); exit(2); }
    return s;
}

static void drop(const char *name)
{
    for (int i = 0; i < n_specs; i++)
        if (!strcmp(specs[i].name, name)) {
            specs[i] = specs[--n_specs];
            return;
        }
    fprintf(stderr, "no spec %s\n", name);
    exit(2);
}

static void add(const char *name, int n, int64_t a, int64_t b)
{
    struct cfg_tensor_spec *s = &specs[n_specs++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ndim = n;
    s->shape[0] = a;
    s->shape[1] = b;
}

/* Checks the current specs written as name; returns cfg_check_tensors' result. */
static int check(const char *name, enum st_dtype dtype, unsigned what, struct cfg_check_report *rep)
{
    struct st_set *s = write_ckpt(name, dtype);
    int rc = cfg_check_tensors(&M, s, what, rep, err);
    st_close(s);
    return rc;
}

static void test_check_complete(void)
{
    struct cfg_check_report rep;
    tiny_model(0);
    load_specs(&M, CFG_CHECK_ALL);
    int n = n_specs;
    struct st_set *s = write_ckpt("complete", ST_BF16);
    EXPECTF(cfg_check_tensors(&M, s, CFG_CHECK_ALL, &rep, err) == 0, "%s", err);
    EXPECT(rep.n_expected == n && rep.n_found == n && rep.n_optional_missing == 0 && rep.n_unused == 0);
    EXPECT(rep.bytes_used == st_total_bytes(s));
    st_close(s);
    /* F32 and F16 are as good as BF16 */
    EXPECTF(check("f32", ST_F32, CFG_CHECK_ALL, &rep) == 0, "%s", err);
    EXPECTF(check("f16", ST_F16, CFG_CHECK_ALL, NULL) == 0, "%s", err);
    /* the audio embedder is optional; lm_head beside tied embeddings is unused, not an error */
    drop("model.embed_audio.embedding_projection.weight");
    add("lm_head.weight", 2, 1024, 64);
    EXPECTF(check("noaudio", ST_BF16, CFG_CHECK_ALL, &rep) == 0, "%s", err);
    EXPECT(rep.n_optional_missing == 1 && rep.n_unused == 1);
    /* text only: the vision tensors are not needed */
    load_specs(&M, CFG_CHECK_TEXT);
    EXPECTF(check("textonly", ST_BF16, CFG_CHECK_TEXT, &rep) == 0, "%s", err);
    EXPECT(check("textonly2", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "tensor model.vision_embedder.patch_ln1.weight is missing");
}

static void test_check_broken(void)
{
    tiny_model(0);
    load_specs(&M, CFG_CHECK_ALL);
    drop("model.language_model.layers.0.self_attn.k_norm.weight");
    EXPECT(check("nokn", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "nokn.safetensors: tensor model.language_model.layers.0.self_attn.k_norm.weight is missing");
    EXPECT_STR_HAS(err, "layer 0 sliding_attention");

    load_specs(&M, CFG_CHECK_ALL);
    for (int i = 0; i < n_specs; i++)
        if (!strcmp(specs[i].name, "model.language_model.layers.1.self_attn.q_proj.weight")) specs[i].shape[0] = 64;
    EXPECT(check("qshape", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "qshape.safetensors: tensor model.language_model.layers.1.self_attn.q_proj.weight");
    EXPECT_STR_HAS(err, "expected BF16|F16|F32 [128, 64], found BF16 [64, 64]"); /* 4 heads x 32 on a full layer */

    load_specs(&M, CFG_CHECK_ALL);
    add("model.language_model.layers.1.self_attn.v_proj.weight", 2, 32, 64);
    EXPECT(check("vproj", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "tensor model.language_model.layers.1.self_attn.v_proj.weight is not part of the model");

    load_specs(&M, CFG_CHECK_ALL);
    add("model.language_model.layers.4.input_layernorm.weight", 1, 64, 0);
    EXPECT(check("layer4", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "layers.4.input_layernorm.weight is not part of the model");
    EXPECT_STR_HAS(err, "num_hidden_layers");

    load_specs(&M, CFG_CHECK_ALL);
    EXPECT(check("u32", ST_U32, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "model.language_model.embed_tokens.weight: expected BF16|F16|F32 [1024, 64], found U32");

    tiny_model(1);
    load_specs(&M, CFG_CHECK_ALL);
    EXPECT(check("quant", ST_BF16, CFG_CHECK_ALL, NULL) == -1);
    EXPECT_STR_HAS(err, "quantized checkpoints (mlx, 4 bits, group size 64) are not supported yet");
}

static void test_check_drafter(void)
{
    struct cfg_check_report rep;
    cJSON *j = fixture("gemma4-12b-assistant.json");
    cJSON *tc = cJSON_GetObjectItemCaseSensitive(j, "text_config");
    cJSON_ReplaceItemInObjectCaseSensitive(j, "backbone_hidden_size", cJSON_CreateNumber(48));
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "hidden_size", cJSON_CreateNumber(32));
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "intermediate_size", cJSON_CreateNumber(64));
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "head_dim", cJSON_CreateNumber(8));
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "global_head_dim", cJSON_CreateNumber(16));
    cJSON_ReplaceItemInObjectCaseSensitive(tc, "vocab_size", cJSON_CreateNumber(1024));
    EXPECTF(cfg_parse_json(j, "assistant", &M, err) == 0, "%s", err);
    cJSON_Delete(j);
    load_specs(&M, CFG_CHECK_ALL);
    EXPECT(has_shape("pre_projection.weight", 2, 32, 96, 0) && has_shape("model.layers.3.self_attn.q_proj.weight", 2, 256, 32, 0));
    /* the converter's name for the final norm, no layer_scalar, and K/V projections the drafter never uses */
    for (int i = 0; i < n_specs; i++)
        if (!strcmp(specs[i].name, "model.norm.weight")) snprintf(specs[i].name, sizeof specs[i].name, "%s", specs[i].alt_name);
    for (int i = 0; i < 4; i++) {
        char n[64];
        snprintf(n, sizeof n, "model.layers.%d.layer_scalar", i);
        drop(n);
    }
    add("model.layers.0.self_attn.k_proj.weight", 2, 64, 32);
    EXPECTF(check("drafter", ST_BF16, CFG_CHECK_ALL, &rep) == 0, "%s", err);
    EXPECT(!strcmp(rep.drafter_norm, "model.final_norm.weight") && rep.n_optional_missing == 4 && rep.n_unused == 1);
    drop("post_projection.weight");
    EXPECT(check("drafter2", ST_BF16, CFG_CHECK_ALL, &rep) == -1);
    EXPECT_STR_HAS(err, "tensor post_projection.weight is missing");
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    RUN_TEST(test_12b_list);
    RUN_TEST(test_31b_list);
    RUN_TEST(test_drafter_list);
    RUN_TEST(test_check_complete);
    RUN_TEST(test_check_broken);
    RUN_TEST(test_check_drafter);
    return test_report();
}
