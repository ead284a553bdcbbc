/* test_web_dash — the dashboard's numbers and pixels (webui/dash.c): nice axis tops, value-to-row mapping,
 * the ring of snapshots, windowed draft-acceptance and cache-hit rates, a restart clearing the history, and
 * a drawn chart holding its line where the mapping says; plus the patch thumbnails (webui/thumb.c) decoded
 * back from their BMP data URLs. */
#include <math.h>

#include "dash.h"
#include "test.h"
#include "thumb.h"
#include "web_fake_plat.h"

static void test_nice_max(void)
{
    EXPECT(dash_nice_max(0) == 1 && dash_nice_max(-3) == 1 && dash_nice_max(NAN) == 1);
    EXPECT(dash_nice_max(1) == 1 && dash_nice_max(1.01) == 2 && dash_nice_max(2.2) == 2.5);
    EXPECT(dash_nice_max(3) == 5 && dash_nice_max(7) == 10 && dash_nice_max(180.2) == 200);
    EXPECT(dash_nice_max(240) == 250 && dash_nice_max(0.03) == 0.05 && dash_nice_max(12000) == 20000);
    for (double v = 0.001; v < 1e6; v *= 1.37) EXPECTF(dash_nice_max(v) >= v && dash_nice_max(v) < 2.5 * v, "v=%g", v);
}

static void test_rows(void)
{
    int h = 150;
    EXPECT(dash_row(0, 100, h) == h - 1 - 6);  /* zero sits on the bottom margin */
    EXPECT(dash_row(100, 100, h) == 6);        /* the axis top on the top margin */
    EXPECT(dash_row(50, 100, h) == (6 + h - 7) / 2 || dash_row(50, 100, h) == (6 + h - 7 + 1) / 2);
    EXPECT(dash_row(500, 100, h) == 6 && dash_row(-5, 100, h) == h - 7); /* clamped */
}

static void snap(struct dash *d, double t, double decode, double reqs, double hits, double prop, double acc)
{
    struct dash_snap s = {.time = t, .decode_tps = decode, .requests = reqs, .cache_hits = hits,
                          .drafts_proposed = prop, .drafts_accepted = acc, .kv_usage = 0.5, .streams_max = 16};
    dash_add(d, &s);
}

static void test_rates_and_ring(void)
{
    static struct dash d;
    dash_init(&d, 0);
    EXPECT(isnan(dash_last(&d, DS_DECODE)));
    snap(&d, 0, 0, 0, 0, 0, 0);
    EXPECT(isnan(dash_last(&d, DS_CACHE)) && isnan(dash_last(&d, DS_DRAFT)));
    snap(&d, 0.4, 10, 10, 5, 100, 80);   /* 50 % hits, 80 % accepted so far */
    EXPECT(fabsf(dash_last(&d, DS_CACHE) - 50) < 1e-4 && fabsf(dash_last(&d, DS_DRAFT) - 80) < 1e-4);
    for (int i = 2; i < 40; i++) snap(&d, i * 0.4, 10, 10, 5, 100, 80);
    snap(&d, 40 * 0.4, 10, 20, 15, 200, 100); /* in the last 10 s: 10 requests, 10 hits; 100 proposed, 20 accepted */
    EXPECT(fabsf(dash_last(&d, DS_CACHE) - 100) < 1e-4);
    EXPECT(fabsf(dash_last(&d, DS_DRAFT) - 20) < 1e-4);
    EXPECT(dash_last(&d, DS_KV) == 50);
    for (int i = 41; i < DASH_SAMPLES + 100; i++) snap(&d, i * 0.4, i, 20, 15, 200, 100);
    EXPECT(d.n == DASH_SAMPLES && dash_last(&d, DS_DECODE) == DASH_SAMPLES + 99);
    snap(&d, 1.0, 7, 0, 0, 0, 0); /* time went back: the server restarted */
    EXPECT(d.n == 1 && dash_last(&d, DS_DECODE) == 7);
}

static void test_drawing(void)
{
    static struct dash d;
    uint8_t col[3], bg[3];
    dash_init(&d, 0);
    for (int i = 0; i < 50; i++) snap(&d, i * 0.4, 90, 0, 0, 0, 0); /* a flat 90 tok/s */
    double top = dash_draw(&d, DC_TOKENS);
    EXPECT(top == 100);
    dash_color(0, DS_DECODE, col);
    dash_color(0, DS_N, bg);
    int row = dash_row(90, top, DASH_H), x = DASH_W - 20, hits = 0;
    const uint8_t *p = d.px + ((size_t)row * DASH_W + (size_t)x) * 4;
    EXPECT(p[0] == col[0] && p[1] == col[1] && p[2] == col[2] && p[3] == 255);
    for (int y = 0; y < DASH_H; y++) { /* this column has the line only around row */
        const uint8_t *q = d.px + ((size_t)y * DASH_W + (size_t)x) * 4;
        if (q[0] == col[0] && q[1] == col[1] && q[2] == col[2]) {
            hits++;
            EXPECT(y >= row && y <= row + 1);
        }
    }
    EXPECT(hits >= 1 && hits <= 2);
    p = d.px + ((size_t)row * DASH_W + 2) * 4; /* left of the first snapshot: nothing drawn */
    EXPECT(p[0] == bg[0] && p[1] == bg[1] && p[2] == bg[2]);
    d.dark = 1;
    dash_draw(&d, DC_TOKENS);
    dash_color(1, DS_N, bg);
    EXPECT(d.px[0] == bg[0] && d.px[1] == bg[1] && d.px[2] == bg[2]);
    dash_render(&d);
    EXPECT(fake.canvases == DC_N && !strcmp(fake_get(fake.el, "v-decode"), "90.0"));
    EXPECT_STR_HAS(fake_get(fake.el, "a-tokens"), "0 – 100 tok/s");
}

/* Decodes base64 (the test's own decoder). */
static size_t unb64(const char *s, uint8_t *out)
{
    size_t n = 0;
    unsigned v = 0;
    int bits = 0;
    for (; *s && *s != '='; s++) {
        const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", *c = strchr(t, *s);
        v = v << 6 | (unsigned)(c - t);
        bits += 6;
        if (bits >= 8) out[n++] = (uint8_t)(v >> (bits -= 8));
    }
    return n;
}

static void test_thumbnail(void)
{
    /* a 4 x 2 patch image: each patch one colour (patch k: r = 10k, g = 255 - 10k, b = 7) */
    static uint8_t rows[8 * 6912], bmp[80000];
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 48 * 48; i++) rows[k * 6912 + i * 3] = (uint8_t)(10 * k), rows[k * 6912 + i * 3 + 1] = (uint8_t)(255 - 10 * k), rows[k * 6912 + i * 3 + 2] = 7;
    char *url = thumb_data_url(rows, 4, 2, 64);
    EXPECT(!strncmp(url, "data:image/bmp;base64,", 22));
    size_t n = unb64(url + 22, bmp);
    int w = bmp[18] | bmp[19] << 8, h = bmp[22] | bmp[23] << 8;
    EXPECT(bmp[0] == 'B' && bmp[1] == 'M' && w == 64 && h == 32 && bmp[28] == 24);
    EXPECT(n == (size_t)(54 + 64 * 3 * 32));
    /* the top-left thumbnail pixel is patch 0; the bottom-right is patch 7 (rows stored bottom-up, BGR) */
    const uint8_t *top_left = bmp + 54 + (size_t)31 * 64 * 3, *bottom_right = bmp + 54 + 63 * 3;
    EXPECT(top_left[2] == 0 && top_left[1] == 255 && top_left[0] == 7);
    EXPECT(bottom_right[2] == 70 && bottom_right[1] == 185 && bottom_right[0] == 7);
    free(url);
    int tw, th;
    thumb_size(1, 3, 64, &tw, &th);
    EXPECT(tw == 21 && th == 64);
    thumb_size(1, 1, 64, &tw, &th);
    EXPECT(tw == 48 && th == 48); /* never enlarged */
    EXPECT(thumb_data_url(rows, 0, 2, 64) == NULL);
}

int main(void)
{
    fake_reset(0);
    RUN_TEST(test_nice_max);
    RUN_TEST(test_rows);
    RUN_TEST(test_rates_and_ring);
    RUN_TEST(test_drawing);
    RUN_TEST(test_thumbnail);
    return test_report();
}
