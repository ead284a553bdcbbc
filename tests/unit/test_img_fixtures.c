/* test_img_fixtures — g4's image pipeline against Hugging Face's Gemma4UnifiedImageProcessor, byte for byte.
 *
 * The fixtures are made on the reference machine by tests/reference/make_image_fixtures.py and copied to
 * tests/fixtures/images/ (override with G4_IMG_FIXTURES=DIR): input files, the processor's resized uint8
 * image per case (rebuilt from pixel_values), its positions and the sha256 of its (n, 6912) rows, and the
 * sha256 of the RGB image PIL handed the processor. Per case this checks:
 *   - geometry: resized size, n and every (x, y) position equal the processor's (always required);
 *   - decode: our RGB equals PIL's (sha256); a lossy file decoded by a different libjpeg/libwebp build may
 *     differ, which is reported, and then the resize is also checked on PIL's own decoded image when the
 *     fixture carries it;
 *   - resize: exact-sample percentage and max difference against the processor's resized image, and the
 *     sha256 of the patch rows. Required: bit-exact, or at worst +-1 on under 0.1 % of the values.
 * Known, deliberate divergences (PIL's clipping of 16-bit grayscale to 0..255) are reported, not failed.
 * Prints a table. Without the fixture folder it skips (test_skip: a failure under G4_REQUIRE_ALL=1). */
#include <cJSON.h>
#include <stdint.h>

#include "img.h"
#include "test.h"
#include "util/util.h"

/* ---- SHA-256 (FIPS 180-4), for comparing with the manifest's hashes ------------------------------------ */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, k;
    for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 | p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

static void sha256_hex(const uint8_t *data, size_t len, char out[65])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t i = 0;
    for (; i + 64 <= len; i += 64) sha256_block(h, data + i);
    uint8_t tail[128] = {0};
    size_t rest = len - i;
    memcpy(tail, data + i, rest);
    tail[rest] = 0x80;
    size_t tl = rest + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int k = 0; k < 8; k++) tail[tl - 1 - k] = (uint8_t)(bits >> (8 * k));
    sha256_block(h, tail);
    if (tl == 128) sha256_block(h, tail + 64);
    for (int k = 0; k < 8; k++) snprintf(out + 8 * k, 9, "%08x", h[k]);
}

/* ---- fixtures ----------------------------------------------------------------------------------------- */

static const char *fixdir;

/* Reads and decodes DIR/rel into im; 0 or -1 with a message. */
static int load_image(const char *rel, struct img_rgb *im, uint8_t **bytes, size_t *len)
{
    char path[1024], err[G4_ERR_MAX];
    snprintf(path, sizeof path, "%s/%s", fixdir, rel);
    size_t n = 0;
    char *data = util_read_file(path, IMG_MAX_INPUT_BYTES, &n, err);
    if (!data) {
        fprintf(stderr, "  %s\n", err);
        return -1;
    }
    int rc = img_decode((const uint8_t *)data, n, im, err);
    if (rc != IMG_OK) fprintf(stderr, "  %s: %s\n", path, err);
    if (bytes) {
        *bytes = (uint8_t *)data;
        *len = n;
    } else {
        free(data);
    }
    return rc == IMG_OK ? 0 : -1;
}

struct diff {
    size_t n, differ, over1;
    int max;
};

static struct diff compare(const uint8_t *a, const uint8_t *b, size_t n)
{
    struct diff d = {n, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        int x = abs((int)a[i] - (int)b[i]);
        d.differ += x != 0;
        d.over1 += x > 1;
        if (x > d.max) d.max = x;
    }
    return d;
}

/* The bound: bit-exact, or +-1 on under 0.1 % of the values. */
static int within_bound(struct diff d)
{
    return d.over1 == 0 && d.differ * 1000 < d.n;
}

static double exact_pct(struct diff d)
{
    return d.n ? 100.0 * (double)(d.n - d.differ) / (double)d.n : 100.0;
}

static int known_divergence(const cJSON *rules, const char *name)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(rules, name);
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "i16_clip"));
}

static size_t total_values, total_differ;
static int total_max;

/* One manifest case; returns 1 if it passed. Prints one table row. */
static int run_case(const cJSON *c, const cJSON *rules)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
    const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "file"));
    const char *rp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "resized_png"));
    const char *dsha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "decoded_sha256"));
    const char *psha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "patches_sha256"));
    const char *dpng = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "decoded_png"));
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c, "resized");
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(c, "positions");
    const int budget = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "max_soft_tokens"));
    const int n_ref = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "n"));
    if (!name || !file || !rp || !psha || !cJSON_IsArray(rs) || !cJSON_IsArray(pos)) {
        printf("  %-30s %5d  manifest entry incomplete (processor failed on the reference machine?)\n",
               name ? name : "?", budget);
        return 0;
    }
    const int rh = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(rs, 0));
    const int rw = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(rs, 1));
    const int divergent = known_divergence(rules, name);
    int ok = 1;
    char note[256] = "";
    struct img_rgb src = {0}, ref = {0}, pil = {0};
    if (load_image(file, &src, NULL, NULL) || load_image(rp, &ref, NULL, NULL)) {
        printf("  %-30s %5d  cannot load fixture files\n", name, budget);
        img_rgb_free(&src);
        return 0;
    }
    char hex[65];
    sha256_hex(src.px, (size_t)src.w * src.h * 3, hex);
    const int dec_exact = dsha && !strcmp(hex, dsha);

    /* geometry */
    int th = 0, tw = 0;
    img_target_size(src.h, src.w, budget, &th, &tw, NULL);
    uint8_t *mine = malloc((size_t)(th ? th : 1) * (tw ? tw : 1) * 3);
    struct img_patches p = {0};
    int geo = th == rh && tw == rw && ref.h == rh && ref.w == rw;
    if (geo) {
        img_resize(src.px, src.h, src.w, mine, th, tw, NULL);
        geo = img_patchify(mine, th, tw, &p, NULL) == IMG_OK && p.n == n_ref && cJSON_GetArraySize(pos) == p.n;
        for (int k = 0; geo && k < p.n; k++) {
            const cJSON *xy = cJSON_GetArrayItem(pos, k);
            geo = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(xy, 0)) == p.pos[2 * k] &&
                  (int)cJSON_GetNumberValue(cJSON_GetArrayItem(xy, 1)) == p.pos[2 * k + 1];
        }
    }
    if (!geo) {
        printf("  %-30s %5d  GEOMETRY: ours %dx%d n=%d, processor %dx%d n=%d\n", name, budget, tw, th, p.n, rw, rh,
               n_ref);
        ok = 0;
        goto free_all;
    }
    struct diff d = compare(mine, ref.px, (size_t)th * tw * 3);
    sha256_hex(p.rows, (size_t)p.n * IMG_ROW_BYTES, hex);
    const int sha_ok = !strcmp(hex, psha);
    /* resize alone, on PIL's own decoded pixels, when ours differ and the fixture carries them */
    char ronly[64] = "";
    if (!dec_exact && dpng && load_image(dpng, &pil, NULL, NULL) == 0 && pil.w == src.w && pil.h == src.h) {
        struct diff dd = compare(src.px, pil.px, (size_t)src.w * src.h * 3);
        img_resize(pil.px, pil.h, pil.w, mine, th, tw, NULL);
        struct diff dr = compare(mine, ref.px, (size_t)th * tw * 3);
        snprintf(ronly, sizeof ronly, " | on PIL's pixels %.4f%% max %d", exact_pct(dr), dr.max);
        snprintf(note, sizeof note, "decode differs from PIL's on %zu samples (max %d)", dd.differ, dd.max);
        if (!divergent && !within_bound(dr)) ok = 0;
    } else if (!dec_exact) {
        snprintf(note, sizeof note, "decode differs from PIL's (sha256)");
    }
    if (dec_exact) {
        if (!within_bound(d)) ok = 0;
        total_values += d.n;
        total_differ += d.differ;
        if (d.max > total_max) total_max = d.max;
    } else if (!divergent && !strstr(file, ".jpg") && !strstr(file, ".webp")) {
        ok = 0; /* a lossless format must decode exactly as PIL does */
    }
    if (divergent) {
        snprintf(note, sizeof note, "known divergence: PIL clips 16-bit gray to 0..255; g4 keeps the high byte");
        ok = 1;
    }
    printf("  %-30s %5d %4dx%-4d %4d  %-6s %9.4f%% %3d  %-4s%s%s%s\n", name, budget, tw, th, p.n,
           dec_exact ? "exact" : "DIFF", exact_pct(d), d.max, sha_ok ? "ok" : "DIFF", ronly, note[0] ? "  " : "",
           note);
free_all:
    img_patches_free(&p);
    free(mine);
    img_rgb_free(&src);
    img_rgb_free(&ref);
    img_rgb_free(&pil);
    return ok;
}

int main(void)
{
    (void)test_cur_failures;
    fixdir = getenv("G4_IMG_FIXTURES");
    if (!fixdir) fixdir = "tests/fixtures/images";
    char path[1024], err[G4_ERR_MAX];
    snprintf(path, sizeof path, "%s/manifest.json", fixdir);
    if (access(path, R_OK) != 0) {
        return test_skip("test_img_fixtures: %s absent (made by tests/reference/make_image_fixtures.py on the "
                         "reference machine)", path);
    }
    size_t len = 0;
    char *text = util_read_file(path, 16u << 20, &len, err);
    cJSON *m = text ? cJSON_ParseWithLength(text, len) : NULL;
    if (!m) {
        printf("FAIL test_img_fixtures: cannot read %s (%s)\n", path, text ? "bad JSON" : err);
        free(text);
        test_failed++;
        return test_report();
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "versions");
    char *vs = cJSON_PrintUnformatted(v);
    printf("reference: %s\n", vs ? vs : "?");
    free(vs);
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(m, "rules");
    printf("  %-30s %5s %9s %4s  %-6s %10s %3s  %s\n", "case", "budget", "resized", "n", "decode", "exact", "max",
           "patches sha256");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "cases"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
        int budget = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "max_soft_tokens"));
        if (cJSON_GetObjectItemCaseSensitive(c, "dry_run")) continue;
        int ok = run_case(c, rules);
        if (ok) test_passed++;
        else test_failed++;
        printf("%s fixture %s@%d\n", ok ? "PASS" : "FAIL", name ? name : "?", budget);
    }
    printf("resize over every exactly-decoded case: %zu values, %.4f%% exact, max diff %d\n", total_values,
           total_values ? 100.0 * (double)(total_values - total_differ) / (double)total_values : 100.0, total_max);
    cJSON_Delete(m);
    free(text);
    return test_report();
}
