/* img_jpeg — JPEG bytes to upright RGB8 with libjpeg(-turbo), converting the way PIL does.
 *
 * Decoder settings are libjpeg's defaults, which PIL also uses (islow IDCT, fancy upsampling), so the pixels
 * equal PIL's for the same library. Gray -> R = G = B. CMYK and YCCK (Adobe files) are converted as PIL does:
 * PIL reads CMYK JPEGs as inverted ("CMYK;I", the Adobe convention), then convert("RGB") computes
 * R = (255 - K) - (C * (255 - K)) / 255 with its integer rounding (MULDIV255), likewise G and B.
 * The EXIF orientation in APP1 is applied afterwards (PIL's ImageOps.exif_transpose).
 *
 * libjpeg reports errors by calling error_exit, which here copies the message and longjmps back. Warnings are
 * counted, never printed; a file that ends early (JWRN_JPEG_EOF: libjpeg would fill the rest with gray) is
 * refused, as PIL refuses a truncated file. Dimensions are checked after the header, before decompression
 * allocates anything large. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "img_internal.h"

struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int truncated;
    char msg[JMSG_LENGTH_MAX];
};

static void jpeg_on_error(j_common_ptr cinfo)
{
    struct jpeg_err *e = (struct jpeg_err *)cinfo->err;
    e->pub.format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo, int level)
{
    struct jpeg_err *e = (struct jpeg_err *)cinfo->err;
    if (level < 0) {
        if (e->pub.msg_code == JWRN_JPEG_EOF) e->truncated = 1;
        e->pub.num_warnings++;
    }
}

static void jpeg_quiet_output(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* PIL's MULDIV255: a * b / 255 rounded, in integers. */
static inline int muldiv255(int a, int b)
{
    int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

static inline uint8_t clip8(int v)
{
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* Inverted (Adobe) CMYK scanline -> RGB, as PIL's "CMYK;I" read + cmyk2rgb. */
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, int w)
{
    for (int x = 0; x < w; x++) {
        const int c = 255 - in[4 * x], m = 255 - in[4 * x + 1], y = 255 - in[4 * x + 2];
        const int nk = in[4 * x + 3]; /* 255 - K */
        out[3 * x] = clip8(nk - muldiv255(c, nk));
        out[3 * x + 1] = clip8(nk - muldiv255(m, nk));
        out[3 * x + 2] = clip8(nk - muldiv255(y, nk));
    }
}

int img_decode_jpeg(const uint8_t *data, size_t len, struct img_rgb *out, char *err)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_err jerr;
    uint8_t *volatile px = NULL;
    uint8_t *volatile line = NULL;
    volatile int orientation = 1;
    int rc = IMG_E_CORRUPT;

    memset(&cinfo, 0, sizeof cinfo);
    memset(&jerr, 0, sizeof jerr);
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jpeg_on_error;
    jerr.pub.emit_message = jpeg_on_message;
    jerr.pub.output_message = jpeg_quiet_output;
    if (setjmp(jerr.jump)) {
        rc = img_fail(err, IMG_E_CORRUPT, "jpeg: %s", jerr.msg[0] ? jerr.msg : "corrupt file");
        goto destroy_jpeg;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, (const unsigned char *)data, (unsigned long)len);
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&cinfo, TRUE);
    rc = img_check_dims("jpeg", cinfo.image_width, cinfo.image_height, err);
    if (rc != IMG_OK) goto destroy_jpeg;
    rc = IMG_E_CORRUPT;
    for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && !memcmp(m->data, "Exif\0\0", 6)) {
            orientation = img_exif_orientation(m->data, m->data_length);
            break;
        }
    }
    const int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    const int w = (int)cinfo.output_width, h = (int)cinfo.output_height;
    if (cinfo.output_components != (cmyk ? 4 : 3)) {
        rc = img_fail(err, IMG_E_FORMAT, "jpeg: unsupported colour layout (%d components)", cinfo.output_components);
        goto destroy_jpeg;
    }
    px = malloc((size_t)w * h * 3);
    if (cmyk) line = malloc((size_t)w * 4);
    if (!px || (cmyk && !line)) {
        rc = img_fail(err, IMG_E_NOMEM, "jpeg: out of memory for %d x %d", w, h);
        goto destroy_jpeg;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        uint8_t *dst = px + (size_t)cinfo.output_scanline * w * 3;
        JSAMPROW row = cmyk ? line : dst;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
        if (jerr.truncated) break;
        if (cmyk) cmyk_to_rgb(line, dst, w);
    }
    if (jerr.truncated || cinfo.output_scanline < cinfo.output_height) {
        rc = img_fail(err, IMG_E_CORRUPT, "jpeg: file is truncated");
        goto destroy_jpeg;
    }
    jpeg_finish_decompress(&cinfo);
    out->w = w;
    out->h = h;
    out->px = px;
    px = NULL;
    rc = img_apply_orientation(out, orientation, err);
destroy_jpeg:
    jpeg_destroy_decompress(&cinfo);
    free(px);
    free(line);
    return rc;
}
