/* test_frame — the image-patch frame codec: round trips (one frame and split), and a decoder that refuses
 * every header that lies — short, wrong magic, other version, flags, empty or oversized grid, first/count
 * outside the image, trailing bytes — plus every single-byte corruption of a header (refused or parsed
 * consistently, never read out of bounds: the ASan build checks that part). */
#include <stdint.h>

#include "frame.h"
#include "test.h"

static uint8_t *rows_for(uint32_t count)
{
    uint8_t *r = malloc((size_t)count * FRAME_ROW_BYTES);
    for (size_t i = 0; i < (size_t)count * FRAME_ROW_BYTES; i++) r[i] = (uint8_t)(i * 31 + i / 6912);
    return r;
}

static void test_round_trip(void)
{
    struct frame_header h = {0xdeadbeef, 7, 5, 0, 35};
    uint8_t *rows = rows_for(35);
    size_t n = frame_size(35);
    EXPECT(n == 24 + 35 * 6912);
    uint8_t *buf = malloc(n);
    char err[FRAME_ERR_MAX] = "";
    EXPECT(frame_encode(&h, rows, buf, n, err) == (long)n);
    EXPECT(!memcmp(buf, "G4IP", 4) && buf[4] == 1 && buf[5] == 0);
    EXPECT(buf[8] == 0xef && buf[11] == 0xde && buf[12] == 7 && buf[14] == 5 && buf[20] == 35);
    struct frame_header d;
    const uint8_t *drows = NULL;
    EXPECT(frame_decode(buf, n, &d, &drows, err) == FRAME_OK);
    EXPECT(d.image_id == 0xdeadbeef && d.grid_w == 7 && d.grid_h == 5 && d.first == 0 && d.count == 35);
    EXPECT(drows == buf + 24 && !memcmp(drows, rows, 35 * 6912));
    EXPECT(frame_encode(&h, rows, buf, n - 1, err) == FRAME_E_SPACE);
    free(buf);
    free(rows);
}

static void test_split_frames(void)
{
    /* an image of 1 x 1120 patches in frames of 100 rows: every frame decodes to its slice */
    uint8_t *rows = rows_for(1120);
    uint8_t *buf = malloc(frame_size(100));
    int bad = 0;
    for (uint32_t first = 0; first < 1120; first += 100) {
        uint32_t count = first + 100 <= 1120 ? 100 : 1120 - first;
        struct frame_header h = {9, 1, 1120, first, count}, d;
        const uint8_t *r;
        long n = frame_encode(&h, rows + (size_t)first * FRAME_ROW_BYTES, buf, frame_size(100), NULL);
        bad += n != (long)frame_size(count);
        bad += frame_decode(buf, (size_t)n, &d, &r, NULL) != FRAME_OK || d.first != first || d.count != count;
        bad += memcmp(r, rows + (size_t)first * FRAME_ROW_BYTES, (size_t)count * FRAME_ROW_BYTES) != 0;
    }
    EXPECT(bad == 0);
    free(buf);
    free(rows);
}

/* A valid 2 x 2 frame header + 4 rows, then one field rewritten: the decoder must refuse with want. */
static void expect_refused(const char *what, size_t off, uint32_t value, int width, size_t len_delta, int want)
{
    uint8_t *rows = rows_for(4);
    struct frame_header h = {1, 2, 2, 0, 4};
    size_t n = frame_size(4);
    uint8_t *buf = calloc(1, n + 16);
    frame_encode(&h, rows, buf, n, NULL);
    for (int i = 0; i < width; i++) buf[off + i] = (uint8_t)(value >> (8 * i));
    struct frame_header d;
    const uint8_t *r = (const uint8_t *)1;
    char err[FRAME_ERR_MAX] = "";
    int rc = frame_decode(buf, n + len_delta, &d, &r, err);
    EXPECTF(rc == want && r == NULL && err[0], "%s: rc %d (want %d): %s", what, rc, want, err);
    free(buf);
    free(rows);
}

static void test_lying_headers(void)
{
    expect_refused("magic", 0, 0x50493448u /* "H4IP" */, 4, 0, FRAME_E_MAGIC);
    expect_refused("version 2", 4, 2, 2, 0, FRAME_E_VERSION);
    expect_refused("version 0", 4, 0, 2, 0, FRAME_E_VERSION);
    expect_refused("flags", 6, 1, 2, 0, FRAME_E_FIELD);
    expect_refused("grid_w 0", 12, 0, 2, 0, FRAME_E_FIELD);
    expect_refused("grid_h 0", 14, 0, 2, 0, FRAME_E_FIELD);
    expect_refused("grid_w huge", 12, 65535, 2, 0, FRAME_E_FIELD);
    expect_refused("grid product", 12, 561, 2, 0, FRAME_E_FIELD); /* 561 x 2 = 1122 > 1120 */
    expect_refused("first past end", 16, 4, 4, 0, FRAME_E_FIELD);
    expect_refused("first huge", 16, 0xffffffffu, 4, 0, FRAME_E_FIELD);
    expect_refused("count 0", 20, 0, 4, 0, FRAME_E_FIELD);
    expect_refused("count past grid", 20, 5, 4, 0, FRAME_E_FIELD);
    expect_refused("count huge", 20, 0xffffffffu, 4, 0, FRAME_E_FIELD);
    expect_refused("count 3 with 4 rows of bytes", 20, 3, 4, 0, FRAME_E_LENGTH);
    expect_refused("one byte short", 0, 'G', 1, (size_t)-1, FRAME_E_SHORT);
    expect_refused("trailing byte", 0, 'G', 1, 1, FRAME_E_LENGTH);
    struct frame_header d;
    EXPECT(frame_decode(NULL, 0, &d, NULL, NULL) == FRAME_E_SHORT);
    EXPECT(frame_decode((const uint8_t *)"G4IP", 4, &d, NULL, NULL) == FRAME_E_SHORT);
    struct frame_header bad = {1, 0, 3, 0, 1};
    EXPECT(frame_encode(&bad, NULL, NULL, 0, NULL) == FRAME_E_FIELD);
}

static void test_every_header_byte(void)
{
    /* each header byte set to each of a few values: FRAME_OK only if the fields still describe the bytes */
    uint8_t *rows = rows_for(6);
    struct frame_header h = {77, 3, 2, 0, 6};
    size_t n = frame_size(6);
    uint8_t *orig = malloc(n), *buf = malloc(n);
    frame_encode(&h, rows, orig, n, NULL);
    int inconsistent = 0;
    static const uint8_t vals[] = {0, 1, 2, 6, 7, 0x7f, 0x80, 0xff};
    for (size_t off = 0; off < FRAME_HEADER_BYTES; off++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(buf, orig, n);
            buf[off] = vals[v];
            struct frame_header d;
            const uint8_t *r;
            if (frame_decode(buf, n, &d, &r, NULL) == FRAME_OK) {
                uint32_t total = (uint32_t)d.grid_w * d.grid_h;
                inconsistent += d.count < 1 || d.first >= total || d.first + d.count > total ||
                                frame_size(d.count) != n || r != buf + 24;
            }
        }
    }
    EXPECT(inconsistent == 0);
    free(orig);
    free(buf);
    free(rows);
}

int main(void)
{
    RUN_TEST(test_round_trip);
    RUN_TEST(test_split_frames);
    RUN_TEST(test_lying_headers);
    RUN_TEST(test_every_header_byte);
    return test_report();
}
