/* img_decode — format sniffing, limits, EXIF orientation: the part of decoding that is not one library.
 *
 * The format is decided by magic bytes only. Limits are checked here and in each decoder on the header,
 * before any pixel buffer is allocated (a 100-byte file may claim 60000 x 60000 pixels). Orientation follows
 * PIL's ImageOps.exif_transpose, which is what makes Hugging Face's reference see the upright picture.
 * Must not use stdio streams or globals; every client-caused failure is a status and a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "img_internal.h"

int img_fail(char *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, IMG_ERR_MAX, fmt, ap);
        va_end(ap);
    }
    return code;
}

int img_check_dims(const char *fmt, long long w, long long h, char *err)
{
    if (w <= 0 || h <= 0) return img_fail(err, IMG_E_CORRUPT, "%s: image has no pixels (%lld x %lld)", fmt, w, h);
    if (w > IMG_MAX_SIDE || h > IMG_MAX_SIDE)
        return img_fail(err, IMG_E_LIMIT, "%s: %lld x %lld is larger than the limit of %d pixels a side", fmt, w,
                        h, IMG_MAX_SIDE);
    if ((unsigned long long)w * (unsigned long long)h > IMG_MAX_PIXELS)
        return img_fail(err, IMG_E_LIMIT, "%s: %lld x %lld is more than the limit of %u pixels", fmt, w, h,
                        IMG_MAX_PIXELS);
    return IMG_OK;
}

enum img_format img_sniff(const uint8_t *d, size_t len)
{
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    if (!d) return IMG_FMT_UNKNOWN;
    if (len >= 8 && !memcmp(d, png_magic, 8)) return IMG_FMT_PNG;
    if (len >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff) return IMG_FMT_JPEG;
    if (len >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return IMG_FMT_WEBP;
    return IMG_FMT_UNKNOWN;
}

const char *img_format_name(enum img_format f)
{
    switch (f) {
    case IMG_FMT_PNG: return "png";
    case IMG_FMT_JPEG: return "jpeg";
    case IMG_FMT_WEBP: return "webp";
    default: return "unknown";
    }
}

void img_rgb_free(struct img_rgb *im)
{
    if (!im) return;
    free(im->px);
    memset(im, 0, sizeof *im);
}

int img_decode(const uint8_t *data, size_t len, struct img_rgb *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!data || len == 0) return img_fail(err, IMG_E_FORMAT, "image is empty");
    if (len > IMG_MAX_INPUT_BYTES)
        return img_fail(err, IMG_E_LIMIT, "image is %zu bytes, more than the limit of %u", len, IMG_MAX_INPUT_BYTES);
    int rc;
    switch (img_sniff(data, len)) {
    case IMG_FMT_PNG: rc = img_decode_png(data, len, out, err); break;
    case IMG_FMT_JPEG: rc = img_decode_jpeg(data, len, out, err); break;
    case IMG_FMT_WEBP: rc = img_decode_webp(data, len, out, err); break;
    default: return img_fail(err, IMG_E_FORMAT, "not a PNG, JPEG or WebP file (unrecognised first bytes)");
    }
    if (rc != IMG_OK) img_rgb_free(out);
    return rc;
}

/* ---- EXIF ---------------------------------------------------------------------------------------------- */

static unsigned rd16(const uint8_t *p, int le)
{
    return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static unsigned long rd32(const uint8_t *p, int le)
{
    return le ? (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16 |
                    (unsigned long)p[3] << 24
              : (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 |
                    (unsigned long)p[3];
}

/* app1 = the APP1 marker's payload ("Exif\0\0" + TIFF). Reads IFD0's tag 0x0112 (SHORT). Every offset is
 * checked against len; anything odd means "no orientation". */
int img_exif_orientation(const uint8_t *app1, size_t len)
{
    if (!app1 || len < 6 + 8 || memcmp(app1, "Exif\0\0", 6)) return 1;
    const uint8_t *t = app1 + 6;
    const size_t n = len - 6;
    int le;
    if (t[0] == 'I' && t[1] == 'I') le = 1;
    else if (t[0] == 'M' && t[1] == 'M') le = 0;
    else return 1;
    if (rd16(t + 2, le) != 42) return 1;
    const unsigned long ifd = rd32(t + 4, le);
    if (ifd > n - 2 || ifd < 8) return 1;
    const unsigned count = rd16(t + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        const unsigned long e = ifd + 2 + 12ul * i;
        if (e + 12 > n) return 1;
        if (rd16(t + e, le) != 0x0112) continue;
        const unsigned type = rd16(t + e + 2, le);
        if (type != 3 || rd32(t + e + 4, le) < 1) return 1;
        const unsigned v = rd16(t + e + 8, le);
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

/* Output pixel (x, y) of the upright image takes input pixel (sx, sy). PIL's exif_transpose uses:
 * 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE, 8 ROTATE_90
 * (ROTATE_n is counter-clockwise). iw, ih: the stored image's size. */
static void source_of(int o, int x, int y, int iw, int ih, int *sx, int *sy)
{
    switch (o) {
    case 2: *sx = iw - 1 - x; *sy = y; break;
    case 3: *sx = iw - 1 - x; *sy = ih - 1 - y; break;
    case 4: *sx = x; *sy = ih - 1 - y; break;
    case 5: *sx = y; *sy = x; break;
    case 6: *sx = y; *sy = ih - 1 - x; break;
    case 7: *sx = iw - 1 - y; *sy = ih - 1 - x; break;
    case 8: *sx = iw - 1 - y; *sy = x; break;
    default: *sx = x; *sy = y; break;
    }
}

int img_apply_orientation(struct img_rgb *im, int o, char *err)
{
    if (o <= 1 || o > 8) return IMG_OK;
    const int iw = im->w, ih = im->h;
    const int ow = o >= 5 ? ih : iw, oh = o >= 5 ? iw : ih;
    uint8_t *dst = malloc((size_t)ow * oh * 3);
    if (!dst) return img_fail(err, IMG_E_NOMEM, "orientation: out of memory");
    for (int y = 0; y < oh; y++) {
        uint8_t *d = dst + (size_t)y * ow * 3;
        for (int x = 0; x < ow; x++) {
            int sx, sy;
            source_of(o, x, y, iw, ih, &sx, &sy);
            const uint8_t *s = im->px + ((size_t)sy * iw + sx) * 3;
            d[3 * x] = s[0];
            d[3 * x + 1] = s[1];
            d[3 * x + 2] = s[2];
        }
    }
    free(im->px);
    im->px = dst;
    im->w = ow;
    im->h = oh;
    return IMG_OK;
}
