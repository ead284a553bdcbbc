/* prefill — prompt chunking and image splicing over the engine API (see prefill.h). */
#include "engine/prefill.h"

#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/util.h"

int prefill_chunk_end(const int32_t *ids, int n, int start, int32_t image_token, int target)
{
    int end = start + target < n ? start + target : n;
    if (ids[start] == image_token) {            /* a chunk that opens on an image holds all of it */
        while (end < n && ids[end] == image_token && end - start < ENGINE_MAX_CHUNK) end++;
        return end;
    }
    if (end < n && ids[end] == image_token && ids[end - 1] == image_token) {
        int cut = end;
        while (cut > start && ids[cut - 1] == image_token) cut--;
        end = cut;                               /* stop before the image the chunk would cut */
    }
    return end;
}

int prefill_next_end(const int32_t *ids, int n, int start, int32_t image_token, int alone)
{
    if (alone) {
        int end = prefill_chunk_end(ids, n, start, image_token, ENGINE_SOLO_CHUNK_ROWS), i = start;
        while (i < end && ids[i] != image_token) i++;
        if (i == end) return end;
    }
    return prefill_chunk_end(ids, n, start, image_token, ENGINE_CHUNK_ROWS);
}

int prefill_image_blocks(const int32_t *ids, int n, int32_t image_token, const struct prefill_image *imgs,
                         int n_imgs, int *block, char *err)
{
    int run = -1;
    for (int i = 0; i < n; i++) {
        if (ids[i] != image_token) {
            block[i] = -1;
            continue;
        }
        if (i == 0 || ids[i - 1] != image_token) {
            int len = 0;
            while (i + len < n && ids[i + len] == image_token) len++;
            if (++run >= n_imgs)
                return g4_errf(err, "the prompt has more image placeholder runs than the %d image(s) given", n_imgs);
            if (len != imgs[run].n)
                return g4_errf(err, "image %d: its placeholder run has %d tokens but the image has %d soft tokens",
                               run, len, imgs[run].n);
        }
        block[i] = run;
    }
    if (run + 1 != n_imgs)
        return g4_errf(err, "%d image(s) given but the prompt has %d image placeholder run(s)", n_imgs, run + 1);
    return 0;
}

int prefill_run(struct engine *e, int stream, const int32_t *ids, int n, const struct prefill_image *imgs,
                int n_imgs, int chunk_rows, float *logits, int all_rows, char *err)
{
    const struct g4_model *m = engine_model(e);
    int H = m->cfg.text.hidden, V = m->cfg.text.vocab, rc = -1;
    int32_t image_token = m->cfg.image_token_id;
    int *block = g4_malloc((size_t)n * sizeof *block);
    float *rows = NULL;
    size_t total = 0, *first = g4_calloc((size_t)n_imgs + 1, sizeof *first);
    if (prefill_image_blocks(ids, n, image_token, imgs, n_imgs, block, err)) goto done;
    for (int i = 0; i < n_imgs; i++) {
        first[i] = total;
        total += (size_t)imgs[i].n;
    }
    if (total) {
        rows = g4_malloc(total * H * sizeof *rows);
        for (int i = 0; i < n_imgs; i++)
            if (engine_embed_image(e, imgs[i].patches, imgs[i].positions, imgs[i].n, rows + first[i] * H, err))
                goto done;
    }
    for (int start = 0, img_row = 0; start < n;) {
        int end = chunk_rows ? prefill_chunk_end(ids, n, start, image_token, chunk_rows)
                             : prefill_next_end(ids, n, start, image_token, 1);
        int n_img = 0;
        struct engine_item it = {0};
        for (int i = start; i < end; i++) n_img += block[i] >= 0;
        it.stream = stream;
        it.n = end - start;
        it.tokens = ids + start;
        it.image_block = total ? block + start : NULL;
        it.image_rows = n_img ? rows + (size_t)img_row * H : NULL;
        it.n_image_rows = n_img;
        if (logits && all_rows) {
            it.logits = logits + (size_t)start * V;
            it.logits_from = 0;
        } else if (logits && end == n) {
            it.logits = logits;
            it.logits_from = it.n - 1;
        }
        if (engine_step(e, &it, 1, err)) goto done;
        img_row += n_img;
        start = end;
    }
    rc = 0;
done:
    free(block);
    free(rows);
    free(first);
    return rc;
}
