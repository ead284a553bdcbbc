/* fuzz_frame — libFuzzer target: arbitrary bytes into the frame decoder. Whatever it accepts must be
 * self-consistent (rows inside the buffer, fields within limits) and re-encode to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct frame_header h;
    const uint8_t *rows;
    char err[FRAME_ERR_MAX];
    if (frame_decode(data, size, &h, &rows, err) != FRAME_OK) return 0;
    uint32_t total = (uint32_t)h.grid_w * h.grid_h;
    if (total > FRAME_MAX_PATCHES || h.count < 1 || h.first + h.count > total || frame_size(h.count) != size ||
        rows != data + FRAME_HEADER_BYTES)
        abort();
    uint8_t *again = malloc(size);
    if (!again) return 0;
    if (frame_encode(&h, rows, again, size, err) != (long)size || memcmp(again, data, size)) abort();
    free(again);
    return 0;
}
