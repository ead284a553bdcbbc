/* test_prefill — how a prompt is cut into chunks (prefill_chunk_end, prefill_next_end) and how its image
 * placeholder runs are matched to the images (prefill_image_blocks), on made-up token ids: no model.
 *
 * The cuts decide how many passes a prompt takes, so they decide its first token's time; they must never
 * split an image, and a chunk longer than ENGINE_CHUNK_ROWS is allowed only to hold a whole image or, in a
 * step of its own, ENGINE_SOLO_CHUNK_ROWS rows of text. */
#include <stdint.h>

#include "engine/prefill.h"
#include "test.h"
#include "util/util.h"

#define IMG 99 /* the image placeholder id in these prompts */

/* Fills ids with runs: text rows (id 1) and image rows (IMG), given as (kind, length) pairs; returns n. */
static int make_prompt(int32_t *ids, const int *runs, int n_runs)
{
    int n = 0;
    for (int r = 0; r < n_runs; r++)
        for (int i = 0; i < runs[2 * r + 1]; i++) ids[n++] = runs[2 * r] ? IMG : 1;
    return n;
}

static void test_text_chunks(void)
{
    static int32_t ids[2000];
    const int runs[] = {0, 2000};
    int n = make_prompt(ids, runs, 1);
    EXPECT(prefill_chunk_end(ids, n, 0, IMG, ENGINE_CHUNK_ROWS) == 512);
    EXPECT(prefill_chunk_end(ids, n, 1800, IMG, ENGINE_CHUNK_ROWS) == 2000);
    EXPECT(prefill_next_end(ids, n, 0, IMG, 0) == 512);                  /* beside other rows: 512 */
    EXPECT(prefill_next_end(ids, n, 0, IMG, 1) == ENGINE_SOLO_CHUNK_ROWS); /* alone: 1024 */
    EXPECT(prefill_next_end(ids, n, 1024, IMG, 1) == 2000);
    EXPECT(prefill_next_end(ids, 1000, 0, IMG, 1) == 1000);             /* a 1,000-token prompt in one pass */
}

static void test_image_chunks(void)
{
    static int32_t ids[2000];
    const int after300[] = {0, 300, 1, 280, 0, 700}, after700[] = {0, 700, 1, 280, 0, 100},
              big[] = {1, 1120, 0, 600};
    int n = make_prompt(ids, after300, 3);
    /* 300 text rows, an image at 300..580, 700 text rows */
    EXPECT(prefill_chunk_end(ids, n, 0, IMG, ENGINE_CHUNK_ROWS) == 300);  /* stops before the image */
    EXPECT(prefill_chunk_end(ids, n, 300, IMG, ENGINE_CHUNK_ROWS) == 812); /* opens on it: 512 rows */
    EXPECT(prefill_chunk_end(ids, n, 300, IMG, 100) == 580);             /* the whole image, past the target */
    EXPECT(prefill_next_end(ids, n, 0, IMG, 1) == 300);                  /* alone, but the window holds the image */
    EXPECT(prefill_next_end(ids, n, 300, IMG, 1) == 812);
    EXPECT(prefill_next_end(ids, n, 812, IMG, 1) == n);                  /* the text after it: one pass */
    /* 700 text rows, then the image: the solo window would hold it, so 512 */
    n = make_prompt(ids, after700, 3);
    EXPECT(prefill_next_end(ids, n, 0, IMG, 1) == 512);
    EXPECT(prefill_next_end(ids, n, 512, IMG, 1) == 1024);               /* the image inside 512 rows */
    EXPECT(prefill_next_end(ids, n, 1024, IMG, 1) == n);
    /* the largest image: one chunk of 1,120 rows, within ENGINE_MAX_CHUNK */
    n = make_prompt(ids, big, 2);
    EXPECT(prefill_next_end(ids, n, 0, IMG, 0) == 1120);
    EXPECT(prefill_next_end(ids, n, 0, IMG, 1) == 1120);
    EXPECT(1120 <= ENGINE_MAX_CHUNK && ENGINE_SOLO_CHUNK_ROWS <= ENGINE_MAX_CHUNK);
}

static void test_image_blocks(void)
{
    static int32_t ids[700];
    const int runs[] = {0, 10, 1, 5, 0, 3, 1, 7, 0, 1};
    int n = make_prompt(ids, runs, 5), block[700];
    char err[G4_ERR_MAX] = "";
    struct prefill_image imgs[3] = {{NULL, NULL, 5}, {NULL, NULL, 7}, {NULL, NULL, 4}};
    EXPECTF(prefill_image_blocks(ids, n, IMG, imgs, 2, block, err) == 0, "%s", err);
    EXPECT(block[0] == -1 && block[9] == -1 && block[10] == 0 && block[14] == 0 && block[15] == -1);
    EXPECT(block[18] == 1 && block[24] == 1 && block[25] == -1);
    EXPECT(prefill_image_blocks(ids, n, IMG, imgs, 1, block, err) == -1);
    EXPECT_STR_HAS(err, "more image placeholder runs than the 1 image(s)");
    EXPECT(prefill_image_blocks(ids, n, IMG, imgs, 3, block, err) == -1);
    EXPECT_STR_HAS(err, "3 image(s) given but the prompt has 2");
    imgs[1].n = 6;
    EXPECT(prefill_image_blocks(ids, n, IMG, imgs, 2, block, err) == -1);
    EXPECT_STR_HAS(err, "image 1: its placeholder run has 7 tokens but the image has 6");
}

int main(void)
{
    RUN_TEST(test_text_chunks);
    RUN_TEST(test_image_chunks);
    RUN_TEST(test_image_blocks);
    return test_report();
}
