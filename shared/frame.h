/* frame — the binary WebSocket frame that carries an image's patches from the browser to the server.
 *
 * Layout (little-endian), FRAME_HEADER_BYTES then count rows:
 *
 *   off size field
 *     0    4 magic      "G4IP"
 *     4    2 version    FRAME_VERSION
 *     6    2 flags      0 (reserved: a decoder refuses anything else)
 *     8    4 image_id   chosen by the client; ties the frames of one image together
 *    12    2 grid_w     patches across (resized width / 48), 1..FRAME_MAX_PATCHES
 *    14    2 grid_h     patches down, 1..FRAME_MAX_PATCHES, grid_w * grid_h <= FRAME_MAX_PATCHES
 *    16    4 first      index of this frame's first row in the image's row-major patch order
 *    20    4 count      rows in this frame, 1..grid_w * grid_h - first
 *    24    count * 6912 rows: each a 48 x 48 x 3 uint8 block in HWC order (img.h, img_patchify)
 *
 * A row's position is implied by its index k: (x, y) = (k % grid_w, k / grid_w). An image may be sent in one
 * frame or split over several (first/count), so no message has to exceed the server's message limit.
 * The decoder validates every field and the exact length; it never trusts a field it has not checked.
 * No allocation, no stdio: bytes in, bytes out. */
#ifndef G4_FRAME_H
#define G4_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC "G4IP"
#define FRAME_VERSION 1
#define FRAME_HEADER_BYTES 24
#define FRAME_ROW_BYTES 6912     /* 48 * 48 * 3 */
#define FRAME_MAX_PATCHES 1120   /* the largest max_soft_tokens the processor accepts */
#define FRAME_ERR_MAX 512

enum frame_status {
    FRAME_OK = 0,
    FRAME_E_SHORT = -1,   /* fewer bytes than a header, or than the rows the header announces */
    FRAME_E_MAGIC = -2,   /* not "G4IP" */
    FRAME_E_VERSION = -3, /* a version this decoder does not speak */
    FRAME_E_FIELD = -4,   /* a field outside its range (flags, grid, first, count) */
    FRAME_E_LENGTH = -5,  /* more bytes than the header announces */
    FRAME_E_SPACE = -6,   /* encode: the output buffer is too small */
};

struct frame_header {
    uint32_t image_id;
    uint16_t grid_w, grid_h;
    uint32_t first, count;
};

/* Bytes a frame of count rows takes (header included). */
size_t frame_size(uint32_t count);

/* Checks h's fields against the limits (the same checks the decoder makes). FRAME_OK or FRAME_E_FIELD. */
int frame_check(const struct frame_header *h, char *err);

/* Writes the header and h->count rows (from rows, (count, 6912) uint8) into out (cap bytes). Returns the
 * number of bytes written (> 0), or a negative enum frame_status with err (FRAME_ERR_MAX bytes, may be NULL). */
long frame_encode(const struct frame_header *h, const uint8_t *rows, uint8_t *out, size_t cap, char *err);

/* Parses buf (len bytes): fills h and points *rows at the first row inside buf. FRAME_OK or a negative status
 * with a message naming the field and its limit. */
int frame_decode(const uint8_t *buf, size_t len, struct frame_header *h, const uint8_t **rows, char *err);

#endif
