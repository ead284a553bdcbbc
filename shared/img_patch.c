/* img_patch — the last step of Gemma 4's image processor and the whole pipeline in one call.
 *
 * The processor cuts the resized image into 16-px patches (HWC), then merges each 3 x 3 group back into one
 * 48-px patch (patches_merge). The result is simply every 48 x 48 block of the resized image, flattened in
 * (row, column, channel) order — element (r * 48 + c) * 3 + ch — in row-major order over the 48-px grid,
 * with position (x, y) = (block column, block row). Rescaling by 1/255 happens on the GPU side: rows stay
 * uint8, which is exactly what the processor's pixel_values hold times 255.
 *
 * Padding to max_soft_tokens rows (zeros, positions (-1, -1)) is the engine's business and is not done here.
 * No stdio streams; allocation only within img.h's limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "img.h"

void img_patches_free(struct img_patches *p)
{
    if (!p) return;
    free(p->rows);
    free(p->pos);
    memset(p, 0, sizeof *p);
}

/* (h, w, 3) with h, w multiples of 48 -> rows (n, 6912) and pos (n, 2). */
int img_patchify(const uint8_t *px, int h, int w, struct img_patches *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!px || h <= 0 || w <= 0 || h % IMG_PATCH || w % IMG_PATCH) {
        if (err) snprintf(err, IMG_ERR_MAX, "patchify: %d x %d is not a positive multiple of %d", w, h, IMG_PATCH);
        return IMG_E_ARG;
    }
    const int gw = w / IMG_PATCH, gh = h / IMG_PATCH;
    if ((long long)gw * gh > IMG_MAX_SOFT_TOKENS) {
        if (err) snprintf(err, IMG_ERR_MAX, "patchify: %d patches is more than the limit %d", gw * gh,
                          IMG_MAX_SOFT_TOKENS);
        return IMG_E_LIMIT;
    }
    const int n = gw * gh;
    out->rows = malloc((size_t)n * IMG_ROW_BYTES);
    out->pos = malloc((size_t)n * 2 * sizeof *out->pos);
    if (!out->rows || !out->pos) {
        img_patches_free(out);
        if (err) snprintf(err, IMG_ERR_MAX, "patchify: out of memory");
        return IMG_E_NOMEM;
    }
    const size_t stride = (size_t)w * 3;
    const size_t block_line = IMG_PATCH * 3;
    for (int gy = 0; gy < gh; gy++) {
        for (int gx = 0; gx < gw; gx++) {
            const int k = gy * gw + gx;
            uint8_t *row = out->rows + (size_t)k * IMG_ROW_BYTES;
            const uint8_t *src = px + (size_t)gy * IMG_PATCH * stride + (size_t)gx * block_line;
            for (int r = 0; r < IMG_PATCH; r++) memcpy(row + r * block_line, src + r * stride, block_line);
            out->pos[2 * k] = gx;
            out->pos[2 * k + 1] = gy;
        }
    }
    out->n = n;
    out->grid_w = gw;
    out->grid_h = gh;
    out->resized_w = w;
    out->resized_h = h;
    return IMG_OK;
}

/* Decode -> target size -> resize (skipped when the size already fits) -> patchify. */
int img_process(const uint8_t *data, size_t len, int max_soft_tokens, struct img_patches *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!img_budget_ok(max_soft_tokens)) {
        if (err) snprintf(err, IMG_ERR_MAX, "max_soft_tokens must be one of 70, 140, 280, 560, 1120 (got %d)",
                          max_soft_tokens);
        return IMG_E_ARG;
    }
    struct img_rgb im = {0};
    uint8_t *resized = NULL;
    int th = 0, tw = 0;
    int rc = img_decode(data, len, &im, err);
    if (rc != IMG_OK) return rc;
    rc = img_target_size(im.h, im.w, max_soft_tokens, &th, &tw, err);
    if (rc != IMG_OK) goto free_image;
    const uint8_t *px = im.px;
    if (th != im.h || tw != im.w) {
        resized = malloc((size_t)th * tw * 3);
        if (!resized) {
            if (err) snprintf(err, IMG_ERR_MAX, "resize: out of memory");
            rc = IMG_E_NOMEM;
            goto free_image;
        }
        rc = img_resize(im.px, im.h, im.w, resized, th, tw, err);
        if (rc != IMG_OK) goto free_resized;
        px = resized;
    }
    rc = img_patchify(px, th, tw, out, err);
    out->src_w = im.w;
    out->src_h = im.h;
free_resized:
    free(resized);
free_image:
    img_rgb_free(&im);
    return rc;
}
