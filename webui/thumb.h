/* thumb — a small preview of an image as the model will see it, made from its 48-pixel patches: the resized
 * image reassembled from the (n, 48, 48, 3) rows and box-filtered down, written as a 24-bit BMP data URL
 * ("data:image/bmp;base64,..."), which the page shows in an <img> and keeps in the conversation.
 *
 * Runs in the image worker (linked into build/web/g4img.wasm) and natively for tests. What it must not do:
 * read outside the rows it is given (grid_w * grid_h patches). */
#ifndef G4_WEB_THUMB_H
#define G4_WEB_THUMB_H

#include <stdint.h>

#define THUMB_MAX_SIDE 64

/* The data URL (malloc'd, caller frees) of the grid_w x grid_h patches in rows, scaled so that its longer side
 * is at most max_side pixels (and at least 1 pixel per side); NULL when the grid is empty. */
char *thumb_data_url(const uint8_t *rows, int grid_w, int grid_h, int max_side);

/* The thumbnail's size for a grid (what thumb_data_url writes). */
void thumb_size(int grid_w, int grid_h, int max_side, int *w, int *h);

#endif
