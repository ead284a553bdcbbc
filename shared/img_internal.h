/* img_internal — what the per-format decoders (img_png.c, img_jpeg.c, img_webp.c) share with img_decode.c.
 * Not part of the public API: only shared/img_*.c include it. */
#ifndef G4_IMG_INTERNAL_H
#define G4_IMG_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "img.h"

/* Formats err (IMG_ERR_MAX bytes, may be NULL) and returns code. */
int img_fail(char *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* IMG_OK when w x h is within IMG_MAX_SIDE / IMG_MAX_PIXELS; else IMG_E_LIMIT (or IMG_E_CORRUPT for a zero
 * side) with a message naming the format, the size and the limit. Called on the header, before any pixel
 * buffer exists. */
int img_check_dims(const char *fmt, long long w, long long h, char *err);

/* Each decoder fills out->px (h, w, 3) and out->w/h, or returns a negative status with err. */
int img_decode_png(const uint8_t *data, size_t len, struct img_rgb *out, char *err);
int img_decode_jpeg(const uint8_t *data, size_t len, struct img_rgb *out, char *err);
int img_decode_webp(const uint8_t *data, size_t len, struct img_rgb *out, char *err);

/* EXIF orientation (1..8) from a JPEG APP1 "Exif" payload; 1 when absent or unreadable. */
int img_exif_orientation(const uint8_t *app1, size_t len);

/* Applies EXIF orientation o to im in place (as PIL's ImageOps.exif_transpose does). IMG_OK or IMG_E_NOMEM. */
int img_apply_orientation(struct img_rgb *im, int o, char *err);

#endif
