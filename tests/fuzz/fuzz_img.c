/* fuzz_img — libFuzzer target: arbitrary bytes through the whole image pipeline (sniff, decode, EXIF,
 * resize, patchify) at a budget chosen by the first byte. Must never crash, leak or read out of bounds;
 * refusals are fine. Built and run by tests/fuzz/run.sh (`make fuzz`). */
#include <stddef.h>
#include <stdint.h>

#include "img.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* mostly the smallest budget: more executions per second for the same decoder coverage */
    static const int budgets[8] = {70, 70, 70, 140, 70, 70, 280, 1120};
    if (size < 1) return 0;
    struct img_patches p;
    char err[IMG_ERR_MAX];
    if (img_process(data + 1, size - 1, budgets[data[0] & 7], &p, err) == IMG_OK) {
        /* touch every output byte so a bad length would show */
        unsigned sum = 0;
        for (size_t i = 0; i < (size_t)p.n * IMG_ROW_BYTES; i += 97) sum += p.rows[i];
        for (int i = 0; i < 2 * p.n; i++) sum += (unsigned)p.pos[i];
        (void)sum;
        img_patches_free(&p);
    }
    return 0;
}
