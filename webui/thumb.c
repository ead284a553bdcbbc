/* thumb — BMP data-URL previews from patch rows (see thumb.h). The resized image is never materialised:
 * each thumbnail pixel averages its box of the resized image, reading each source pixel from its patch. */
#include "thumb.h"

#include <stdlib.h>
#include <string.h>

#include "wbuf.h"

#define PATCH 48

void thumb_size(int grid_w, int grid_h, int max_side, int *w, int *h)
{
    long W = (long)grid_w * PATCH, H = (long)grid_h * PATCH, side = W > H ? W : H;
    if (side <= max_side) {
        *w = (int)W, *h = (int)H;
        return;
    }
    *w = (int)(W * max_side / side);
    *h = (int)(H * max_side / side);
    if (*w < 1) *w = 1;
    if (*h < 1) *h = 1;
}

/* Little-endian 16/32-bit stores for the BMP header. */
static void le16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void le32(uint8_t *p, unsigned long v) { le16(p, (unsigned)(v & 0xffff)), le16(p + 2, (unsigned)(v >> 16)); }

char *thumb_data_url(const uint8_t *rows, int grid_w, int grid_h, int max_side)
{
    int w, h;
    if (grid_w <= 0 || grid_h <= 0 || !rows) return NULL;
    thumb_size(grid_w, grid_h, max_side, &w, &h);
    long W = (long)grid_w * PATCH, H = (long)grid_h * PATCH;
    size_t stride = ((size_t)w * 3 + 3) & ~(size_t)3, size = 54 + stride * (size_t)h;
    uint8_t *bmp = calloc(1, size);
    if (!bmp) abort();
    bmp[0] = 'B', bmp[1] = 'M';
    le32(bmp + 2, size);
    le32(bmp + 10, 54);
    le32(bmp + 14, 40);
    le32(bmp + 18, (unsigned long)w);
    le32(bmp + 22, (unsigned long)h); /* positive: rows bottom-up */
    le16(bmp + 26, 1);
    le16(bmp + 28, 24);
    le32(bmp + 34, stride * (size_t)h);
    for (int ty = 0; ty < h; ty++) {
        long y0 = ty * H / h, y1 = (ty + 1) * H / h;
        uint8_t *out = bmp + 54 + (size_t)(h - 1 - ty) * stride;
        for (int tx = 0; tx < w; tx++) {
            long x0 = tx * W / w, x1 = (tx + 1) * W / w;
            unsigned long sum[3] = {0, 0, 0}, cnt = 0;
            for (long y = y0; y < y1; y++)
                for (long x = x0; x < x1; x++) {
                    const uint8_t *px = rows + ((size_t)(y / PATCH) * (size_t)grid_w + (size_t)(x / PATCH)) *
                                                   PATCH * PATCH * 3 +
                                        ((size_t)(y % PATCH) * PATCH + (size_t)(x % PATCH)) * 3;
                    sum[0] += px[0], sum[1] += px[1], sum[2] += px[2];
                    cnt++;
                }
            for (int k = 0; k < 3; k++) out[tx * 3 + 2 - k] = (uint8_t)((sum[k] + cnt / 2) / cnt); /* BGR */
        }
    }
    struct wbuf b = {0};
    wbuf_str(&b, "data:image/bmp;base64,");
    wbuf_base64(&b, bmp, size);
    free(bmp);
    return wbuf_take(&b);
}
