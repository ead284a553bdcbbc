/* img_webp — WebP bytes to RGB8 with libwebp: lossy, lossless, with alpha, and an animation's first frame.
 *
 * PIL decodes WebP through libwebp's WebPAnimDecoder in non-premultiplied RGBA and convert("RGB") drops the
 * alpha. Non-premultiplied RGB does not depend on alpha, so decoding straight to RGB gives the same bytes.
 * For an animation, the anim decoder draws frame 1 (a key frame) onto a canvas cleared to transparent black:
 * the frame's rectangle gets its pixels, the rest of the canvas stays (0, 0, 0). Decoding uses libwebp's
 * default options (fancy upsampling, no dithering), as the anim decoder does.
 *
 * Canvas and frame sizes are checked against the limits before anything is allocated. */
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/demux.h>

#include "img_internal.h"

/* Decodes one VP8/VP8L bitstream (with its ALPH chunk, if any) into rgb at the given stride. */
static int decode_into(const uint8_t *data, size_t len, uint8_t *rgb, size_t size, int stride, char *err)
{
    if (!WebPDecodeRGBInto(data, len, rgb, size, stride))
        return img_fail(err, IMG_E_CORRUPT, "webp: corrupt or truncated bitstream");
    return IMG_OK;
}

static int decode_first_frame(const uint8_t *data, size_t len, struct img_rgb *out, char *err)
{
    WebPData wd = {data, len};
    WebPDemuxer *dmx = WebPDemux(&wd);
    WebPIterator it;
    int have_iter = 0;
    int rc;
    if (!dmx) return img_fail(err, IMG_E_CORRUPT, "webp: corrupt animation container");
    const long long cw = WebPDemuxGetI(dmx, WEBP_FF_CANVAS_WIDTH);
    const long long ch = WebPDemuxGetI(dmx, WEBP_FF_CANVAS_HEIGHT);
    rc = img_check_dims("webp", cw, ch, err);
    if (rc != IMG_OK) goto delete_demux;
    if (!WebPDemuxGetFrame(dmx, 1, &it)) {
        rc = img_fail(err, IMG_E_CORRUPT, "webp: animation has no frames");
        goto delete_demux;
    }
    have_iter = 1;
    if (it.x_offset < 0 || it.y_offset < 0 || it.width <= 0 || it.height <= 0 || it.x_offset + it.width > cw ||
        it.y_offset + it.height > ch) {
        rc = img_fail(err, IMG_E_CORRUPT, "webp: first frame lies outside the canvas");
        goto delete_demux;
    }
    out->px = calloc((size_t)cw * ch, 3);
    if (!out->px) {
        rc = img_fail(err, IMG_E_NOMEM, "webp: out of memory for %lld x %lld", cw, ch);
        goto delete_demux;
    }
    out->w = (int)cw;
    out->h = (int)ch;
    const int stride = (int)cw * 3;
    uint8_t *dst = out->px + (size_t)it.y_offset * stride + (size_t)it.x_offset * 3;
    const size_t room = (size_t)(it.height - 1) * stride + (size_t)it.width * 3;
    rc = decode_into(it.fragment.bytes, it.fragment.size, dst, room, stride, err);
delete_demux:
    if (have_iter) WebPDemuxReleaseIterator(&it);
    WebPDemuxDelete(dmx);
    return rc;
}

int img_decode_webp(const uint8_t *data, size_t len, struct img_rgb *out, char *err)
{
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(data, len, &f);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA) return img_fail(err, IMG_E_CORRUPT, "webp: file is truncated");
    if (st != VP8_STATUS_OK) return img_fail(err, IMG_E_CORRUPT, "webp: corrupt header (status %d)", (int)st);
    if (f.has_animation) return decode_first_frame(data, len, out, err);
    int rc = img_check_dims("webp", f.width, f.height, err);
    if (rc != IMG_OK) return rc;
    const size_t size = (size_t)f.width * f.height * 3;
    out->px = malloc(size);
    if (!out->px) return img_fail(err, IMG_E_NOMEM, "webp: out of memory for %d x %d", f.width, f.height);
    out->w = f.width;
    out->h = f.height;
    return decode_into(data, len, out->px, size, f.width * 3, err);
}
