/* dash — the dashboard's history, rates and charts (see dash.h). Drawing is plain C into an RGBA buffer:
 * background, a grid (quarters of a "nice" axis top, a line every 30 s), then each series as a 2-pixel
 * polyline, the first with a light fill below it. Gaps (a missing value, or more than 5 s between
 * snapshots) break the line. */
#include "dash.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plat.h"
#include "wbuf.h"

#define MARGIN 6     /* pixels above the axis top and below zero */
#define GAP_S 5.0    /* snapshots further apart than this are not joined */

static const uint8_t PALETTE[2][DS_N + 2][3] = {
    /* light: series..., background, grid */
    {{37, 99, 235}, {217, 119, 6}, {22, 163, 74}, {220, 38, 38}, {124, 58, 237}, {219, 39, 119},
     {8, 145, 178}, {161, 98, 7}, {37, 99, 235}, {100, 116, 139}, {255, 255, 255}, {226, 232, 240}},
    /* dark */
    {{96, 165, 250}, {251, 191, 36}, {74, 222, 128}, {248, 113, 113}, {167, 139, 250}, {244, 114, 182},
     {34, 211, 238}, {250, 204, 21}, {96, 165, 250}, {148, 163, 184}, {17, 24, 39}, {51, 65, 85}},
};

static const struct {
    const char *canvas, *axis, *legend, *unit;
    int series[2], n;
    double fixed_max; /* > 0: a fixed axis (percentages) */
} CHARTS[DC_N] = {
    {"c-tokens", "a-tokens", "l-tokens", "tok/s", {DS_DECODE, DS_PREFILL}, 2, 0},
    {"c-streams", "a-streams", "l-streams", "requests", {DS_RUNNING, DS_WAITING}, 2, 0},
    {"c-ttft", "a-ttft", "l-ttft", "ms", {DS_TTFT50, DS_TTFT95}, 2, 0},
    {"c-rates", "a-rates", "l-rates", "%", {DS_DRAFT, DS_CACHE}, 2, 100},
    {"c-memory", "a-memory", "l-memory", "%", {DS_KV, 0}, 1, 100},
};

static const char *const NAMES[DS_N] = {"decode",   "prefill",        "running", "queued", "p50", "p95",
                                        "drafts accepted", "prompt-cache hits", "KV cache", "memory"};

void dash_color(int dark, int k, uint8_t rgb[3])
{
    memcpy(rgb, PALETTE[dark ? 1 : 0][k], 3);
}

void dash_init(struct dash *d, int dark)
{
    memset(d, 0, sizeof *d);
    d->dark = dark;
}

/* The slot of the i-th newest snapshot (0 = newest). */
static int slot(const struct dash *d, int i)
{
    return (d->head - 1 - i + 2 * DASH_SAMPLES) % DASH_SAMPLES;
}

float dash_last(const struct dash *d, int k)
{
    return d->n ? d->v[slot(d, 0)][k] : NAN;
}

/* A ratio of counter increases over the rate window (falling back to the whole run), in %; NaN when the
 * denominator never moved. */
static float windowed(const struct dash *d, const struct dash_snap *s, size_t num_off, size_t den_off)
{
    const struct dash_snap *old = NULL;
    for (int i = 0; i < d->n; i++) {
        const struct dash_snap *p = &d->snap[slot(d, i)];
        old = p;
        if (s->time - p->time >= DASH_RATE_WINDOW_S) break;
    }
#define FIELD(p, off) (*(const double *)((const char *)(p) + (off)))
    double num = FIELD(s, num_off), den = FIELD(s, den_off);
    if (old && den - FIELD(old, den_off) > 0) {
        num -= FIELD(old, num_off);
        den -= FIELD(old, den_off);
    }
#undef FIELD
    return den > 0 ? (float)(100.0 * num / den) : NAN;
}

void dash_add(struct dash *d, const struct dash_snap *s)
{
    if (d->n && s->time < d->snap[slot(d, 0)].time) d->n = d->head = 0; /* the server restarted */
    float *v = d->v[d->head];
    v[DS_DECODE] = (float)s->decode_tps;
    v[DS_PREFILL] = (float)s->prefill_tps;
    v[DS_RUNNING] = (float)s->running;
    v[DS_WAITING] = (float)s->waiting;
    v[DS_TTFT50] = (float)s->ttft_p50;
    v[DS_TTFT95] = (float)s->ttft_p95;
    v[DS_DRAFT] = windowed(d, s, offsetof(struct dash_snap, drafts_accepted), offsetof(struct dash_snap, drafts_proposed));
    v[DS_CACHE] = windowed(d, s, offsetof(struct dash_snap, cache_hits), offsetof(struct dash_snap, requests));
    v[DS_KV] = (float)(100.0 * s->kv_usage);
    v[DS_MEM] = (float)s->memory_bytes;
    d->snap[d->head] = *s;
    d->head = (d->head + 1) % DASH_SAMPLES;
    if (d->n < DASH_SAMPLES) d->n++;
}

double dash_nice_max(double v)
{
    static const double steps[] = {1, 2, 2.5, 5, 10};
    if (!(v > 0)) return 1; /* zero, negative or NaN: a unit axis */
    double p = pow(10, floor(log10(v)));
    for (int i = 0; i < 5; i++)
        if (steps[i] * p >= v * (1 - 1e-12)) return steps[i] * p;
    return 10 * p;
}

int dash_row(double v, double max, int h)
{
    double f = max > 0 ? v / max : 0;
    if (f < 0) f = 0;
    if (f > 1) f = 1;
    return MARGIN + (int)lround((1 - f) * (h - 1 - 2 * MARGIN));
}

/* ---- pixels -------------------------------------------------------------------------------------------- */

static void put(struct dash *d, int x, int y, const uint8_t c[3], int alpha)
{
    if (x < 0 || y < 0 || x >= DASH_W || y >= DASH_H) return;
    uint8_t *p = d->px + ((size_t)y * DASH_W + (size_t)x) * 4;
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)((c[k] * alpha + p[k] * (255 - alpha)) / 255);
    p[3] = 255;
}

/* A 2-pixel line from (x0, y0) to (x1, y1) (Bresenham, the pen one pixel right and down). */
static void line(struct dash *d, int x0, int y0, int x1, int y1, const uint8_t c[3])
{
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, dy = -(y1 > y0 ? y1 - y0 : y0 - y1);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    for (;;) {
        put(d, x0, y0, c, 255), put(d, x0 + 1, y0, c, 255), put(d, x0, y0 + 1, c, 255), put(d, x0 + 1, y0 + 1, c, 255);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

/* The x pixel of a snapshot taken at time t when the newest is at now. */
static int x_of(double t, double now)
{
    return (DASH_W - 2) - (int)lround((now - t) / DASH_WINDOW_S * (DASH_W - 2));
}

double dash_draw(struct dash *d, enum dash_chart c)
{
    uint8_t bg[3], grid[3], col[3];
    double now = d->n ? d->snap[slot(d, 0)].time : 0, top = 0;
    dash_color(d->dark, DS_N, bg);
    dash_color(d->dark, DS_N + 1, grid);
    for (size_t i = 0; i < (size_t)DASH_W * DASH_H; i++) {
        memcpy(d->px + i * 4, bg, 3);
        d->px[i * 4 + 3] = 255;
    }
    /* axis top: the largest value shown, rounded up to a nice number */
    if (CHARTS[c].fixed_max > 0) top = CHARTS[c].fixed_max;
    else {
        for (int i = 0; i < d->n; i++) {
            if (now - d->snap[slot(d, i)].time > DASH_WINDOW_S) break;
            for (int s = 0; s < CHARTS[c].n; s++) {
                float v = d->v[slot(d, i)][CHARTS[c].series[s]];
                if (v > top) top = v;
            }
        }
        top = dash_nice_max(top > 0 ? top : 1);
    }
    for (int q = 0; q <= 4; q++) {
        int y = dash_row(top * q / 4, top, DASH_H);
        for (int x = 0; x < DASH_W; x++) put(d, x, y, grid, 255);
    }
    for (double t = floor(now / 30) * 30; now - t <= DASH_WINDOW_S; t -= 30) {
        int x = x_of(t, now);
        for (int y = 0; y < DASH_H; y++) put(d, x, y, grid, 160);
    }
    for (int s = CHARTS[c].n - 1; s >= 0; s--) {
        int k = CHARTS[c].series[s], px = -1, py = -1;
        double pt = 0;
        dash_color(d->dark, k, col);
        for (int i = d->n - 1; i >= 0; i--) { /* oldest first */
            const float v = d->v[slot(d, i)][k];
            double t = d->snap[slot(d, i)].time;
            if (now - t > DASH_WINDOW_S + 1 || isnan(v)) {
                px = -1;
                continue;
            }
            int x = x_of(t, now), y = dash_row(v, top, DASH_H);
            if (s == 0) /* a light fill under the first series */
                for (int yy = y + 1; yy <= dash_row(0, top, DASH_H); yy++) put(d, x, yy, col, 40), put(d, x + 1, yy, col, 40);
            if (px >= 0 && t - pt <= GAP_S) line(d, px, py, x, y, col);
            else line(d, x, y, x, y, col);
            px = x, py = y, pt = t;
        }
    }
    return top;
}

/* ---- numbers ------------------------------------------------------------------------------------------- */

static void fmt(char *out, size_t cap, float v, const char *unit, int decimals)
{
    if (isnan(v)) snprintf(out, cap, "—");
    else if (!strcmp(unit, "B")) {
        if (v <= 0) snprintf(out, cap, "—");
        else if (v >= 1e9f) snprintf(out, cap, "%.2f GB", v / 1e9);
        else snprintf(out, cap, "%.0f MB", v / 1e6);
    } else snprintf(out, cap, "%.*f%s", decimals, (double)v, unit);
}

void dash_render(struct dash *d)
{
    static const struct {
        const char *id, *unit;
        int series, decimals;
    } NUMS[] = {
        {"v-decode", "", DS_DECODE, 1},  {"v-prefill", "", DS_PREFILL, 1},  {"v-running", "", DS_RUNNING, 0},
        {"v-waiting", "", DS_WAITING, 0}, {"v-ttft50", " ms", DS_TTFT50, 0}, {"v-ttft95", " ms", DS_TTFT95, 0},
        {"v-draft", " %", DS_DRAFT, 0},   {"v-cache", " %", DS_CACHE, 0},   {"v-kv", " %", DS_KV, 1},
        {"v-mem", "B", DS_MEM, 0},
    };
    char text[96];
    struct wbuf b = {0};
    uint8_t col[3];
    for (size_t i = 0; i < sizeof NUMS / sizeof NUMS[0]; i++) {
        fmt(text, sizeof text, dash_last(d, NUMS[i].series), NUMS[i].unit, NUMS[i].decimals);
        plat_text(NUMS[i].id, text);
    }
    if (d->n) {
        const struct dash_snap *s = &d->snap[slot(d, 0)];
        snprintf(text, sizeof text, "of %.0f streams", s->streams_max);
        plat_text("v-streams-max", text);
        snprintf(text, sizeof text, "%.0f", s->connections);
        plat_text("v-conns", text);
        snprintf(text, sizeof text, "%.0f", s->requests);
        plat_text("v-requests", text);
        snprintf(text, sizeof text, "%.0f", s->generated_tokens);
        plat_text("v-generated", text);
        snprintf(text, sizeof text, "server up %.0f s · %d snapshots", s->time, d->n);
        plat_text("v-time", text);
    }
    for (int c = 0; c < DC_N; c++) {
        double top = dash_draw(d, (enum dash_chart)c);
        plat_canvas(CHARTS[c].canvas, d->px, DASH_W, DASH_H);
        snprintf(text, sizeof text, "0 – %g %s · last %.0f s", top, CHARTS[c].unit, DASH_WINDOW_S);
        plat_text(CHARTS[c].axis, text);
        wbuf_reset(&b);
        for (int s = 0; s < CHARTS[c].n; s++) {
            int k = CHARTS[c].series[s];
            dash_color(d->dark, k, col);
            wbuf_printf(&b, "<span><i style=\"background:#%02x%02x%02x\"></i>%s</span>", col[0], col[1], col[2],
                        NAMES[k]);
        }
        plat_html(CHARTS[c].legend, wbuf_cstr(&b));
    }
    wbuf_free(&b);
}
