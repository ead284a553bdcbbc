/* img_flat — img_process behind a handle and plain-integer accessors, for callers that cannot read C structs:
 * the wasm module's JavaScript glue (webui). Exported from build/web/g4img.js as _img_flat_*.
 *
 * The last failure's message and status are kept in static storage: one caller at a time (the browser's
 * main thread or one worker per module instance). Native code should call img_process directly. */
#ifndef G4_IMG_FLAT_H
#define G4_IMG_FLAT_H

#include <stddef.h>
#include <stdint.h>

#include "img.h"

/* Decodes and patches data (len bytes) for a budget; NULL on failure (see img_flat_error/status). */
struct img_patches *img_flat_process(const uint8_t *data, size_t len, int max_soft_tokens);
void img_flat_free(struct img_patches *p);

/* The last failure of img_flat_process / img_flat_frame: message ("" after a success) and status. */
const char *img_flat_error(void);
int img_flat_status(void);

int img_flat_n(const struct img_patches *p);
int img_flat_grid_w(const struct img_patches *p);
int img_flat_grid_h(const struct img_patches *p);
int img_flat_resized_w(const struct img_patches *p);
int img_flat_resized_h(const struct img_patches *p);
int img_flat_src_w(const struct img_patches *p);
int img_flat_src_h(const struct img_patches *p);
const uint8_t *img_flat_rows(const struct img_patches *p);     /* (n, 6912) uint8 */
const int32_t *img_flat_positions(const struct img_patches *p); /* (n, 2) int32 (x, y) */

/* Bytes of a frame of count rows, and the frame itself for rows [first, first + count) of p, written into
 * out (cap bytes): bytes written, or a negative status (img_flat_error says why). */
size_t img_flat_frame_size(uint32_t count);
long img_flat_frame(const struct img_patches *p, uint32_t image_id, uint32_t first, uint32_t count, uint8_t *out,
                    size_t cap);

#endif
