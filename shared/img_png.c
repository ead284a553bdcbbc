/* img_png — PNG bytes to RGB8 with libpng's classic API, converting the way PIL's open + convert("RGB") does.
 *
 * What PIL does and what the transforms below reproduce (checked against PIL on every kind in the fixtures):
 *   palette -> its colours (tRNS ignored: PIL's P -> RGB is a palette lookup); gray of 1, 2, 4 bits scaled
 *   to 0..255; gray -> R = G = B; 16-bit -> the high byte (PIL reads "RGB;16B" etc. by the high byte, as
 *   png_set_strip_16 does); alpha dropped (PIL's RGBA/LA -> RGB keeps the colour channels as stored);
 *   gamma, sRGB and ICC chunks ignored (PIL does not apply them either).
 * One knowing divergence: PIL opens 16-bit grayscale as mode I;16 / I and clips it to 0..255 on conversion,
 * which turns an ordinary 16-bit gray photo nearly white; g4 keeps the high byte as for every other 16-bit
 * image (see docs/perf.md "Image pipeline").
 *
 * libpng reports errors by longjmp: the error handler copies the message and jumps back here; warnings are
 * swallowed (nothing is printed). Dimensions are checked after the header, before the pixel buffer exists;
 * chunk allocations are capped so a compressed-text bomb cannot exhaust memory. */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "img_internal.h"

#define PNG_CHUNK_MALLOC_MAX (8u << 20) /* ancillary chunk (iCCP, zTXt...) bytes after decompression */

struct png_src {
    const uint8_t *data;
    size_t len, off;
    char msg[160]; /* libpng's error text */
};

static void png_read_mem(png_structp png, png_bytep out, png_size_t n)
{
    struct png_src *s = png_get_io_ptr(png);
    if (n > s->len - s->off) png_error(png, "file is truncated");
    memcpy(out, s->data + s->off, n);
    s->off += n;
}

static void png_on_error(png_structp png, png_const_charp msg)
{
    struct png_src *s = png_get_error_ptr(png);
    size_t i = 0;
    for (; msg && msg[i] && i + 1 < sizeof s->msg; i++) s->msg[i] = msg[i];
    s->msg[i] = 0;
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

int img_decode_png(const uint8_t *data, size_t len, struct img_rgb *out, char *err)
{
    /* The size from IHDR (always the first chunk), checked before libpng reads further. */
    if (len >= 24 && !memcmp(data + 12, "IHDR", 4)) {
        const unsigned long long w0 = (unsigned long long)data[16] << 24 | data[17] << 16 | data[18] << 8 | data[19];
        const unsigned long long h0 = (unsigned long long)data[20] << 24 | data[21] << 16 | data[22] << 8 | data[23];
        int lim = img_check_dims("png", (long long)w0, (long long)h0, err);
        if (lim != IMG_OK) return lim;
    }
    struct png_src src = {data, len, 0, {0}};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    if (!png) return img_fail(err, IMG_E_NOMEM, "png: out of memory");
    png_infop info = png_create_info_struct(png);
    uint8_t *volatile px = NULL;
    png_bytep *volatile rows = NULL;
    volatile int rc = IMG_E_CORRUPT;
    if (!info) {
        rc = img_fail(err, IMG_E_NOMEM, "png: out of memory");
        goto destroy_png;
    }
    if (setjmp(png_jmpbuf(png))) {
        if (rc == IMG_E_CORRUPT) img_fail(err, IMG_E_CORRUPT, "png: %s", src.msg[0] ? src.msg : "corrupt file");
        goto destroy_png;
    }
    png_set_read_fn(png, &src, png_read_mem);
    png_set_user_limits(png, IMG_MAX_SIDE, IMG_MAX_SIDE);
    png_set_chunk_malloc_max(png, PNG_CHUNK_MALLOC_MAX);
    png_read_info(png, info);

    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    int lim = img_check_dims("png", w, h, err);
    if (lim != IMG_OK) {
        rc = lim;
        goto destroy_png;
    }
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    /* Palette expansion turns tRNS into an alpha channel; that alpha is dropped like any other. */
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
        png_get_rowbytes(png, info) != (size_t)w * 3) {
        rc = img_fail(err, IMG_E_FORMAT, "png: unsupported layout (colour type %d, %d bits)", color, depth);
        goto destroy_png;
    }
    px = malloc((size_t)w * h * 3);
    rows = malloc((size_t)h * sizeof *rows);
    if (!px || !rows) {
        rc = img_fail(err, IMG_E_NOMEM, "png: out of memory for %u x %u", (unsigned)w, (unsigned)h);
        goto destroy_png;
    }
    for (png_uint_32 y = 0; y < h; y++) rows[y] = px + (size_t)y * w * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    out->w = (int)w;
    out->h = (int)h;
    out->px = px;
    px = NULL;
    rc = IMG_OK;
destroy_png:
    free(px);
    free(rows);
    png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    return rc;
}
