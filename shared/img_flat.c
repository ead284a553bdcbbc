/* img_flat — the handle API of img_flat.h: img_process and frame_encode behind pointers and integers.
 *
 * The only file in shared/ with static state (the last error), which is why it stays out of the native
 * server's paths. Must not print or abort: failures are NULL / negative returns plus img_flat_error(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "img_flat.h"

static char last_err[IMG_ERR_MAX];
static int last_status;

struct img_patches *img_flat_process(const uint8_t *data, size_t len, int max_soft_tokens)
{
    last_err[0] = 0;
    last_status = IMG_OK;
    struct img_patches *p = calloc(1, sizeof *p);
    if (!p) {
        last_status = IMG_E_NOMEM;
        snprintf(last_err, sizeof last_err, "out of memory");
        return NULL;
    }
    int rc = img_process(data, len, max_soft_tokens, p, last_err);
    if (rc != IMG_OK) {
        last_status = rc;
        free(p);
        return NULL;
    }
    return p;
}

void img_flat_free(struct img_patches *p)
{
    if (!p) return;
    img_patches_free(p);
    free(p);
}

const char *img_flat_error(void)
{
    return last_err;
}

int img_flat_status(void)
{
    return last_status;
}

int img_flat_n(const struct img_patches *p) { return p ? p->n : 0; }
int img_flat_grid_w(const struct img_patches *p) { return p ? p->grid_w : 0; }
int img_flat_grid_h(const struct img_patches *p) { return p ? p->grid_h : 0; }
int img_flat_resized_w(const struct img_patches *p) { return p ? p->resized_w : 0; }
int img_flat_resized_h(const struct img_patches *p) { return p ? p->resized_h : 0; }
int img_flat_src_w(const struct img_patches *p) { return p ? p->src_w : 0; }
int img_flat_src_h(const struct img_patches *p) { return p ? p->src_h : 0; }
const uint8_t *img_flat_rows(const struct img_patches *p) { return p ? p->rows : NULL; }
const int32_t *img_flat_positions(const struct img_patches *p) { return p ? p->pos : NULL; }

size_t img_flat_frame_size(uint32_t count)
{
    return frame_size(count);
}

long img_flat_frame(const struct img_patches *p, uint32_t image_id, uint32_t first, uint32_t count, uint8_t *out,
                    size_t cap)
{
    last_err[0] = 0;
    last_status = IMG_OK;
    if (!p || first > (uint32_t)p->n || count > (uint32_t)p->n - first) {
        last_status = IMG_E_ARG;
        snprintf(last_err, sizeof last_err, "frame: rows [%u, +%u) outside the image's %d patches", (unsigned)first,
                 (unsigned)count, p ? p->n : 0);
        return IMG_E_ARG;
    }
    struct frame_header h = {image_id, (uint16_t)p->grid_w, (uint16_t)p->grid_h, first, count};
    long n = frame_encode(&h, p->rows + (size_t)first * IMG_ROW_BYTES, out, cap, last_err);
    if (n < 0) last_status = IMG_E_ARG;
    return n;
}
