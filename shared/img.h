/* img — Gemma 4's image pipeline: file bytes in, 48-pixel patches out. Built natively (into g4) and with
 * Emscripten (into the web client), from the same sources.
 *
 *   img_decode       PNG / JPEG / WebP bytes -> RGB8 (format by magic bytes; EXIF orientation applied;
 *                    alpha dropped, as Hugging Face's processor does through PIL's convert("RGB"))
 *   img_target_size  the Gemma4UnifiedImageProcessor resize rule (aspect kept, budget filled, sides % 48)
 *   img_resize       antialiased bicubic on uint8, bit-exact with torchvision/PyTorch's CPU uint8 kernel
 *   img_patchify     (H', W', 3) -> (N, 6912) rows, each a 48x48 HWC block, row-major, with (x, y) positions
 *   img_process      all of the above
 *
 * Bytes in, bytes out: no files, no stdio streams, no globals (img_flat.c excepted), libc + libpng + libjpeg
 * + libwebp only. Every failure a client can cause returns a negative enum img_status and a message in err
 * (IMG_ERR_MAX bytes, may be NULL); nothing here aborts or prints. Sizes a client controls are checked
 * against the limits below before anything is allocated. */
#ifndef G4_IMG_H
#define G4_IMG_H

#include <stddef.h>
#include <stdint.h>

#define IMG_ERR_MAX 512

/* Limits. A file larger than IMG_MAX_INPUT_BYTES, or one whose header claims a side longer than
 * IMG_MAX_SIDE or more than IMG_MAX_PIXELS pixels, is refused before any pixel buffer is allocated.
 * 50 MP covers phone cameras' full-resolution modes (8064 x 6048 = 48.8 MP); the RGB buffer is then 150 MB,
 * which the wasm module's memory can still grow to. */
#define IMG_MAX_INPUT_BYTES (64u << 20) /* 64 MiB of file */
#define IMG_MAX_SIDE 16384              /* pixels, either side */
#define IMG_MAX_PIXELS 50000000u        /* width x height */

/* The processor's geometry: 16-px patches merged 3 x 3 into 48-px ones. */
#define IMG_PATCH 48
#define IMG_ROW_BYTES (IMG_PATCH * IMG_PATCH * 3) /* 6912: one patch, HWC uint8 */
#define IMG_MAX_SOFT_TOKENS 1120                  /* the largest budget the processor accepts */

enum img_status {
    IMG_OK = 0,
    IMG_E_ARG = -1,     /* bad argument (a budget not in {70, 140, 280, 560, 1120}, NULL data...) */
    IMG_E_FORMAT = -2,  /* not PNG, JPEG or WebP by its magic bytes, or an unsupported kind of one */
    IMG_E_CORRUPT = -3, /* the file is damaged or truncated */
    IMG_E_LIMIT = -4,   /* larger than a limit above */
    IMG_E_NOMEM = -5,   /* an allocation within the limits failed */
};

enum img_format { IMG_FMT_UNKNOWN = 0, IMG_FMT_PNG, IMG_FMT_JPEG, IMG_FMT_WEBP };

/* An RGB8 image: px is (h, w, 3) uint8, row-major, owned (free with img_rgb_free). */
struct img_rgb {
    int w, h;
    uint8_t *px;
};

/* An image's patches: rows is (n, 6912) uint8 in the wire order; pos is (n, 2) int32 (x, y) = (column, row)
 * of each 48-px block. n = grid_w * grid_h; resized_w = 48 * grid_w, resized_h = 48 * grid_h. Owned. */
struct img_patches {
    int n;
    int grid_w, grid_h;
    int resized_w, resized_h;
    int src_w, src_h; /* the decoded (upright) image's size */
    uint8_t *rows;
    int32_t *pos;
};

/* The format by magic bytes (never by name). */
enum img_format img_sniff(const uint8_t *data, size_t len);
const char *img_format_name(enum img_format f);

/* Decodes PNG (all bit depths, palette, tRNS, 16-bit, interlaced), JPEG (baseline, progressive, gray, CMYK
 * as PIL converts it; EXIF orientation applied) or WebP (lossy, lossless, alpha; an animation's first frame)
 * into RGB8. Alpha is dropped, not composited: PIL's convert("RGB"), which transformers' convert_to_rgb
 * calls, keeps the colour channels as stored. 16-bit samples keep their high byte (PIL's and libpng's
 * strip). Returns IMG_OK or a negative status with err. */
int img_decode(const uint8_t *data, size_t len, struct img_rgb *out, char *err);
void img_rgb_free(struct img_rgb *im);

/* Gemma4UnifiedImageProcessor's target size for an h x w image and a budget (70, 140, 280, 560 or 1120):
 * f = sqrt(budget*9*256 / (h*w)); sides floor(f*side/48)*48; a side that floors to 0 becomes 48 and the
 * other floor(long/short)*48 capped at budget*48. Returns IMG_OK, or IMG_E_ARG for a bad budget or size. */
int img_target_size(int h, int w, int max_soft_tokens, int *out_h, int *out_w, char *err);

/* Antialiased bicubic resize of (sh, sw, 3) uint8 into (dh, dw, 3) uint8, the integer arithmetic of
 * PyTorch's CPU uint8 path for interpolate(mode="bicubic", antialias=True, align_corners=False), which
 * torchvision's resize uses for uint8 images: horizontal pass then vertical, each rounding to uint8.
 * Equal sizes copy. Returns IMG_OK, IMG_E_ARG or IMG_E_NOMEM. */
int img_resize(const uint8_t *src, int sh, int sw, uint8_t *dst, int dh, int dw, char *err);

/* Cuts a (h, w, 3) image whose sides are multiples of 48 into out->rows/pos (allocated here). */
int img_patchify(const uint8_t *px, int h, int w, struct img_patches *out, char *err);

/* The whole pipeline: decode, target size, resize, patchify. out is zeroed on failure. */
int img_process(const uint8_t *data, size_t len, int max_soft_tokens, struct img_patches *out, char *err);
void img_patches_free(struct img_patches *p);

/* 1 if the budget is one the processor accepts. */
int img_budget_ok(int max_soft_tokens);

#endif
