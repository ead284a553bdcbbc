/* test_img — the image pipeline in shared/ on inputs made here: the processor's resize rule (the spec's worked
 * examples), the resize against an independent double-precision reference and its invariants, the patch
 * layout, decoding of every PNG kind / WebP / JPEG with EXIF orientation from files encoded in memory with
 * the same libraries, and bad input: empty, wrong magic, every truncation, dimension bombs, limits.
 * The comparison with Hugging Face's processor is test_img_fixtures.c. */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>
#include <png.h>
#include <stdint.h>
#include <webp/encode.h>
#include <zlib.h>

#include "img.h"
#include "test.h"

/* ---- helpers: deterministic pixels and in-memory encoders --------------------------------------------- */

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

struct membuf {
    uint8_t *p;
    size_t n, cap;
};

static void png_write_mem(png_structp png, png_bytep d, png_size_t n)
{
    struct membuf *m = png_get_io_ptr(png);
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->p = realloc(m->p, m->cap);
    }
    memcpy(m->p + m->n, d, n);
    m->n += n;
}

static void png_flush_mem(png_structp png)
{
    (void)png;
}

/* Encodes samples (h rows of rowbytes) as a PNG of the given type/depth; palette/trns optional. */
static struct membuf png_encode(int w, int h, int color, int depth, const uint8_t *rowsdata, size_t rowbytes,
                                const png_color *pal, int npal, const uint8_t *trns, int ntrns, int interlace)
{
    struct membuf m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "png_encode failed\n");
        exit(2);
    }
    png_set_write_fn(png, &m, png_write_mem, png_flush_mem);
    png_set_IHDR(png, info, w, h, depth, color, interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (pal) png_set_PLTE(png, info, pal, npal);
    if (trns) png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    png_bytep *rows = malloc(sizeof *rows * h);
    for (int y = 0; y < h; y++) rows[y] = (png_bytep)rowsdata + (size_t)y * rowbytes;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    free(rows);
    png_destroy_write_struct(&png, &info);
    return m;
}

/* A JPEG of rgb (w x h) at quality q, 4:4:4, with an optional APP1 payload. */
static struct membuf jpeg_encode(const uint8_t *rgb, int w, int h, int q, const uint8_t *app1, size_t app1_len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    unsigned long outlen = 0;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, &outlen);
    c.image_width = w;
    c.image_height = h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, q, TRUE);
    for (int i = 0; i < 3; i++) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    jpeg_start_compress(&c, TRUE);
    if (app1) jpeg_write_marker(&c, JPEG_APP0 + 1, app1, (unsigned)app1_len);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)rgb + (size_t)c.next_scanline * w * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    struct membuf m = {out, outlen, outlen};
    return m;
}

static uint8_t *random_rgb(int w, int h)
{
    uint8_t *p = malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) p[i] = (uint8_t)rnd();
    return p;
}

/* ---- the resize rule ---------------------------------------------------------------------------------- */

static void expect_size(int h, int w, int budget, int eh, int ew)
{
    int th = -1, tw = -1;
    char err[IMG_ERR_MAX] = "";
    int rc = img_target_size(h, w, budget, &th, &tw, err);
    EXPECTF(rc == IMG_OK && th == eh && tw == ew, "%d x %d (h x w) at %d -> %d x %d, want %d x %d (%s)", h, w,
            budget, th, tw, eh, ew, err);
}

static void test_target_size_spec_examples(void)
{
    expect_size(1024, 1024, 280, 768, 768);
    expect_size(480, 640, 280, 672, 912);
    expect_size(1080, 1920, 280, 576, 1056);
    expect_size(4000, 100, 280, 5040, 96);
    expect_size(32, 32, 280, 768, 768); /* small images are scaled up */
    /* spec 4.3: 1920 x 1080 gives 66, 120, 527, 1100 tokens at the other budgets */
    int budgets[4] = {70, 140, 560, 1120}, tokens[4] = {66, 120, 527, 1100};
    for (int i = 0; i < 4; i++) {
        int th, tw;
        EXPECT(img_target_size(1080, 1920, budgets[i], &th, &tw, NULL) == IMG_OK);
        EXPECTF((th / 48) * (tw / 48) == tokens[i], "budget %d: %d tokens, want %d", budgets[i],
                (th / 48) * (tw / 48), tokens[i]);
    }
}

static void test_target_size_edges(void)
{
    expect_size(3000, 20, 70, 3360, 48); /* width floors to 0: 48 wide, height floor(h/w)*48 capped at 70*48 */
    expect_size(16, 3000, 70, 48, 3360);
    expect_size(1, 1, 70, 384, 384);
    expect_size(384, 384, 70, 384, 384); /* already fits: no resize */
    int th, tw;
    char err[IMG_ERR_MAX] = "";
    EXPECT(img_target_size(100, 100, 100, &th, &tw, err) == IMG_E_ARG);
    EXPECT_STR_HAS(err, "70, 140, 280, 560, 1120");
    EXPECT(img_target_size(0, 100, 280, &th, &tw, NULL) == IMG_E_ARG);
    /* every budget, many shapes: sides are multiples of 48 and the patch count never exceeds the budget */
    int bad = 0;
    for (int b = 0; b < 5; b++) {
        int budget = (int[]){70, 140, 280, 560, 1120}[b];
        for (int i = 0; i < 400; i++) {
            int h = 1 + (int)(rnd() % 5000), w = 1 + (int)(rnd() % 5000);
            if (img_target_size(h, w, budget, &th, &tw, NULL) != IMG_OK || th % 48 || tw % 48 || th < 48 ||
                tw < 48 || (th / 48) * (tw / 48) > budget)
                bad++;
        }
    }
    EXPECTF(bad == 0, "%d shapes broke the rule's invariants", bad);
}

/* ---- the resize --------------------------------------------------------------------------------------- */

/* An independent reference: PIL-style antialiased bicubic in double precision, one axis at a time with the
 * intermediate rounded to uint8 like the real kernel, but with unquantized weights. The integer kernel may
 * differ from it by the int16 weight rounding: at most 1 per pass. */
static double ref_cubic(double x)
{
    x = x < 0 ? -x : x;
    if (x < 1) return 1.5 * x * x * x - 2.5 * x * x + 1;
    if (x < 2) return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2;
    return 0;
}

static void ref_axis(const uint8_t *src, int n_in, size_t step_in, uint8_t *dst, int n_out, size_t step_out)
{
    double scale = (double)n_in / n_out, fs = scale > 1 ? scale : 1, support = 2 * fs;
    for (int i = 0; i < n_out; i++) {
        double c = (i + 0.5) * scale, sum = 0, acc = 0;
        int lo = (int)(c - support + 0.5), hi = (int)(c + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > n_in) hi = n_in;
        for (int j = lo; j < hi; j++) {
            double wgt = ref_cubic((j - c + 0.5) / fs);
            sum += wgt;
            acc += wgt * src[(size_t)j * step_in];
        }
        double v = floor(acc / sum + 0.5);
        dst[(size_t)i * step_out] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

static void ref_resize(const uint8_t *src, int sh, int sw, uint8_t *dst, int dh, int dw)
{
    uint8_t *tmp = malloc((size_t)sh * dw * 3);
    for (int y = 0; y < sh; y++)
        for (int c = 0; c < 3; c++) {
            if (sw == dw)
                for (int x = 0; x < sw; x++) tmp[((size_t)y * dw + x) * 3 + c] = src[((size_t)y * sw + x) * 3 + c];
            else
                ref_axis(src + (size_t)y * sw * 3 + c, sw, 3, tmp + (size_t)y * dw * 3 + c, dw, 3);
        }
    for (int x = 0; x < dw; x++)
        for (int c = 0; c < 3; c++) {
            if (sh == dh)
                for (int y = 0; y < sh; y++) dst[((size_t)y * dw + x) * 3 + c] = tmp[((size_t)y * dw + x) * 3 + c];
            else
                ref_axis(tmp + (size_t)x * 3 + c, sh, (size_t)dw * 3, dst + (size_t)x * 3 + c, dh, (size_t)dw * 3);
        }
    free(tmp);
}

static void test_resize_against_double_reference(void)
{
    /* smooth images (so that the intermediate rounding cannot amplify): diffs stay within 2, mostly 0 */
    int sizes[][4] = {{37, 53, 96, 144}, {300, 200, 48, 96}, {7, 5, 432, 336}, {480, 640, 336, 432},
                      {100, 4000, 48, 2496}, {64, 64, 64, 48}, {64, 64, 96, 64}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int sh = sizes[s][0], sw = sizes[s][1], dh = sizes[s][2], dw = sizes[s][3];
        uint8_t *src = malloc((size_t)sh * sw * 3), *a = malloc((size_t)dh * dw * 3), *b = malloc((size_t)dh * dw * 3);
        for (int y = 0; y < sh; y++)
            for (int x = 0; x < sw; x++)
                for (int c = 0; c < 3; c++)
                    src[((size_t)y * sw + x) * 3 + c] =
                        (uint8_t)(127.5 + 100 * sin(0.05 * x * (c + 1) + 0.03 * y) * cos(0.02 * y * (3 - c)));
        EXPECT(img_resize(src, sh, sw, a, dh, dw, NULL) == IMG_OK);
        ref_resize(src, sh, sw, b, dh, dw);
        size_t diff = 0, n = (size_t)dh * dw * 3;
        int maxd = 0;
        for (size_t i = 0; i < n; i++) {
            int d = abs((int)a[i] - (int)b[i]);
            diff += d != 0;
            if (d > maxd) maxd = d;
        }
        EXPECTF(maxd <= 2 && diff * 100 < n * 5, "%dx%d -> %dx%d: max diff %d, %zu of %zu differ", sw, sh, dw, dh,
                maxd, diff, n);
        free(src);
        free(a);
        free(b);
    }
}

static void test_resize_invariants(void)
{
    /* a constant image stays that constant at every scale; equal sizes copy */
    int shapes[][4] = {{10, 10, 480, 480}, {1000, 20, 48, 96}, {33, 77, 48, 48}, {5, 3000, 48, 3360}};
    for (size_t s = 0; s < 4; s++) {
        int sh = shapes[s][0], sw = shapes[s][1], dh = shapes[s][2], dw = shapes[s][3];
        for (int v = 0; v < 256; v += 51) {
            uint8_t *src = malloc((size_t)sh * sw * 3), *dst = malloc((size_t)dh * dw * 3);
            memset(src, v, (size_t)sh * sw * 3);
            EXPECT(img_resize(src, sh, sw, dst, dh, dw, NULL) == IMG_OK);
            int bad = 0;
            for (size_t i = 0; i < (size_t)dh * dw * 3; i++) bad += dst[i] != v;
            EXPECTF(bad == 0, "constant %d, %dx%d -> %dx%d: %d samples changed", v, sw, sh, dw, dh, bad);
            free(src);
            free(dst);
        }
    }
    uint8_t *src = random_rgb(48, 96), *dst = malloc(48 * 96 * 3);
    EXPECT(img_resize(src, 96, 48, dst, 96, 48, NULL) == IMG_OK && !memcmp(src, dst, 48 * 96 * 3));
    EXPECT(img_resize(src, 0, 48, dst, 96, 48, NULL) == IMG_E_ARG);
    free(src);
    free(dst);
}

/* ---- patches ------------------------------------------------------------------------------------------ */

static void test_patchify_layout(void)
{
    const int h = 96, w = 144; /* 2 x 3 grid */
    uint8_t *px = malloc((size_t)h * w * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) px[((size_t)y * w + x) * 3 + c] = (uint8_t)(x * 7 + y * 13 + c * 101);
    struct img_patches p;
    EXPECT(img_patchify(px, h, w, &p, NULL) == IMG_OK);
    EXPECT(p.n == 6 && p.grid_w == 3 && p.grid_h == 2 && p.resized_w == w && p.resized_h == h);
    int bad = 0;
    for (int k = 0; k < p.n; k++) {
        int gx = k % 3, gy = k / 3;
        bad += p.pos[2 * k] != gx || p.pos[2 * k + 1] != gy;
        for (int r = 0; r < 48; r++)
            for (int c = 0; c < 48; c++)
                for (int ch = 0; ch < 3; ch++)
                    bad += p.rows[(size_t)k * 6912 + (r * 48 + c) * 3 + ch] !=
                           px[((size_t)(gy * 48 + r) * w + gx * 48 + c) * 3 + ch];
    }
    EXPECTF(bad == 0, "%d misplaced samples or positions", bad);
    img_patches_free(&p);
    EXPECT(img_patchify(px, 95, 144, &p, NULL) == IMG_E_ARG);
    free(px);
}

/* ---- decoding ----------------------------------------------------------------------------------------- */

static int decode_ok(const struct membuf *m, struct img_rgb *im)
{
    char err[IMG_ERR_MAX] = "";
    int rc = img_decode(m->p, m->n, im, err);
    if (rc) fprintf(stderr, "  decode: %d %s\n", rc, err);
    return rc == IMG_OK;
}

static void test_decode_png_kinds(void)
{
    const int w = 37, h = 23;
    uint8_t *rgb = random_rgb(w, h);
    uint8_t *buf = malloc((size_t)w * h * 8);
    struct img_rgb im;
    /* RGB8, plain and interlaced */
    for (int il = 0; il < 2; il++) {
        struct membuf m = png_encode(w, h, PNG_COLOR_TYPE_RGB, 8, rgb, (size_t)w * 3, NULL, 0, NULL, 0, il);
        EXPECT(img_sniff(m.p, m.n) == IMG_FMT_PNG);
        EXPECT(decode_ok(&m, &im) && im.w == w && im.h == h && !memcmp(im.px, rgb, (size_t)w * h * 3));
        img_rgb_free(&im);
        free(m.p);
    }
    /* RGBA8: alpha dropped, colour kept as stored (also under alpha 0) */
    for (int i = 0; i < w * h; i++) {
        memcpy(buf + 4 * i, rgb + 3 * i, 3);
        buf[4 * i + 3] = (uint8_t)(i % 3 == 0 ? 0 : rnd());
    }
    struct membuf m = png_encode(w, h, PNG_COLOR_TYPE_RGBA, 8, buf, (size_t)w * 4, NULL, 0, NULL, 0, 0);
    EXPECT(decode_ok(&m, &im) && !memcmp(im.px, rgb, (size_t)w * h * 3));
    img_rgb_free(&im);
    free(m.p);
    /* 16-bit RGB: the high byte */
    for (int i = 0; i < w * h * 3; i++) {
        buf[2 * i] = rgb[i];
        buf[2 * i + 1] = (uint8_t)rnd();
    }
    m = png_encode(w, h, PNG_COLOR_TYPE_RGB, 16, buf, (size_t)w * 6, NULL, 0, NULL, 0, 0);
    EXPECT(decode_ok(&m, &im) && !memcmp(im.px, rgb, (size_t)w * h * 3));
    img_rgb_free(&im);
    free(m.p);
    /* gray8: replicated to R = G = B */
    for (int i = 0; i < w * h; i++) buf[i] = rgb[3 * i];
    m = png_encode(w, h, PNG_COLOR_TYPE_GRAY, 8, buf, (size_t)w, NULL, 0, NULL, 0, 0);
    int bad = 0;
    EXPECT(decode_ok(&m, &im));
    for (int i = 0; im.px && i < w * h; i++) bad += im.px[3 * i] != buf[i] || im.px[3 * i + 1] != buf[i] || im.px[3 * i + 2] != buf[i];
    EXPECT(bad == 0);
    img_rgb_free(&im);
    free(m.p);
    /* 2-bit gray: 0, 85, 170, 255 */
    uint8_t g2[10 * 4];
    for (int i = 0; i < 40; i++) g2[i] = (uint8_t)(0x1b); /* samples 0,1,2,3 repeated */
    m = png_encode(40, 4, PNG_COLOR_TYPE_GRAY, 2, g2, 10, NULL, 0, NULL, 0, 0);
    EXPECT(decode_ok(&m, &im) && im.w == 40 && im.px[0] == 0 && im.px[3] == 85 && im.px[6] == 170 && im.px[9] == 255);
    img_rgb_free(&im);
    free(m.p);
    /* 4-bit palette with tRNS: the palette's colours, transparency ignored */
    png_color pal[16];
    for (int i = 0; i < 16; i++) pal[i] = (png_color){(uint8_t)(i * 16), (uint8_t)(255 - i * 9), (uint8_t)(i * 5)};
    uint8_t trns[16];
    for (int i = 0; i < 16; i++) trns[i] = (uint8_t)(i * 17);
    uint8_t idx[8 * 3];
    for (int i = 0; i < 24; i++) idx[i] = (uint8_t)((i % 16) << 4 | ((i + 5) % 16));
    m = png_encode(16, 3, PNG_COLOR_TYPE_PALETTE, 4, idx, 8, pal, 16, trns, 16, 0);
    bad = 0;
    EXPECT(decode_ok(&m, &im) && im.w == 16 && im.h == 3);
    for (int i = 0; im.px && i < 48; i++) {
        int k = i % 2 ? idx[i / 2] & 15 : idx[i / 2] >> 4;
        bad += im.px[3 * i] != pal[k].red || im.px[3 * i + 1] != pal[k].green || im.px[3 * i + 2] != pal[k].blue;
    }
    EXPECTF(bad == 0, "%d palette pixels wrong", bad);
    img_rgb_free(&im);
    free(m.p);
    free(rgb);
    free(buf);
}

static void test_decode_webp(void)
{
    const int w = 41, h = 29;
    uint8_t *rgb = random_rgb(w, h), *out = NULL;
    struct img_rgb im;
    size_t n = WebPEncodeLosslessRGB(rgb, w, h, w * 3, &out);
    struct membuf m = {out, n, n};
    EXPECT(n > 0 && img_sniff(out, n) == IMG_FMT_WEBP);
    EXPECT(decode_ok(&m, &im) && im.w == w && im.h == h && !memcmp(im.px, rgb, (size_t)w * h * 3));
    img_rgb_free(&im);
    WebPFree(out);
    uint8_t *rgba = malloc((size_t)w * h * 4);
    for (int i = 0; i < w * h; i++) {
        memcpy(rgba + 4 * i, rgb + 3 * i, 3);
        rgba[4 * i + 3] = (uint8_t)(128 + i % 128);
    }
    n = WebPEncodeLosslessRGBA(rgba, w, h, w * 4, &out);
    m = (struct membuf){out, n, n};
    EXPECT(decode_ok(&m, &im) && !memcmp(im.px, rgb, (size_t)w * h * 3)); /* alpha > 0: colours exact */
    img_rgb_free(&im);
    WebPFree(out);
    free(rgba);
    free(rgb);
}

/* APP1 payload with one IFD0 entry: orientation o (little- or big-endian TIFF). */
static size_t exif_app1(uint8_t *b, int o, int le)
{
    static const uint8_t head_le[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0,
                                      0x12, 0x01, 3, 0, 1, 0, 0, 0};
    static const uint8_t head_be[] = {'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                                      0x01, 0x12, 0, 3, 0, 0, 0, 1};
    memcpy(b, le ? head_le : head_be, 24);
    if (le) { b[24] = (uint8_t)o; b[25] = 0; }
    else { b[24] = 0; b[25] = (uint8_t)o; }
    memset(b + 26, 0, 6); /* padding + next IFD = 0 */
    return 32;
}

static void test_decode_jpeg_orientation(void)
{
    /* stored image 64 x 32: quadrants red, green / blue, white */
    const int w = 64, h = 32;
    static const uint8_t col[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};
    uint8_t *rgb = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) memcpy(rgb + ((size_t)y * w + x) * 3, col[(y >= h / 2) * 2 + (x >= w / 2)], 3);
    /* what a person sees, quadrant by quadrant (TL, TR, BL, BR), per EXIF orientation 1..8 */
    static const int want[9][4] = {{0}, {0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}, {2, 3, 0, 1},
                                   {0, 2, 1, 3}, {2, 0, 3, 1}, {3, 1, 2, 0}, {1, 3, 0, 2}};
    for (int o = 1; o <= 8; o++) {
        uint8_t app1[32];
        size_t alen = exif_app1(app1, o, o % 2);
        struct membuf m = jpeg_encode(rgb, w, h, 95, app1, alen);
        struct img_rgb im;
        EXPECT(img_sniff(m.p, m.n) == IMG_FMT_JPEG);
        if (!decode_ok(&m, &im)) {
            free(m.p);
            continue;
        }
        const int ew = o >= 5 ? h : w, eh = o >= 5 ? w : h;
        EXPECTF(im.w == ew && im.h == eh, "orientation %d: %d x %d", o, im.w, im.h);
        for (int q = 0; q < 4 && im.w == ew; q++) {
            int x = (q % 2 ? 3 : 1) * ew / 4, y = (q / 2 ? 3 : 1) * eh / 4;
            const uint8_t *p = im.px + ((size_t)y * ew + x) * 3;
            const uint8_t *c = col[want[o][q]];
            EXPECTF(abs(p[0] - c[0]) < 12 && abs(p[1] - c[1]) < 12 && abs(p[2] - c[2]) < 12,
                    "orientation %d quadrant %d: %d %d %d", o, q, p[0], p[1], p[2]);
        }
        img_rgb_free(&im);
        free(m.p);
    }
    free(rgb);
}

/* A CMYK JPEG: img_decode must equal libjpeg's raw (Adobe-inverted) CMYK put through PIL's formula,
 * R = (255 - K) - round(C * (255 - K) / 255), written here independently as integer rounding of 2ab / 510. */
static void test_decode_jpeg_cmyk(void)
{
    const int w = 48, h = 32;
    uint8_t *ink = malloc((size_t)w * h * 4);
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < 4; c++) ink[4 * i + c] = (uint8_t)(128 + 100 * sin(0.1 * (i % w) * (c + 1) + 0.07 * (i / w)));
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr e;
    unsigned char *jpg = NULL;
    unsigned long jlen = 0;
    ci.err = jpeg_std_error(&e);
    jpeg_create_compress(&ci);
    jpeg_mem_dest(&ci, &jpg, &jlen);
    ci.image_width = w;
    ci.image_height = h;
    ci.input_components = 4;
    ci.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 90, TRUE);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = ink + (size_t)ci.next_scanline * w * 4;
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    /* what libjpeg decodes, raw */
    struct jpeg_decompress_struct di;
    di.err = jpeg_std_error(&e);
    jpeg_create_decompress(&di);
    jpeg_mem_src(&di, jpg, jlen);
    jpeg_read_header(&di, TRUE);
    di.out_color_space = JCS_CMYK;
    jpeg_start_decompress(&di);
    uint8_t *raw = malloc((size_t)w * h * 4);
    while (di.output_scanline < di.output_height) {
        JSAMPROW row = raw + (size_t)di.output_scanline * w * 4;
        jpeg_read_scanlines(&di, &row, 1);
    }
    jpeg_finish_decompress(&di);
    jpeg_destroy_decompress(&di);
    struct membuf m = {jpg, jlen, jlen};
    struct img_rgb im;
    int bad = 0;
    EXPECT(decode_ok(&m, &im) && im.w == w && im.h == h);
    for (int i = 0; im.px && i < w * h; i++) {
        int nk = raw[4 * i + 3];
        for (int c = 0; c < 3; c++) {
            int ink_c = 255 - raw[4 * i + c];
            int want = nk - (2 * ink_c * nk + 255) / 510;
            bad += im.px[3 * i + c] != want;
        }
    }
    EXPECTF(bad == 0, "%d CMYK samples differ from PIL's formula", bad);
    img_rgb_free(&im);
    free(raw);
    free(ink);
    free(jpg);
}

/* ---- bad input ---------------------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    struct img_rgb im;
    char err[IMG_ERR_MAX];
    uint8_t junk[64] = "GIF89a not an image we take";
    EXPECT(img_decode(NULL, 0, &im, err) == IMG_E_FORMAT);
    EXPECT(img_decode(junk, 0, &im, err) == IMG_E_FORMAT);
    EXPECT(img_decode(junk, sizeof junk, &im, err) == IMG_E_FORMAT);
    EXPECT_STR_HAS(err, "not a PNG, JPEG or WebP");
    EXPECT(img_decode(junk, (size_t)IMG_MAX_INPUT_BYTES + 1, &im, err) == IMG_E_LIMIT);
    EXPECT(im.px == NULL);

    /* every truncation of a PNG, a JPEG and a WebP fails cleanly (and the whole file decodes) */
    const int w = 40, h = 30;
    uint8_t *rgb = random_rgb(w, h), *wp = NULL;
    struct membuf files[3];
    files[0] = png_encode(w, h, PNG_COLOR_TYPE_RGB, 8, rgb, (size_t)w * 3, NULL, 0, NULL, 0, 1);
    files[1] = jpeg_encode(rgb, w, h, 80, NULL, 0);
    size_t wn = WebPEncodeRGB(rgb, w, h, w * 3, 80, &wp);
    files[2] = (struct membuf){wp, wn, wn};
    for (int f = 0; f < 3; f++) {
        int accepted = 0;
        for (size_t len = 0; len < files[f].n; len++) {
            int rc = img_decode(files[f].p, len, &im, err);
            if (rc == IMG_OK) {
                accepted++;
                img_rgb_free(&im);
            } else {
                EXPECT(im.px == NULL && err[0]);
            }
        }
        EXPECTF(accepted == 0, "format %d: %d truncated files accepted", f, accepted);
        EXPECT(img_decode(files[f].p, files[f].n, &im, err) == IMG_OK);
        img_rgb_free(&im);
        /* flipped bytes: any result but a crash (ASan/UBSan builds check the "no crash" part) */
        for (int k = 0; k < 200; k++) {
            uint8_t *c = malloc(files[f].n);
            memcpy(c, files[f].p, files[f].n);
            c[rnd() % files[f].n] ^= (uint8_t)(1 + rnd() % 255);
            if (img_decode(c, files[f].n, &im, err) == IMG_OK) img_rgb_free(&im);
            free(c);
        }
    }
    free(files[0].p);
    free(files[1].p);
    WebPFree(wp);
    free(rgb);
}

/* A PNG whose IHDR claims w x h (valid CRC) and then nothing: must be refused on the header. */
static void test_dimension_bombs(void)
{
    struct img_rgb im;
    char err[IMG_ERR_MAX];
    uint32_t dims[][2] = {{60000, 60000}, {16000, 16000}, {1, 16385}, {0, 10}};
    int want[] = {IMG_E_LIMIT, IMG_E_LIMIT, IMG_E_LIMIT, IMG_E_CORRUPT};
    for (int i = 0; i < 4; i++) {
        uint8_t f[8 + 25 + 12] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
        uint8_t *p = f + 16;
        for (int k = 0; k < 2; k++) {
            p[4 * k] = (uint8_t)(dims[i][k] >> 24);
            p[4 * k + 1] = (uint8_t)(dims[i][k] >> 16);
            p[4 * k + 2] = (uint8_t)(dims[i][k] >> 8);
            p[4 * k + 3] = (uint8_t)dims[i][k];
        }
        p[8] = 8;
        p[9] = 2;
        uint32_t crc = (uint32_t)crc32(0, f + 12, 17);
        f[29] = (uint8_t)(crc >> 24);
        f[30] = (uint8_t)(crc >> 16);
        f[31] = (uint8_t)(crc >> 8);
        f[32] = (uint8_t)crc;
        int rc = img_decode(f, 33, &im, err);
        EXPECTF(rc == want[i], "png %u x %u: rc %d (%s)", dims[i][0], dims[i][1], rc, err);
    }
    /* JPEG SOF0 claiming 65000 x 65000 */
    uint8_t *rgb = random_rgb(8, 8);
    struct membuf m = jpeg_encode(rgb, 8, 8, 80, NULL, 0);
    for (size_t i = 0; i + 8 < m.n; i++) {
        if (m.p[i] == 0xff && m.p[i + 1] == 0xc0) {
            m.p[i + 5] = 0xfd; m.p[i + 6] = 0xe8; /* height 65000 */
            m.p[i + 7] = 0xfd; m.p[i + 8] = 0xe8; /* width 65000 */
            break;
        }
    }
    EXPECT(img_decode(m.p, m.n, &im, err) == IMG_E_LIMIT);
    EXPECT_STR_HAS(err, "limit");
    free(m.p);
    free(rgb);
    /* WebP VP8X canvas 16384 x 16384 (over the pixel limit) with no image data */
    uint8_t vp8x[30] = {'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0,
                        0, 0, 0, 0, 0xff, 0x3f, 0, 0xff, 0x3f, 0};
    int rc = img_decode(vp8x, sizeof vp8x, &im, err);
    EXPECTF(rc == IMG_E_LIMIT || rc == IMG_E_CORRUPT, "webp bomb: rc %d", rc);
}

static void test_process_end_to_end(void)
{
    const int w = 200, h = 150;
    uint8_t *rgb = random_rgb(w, h);
    struct membuf m = png_encode(w, h, PNG_COLOR_TYPE_RGB, 8, rgb, (size_t)w * 3, NULL, 0, NULL, 0, 0);
    struct img_patches p;
    char err[IMG_ERR_MAX];
    EXPECT(img_process(m.p, m.n, 70, &p, err) == IMG_OK);
    EXPECT(p.src_w == w && p.src_h == h && p.resized_w == 432 && p.resized_h == 336 && p.n == 63);
    /* the same as doing the steps by hand */
    uint8_t *r = malloc(432 * 336 * 3);
    EXPECT(img_resize(rgb, h, w, r, 336, 432, NULL) == IMG_OK);
    struct img_patches q;
    EXPECT(img_patchify(r, 336, 432, &q, NULL) == IMG_OK);
    EXPECT(q.n == p.n && !memcmp(q.rows, p.rows, (size_t)p.n * 6912) && !memcmp(q.pos, p.pos, (size_t)p.n * 8));
    img_patches_free(&q);
    img_patches_free(&p);
    EXPECT(img_process(m.p, m.n, 100, &p, err) == IMG_E_ARG);
    EXPECT(img_process(m.p, m.n / 2, 280, &p, err) == IMG_E_CORRUPT && p.rows == NULL);
    free(r);
    free(m.p);
    free(rgb);
}

int main(void)
{
    RUN_TEST(test_target_size_spec_examples);
    RUN_TEST(test_target_size_edges);
    RUN_TEST(test_resize_against_double_reference);
    RUN_TEST(test_resize_invariants);
    RUN_TEST(test_patchify_layout);
    RUN_TEST(test_decode_png_kinds);
    RUN_TEST(test_decode_webp);
    RUN_TEST(test_decode_jpeg_orientation);
    RUN_TEST(test_decode_jpeg_cmyk);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_dimension_bombs);
    RUN_TEST(test_process_end_to_end);
    return test_report();
}
