/* dash — the dashboard: the server's `metrics` snapshots (2.5 per second) kept for the last few minutes,
 * derived rates (draft acceptance, prompt-cache hits), and line charts drawn into RGBA pixel buffers that the
 * page puts into canvases, with the current values as large numbers.
 *
 * What it must not do: read the DOM or the socket (app.c feeds it; plat_canvas and plat_text show it).
 * Scaling and drawing are tested natively (tests/unit/test_web_dash.c). */
#ifndef G4_WEB_DASH_H
#define G4_WEB_DASH_H

#include <stdint.h>

#define DASH_SAMPLES 512        /* ring of snapshots: 204 s at 2.5 Hz */
#define DASH_WINDOW_S 180.0     /* seconds shown, newest at the right edge */
#define DASH_RATE_WINDOW_S 10.0 /* window of the acceptance and hit rates */
#define DASH_W 600              /* chart pixels */
#define DASH_H 150

enum dash_series {
    DS_DECODE,   /* decode tokens/s */
    DS_PREFILL,  /* prefill tokens/s */
    DS_RUNNING,  /* requests holding a stream */
    DS_WAITING,  /* requests queued */
    DS_TTFT50,   /* ms */
    DS_TTFT95,   /* ms */
    DS_DRAFT,    /* drafts accepted / proposed, %, NaN when none proposed */
    DS_CACHE,    /* prompt-cache hits / requests, %, NaN when no requests */
    DS_KV,       /* KV cache use, % */
    DS_MEM,      /* engine memory, bytes */
    DS_N
};

/* One snapshot as the server sends it (docs/protocol.md, "Metrics snapshot"). */
struct dash_snap {
    double time;             /* s since the server started */
    double running, waiting, streams_max, prefill_tps, decode_tps, kv_usage;
    double requests, generated_tokens, ttft_p50, ttft_p95;
    double drafts_proposed, drafts_accepted, cache_hits, memory_bytes, connections;
};

enum dash_chart { DC_TOKENS, DC_STREAMS, DC_TTFT, DC_RATES, DC_MEMORY, DC_N };

struct dash {
    struct dash_snap snap[DASH_SAMPLES]; /* ring, the raw snapshots */
    float v[DASH_SAMPLES][DS_N];         /* ring, the plotted values */
    int head, n;                         /* next slot, filled slots */
    int dark;
    uint8_t px[DASH_W * DASH_H * 4];     /* one chart's pixels, (H, W, 4) */
};

void dash_init(struct dash *d, int dark);
/* Adds a snapshot (a server restart, time going back, clears the history first). */
void dash_add(struct dash *d, const struct dash_snap *s);
/* The newest value of series k (NaN when none). */
float dash_last(const struct dash *d, int k);

/* A "nice" axis top for data up to v: 1, 2, 2.5 or 5 times a power of ten, >= v (and >= 1e-9). */
double dash_nice_max(double v);
/* The pixel row of value v on an axis 0..max in a chart h pixels high (row 0 at the top, inside a margin). */
int dash_row(double v, double max, int h);
/* Draws chart c into d->px; returns the axis top it used. */
double dash_draw(struct dash *d, enum dash_chart c);
/* Draws every chart and writes the numbers and legends into the page (plat_canvas, plat_text, plat_html). */
void dash_render(struct dash *d);

/* The colour of series k (r, g, b) for the theme. */
void dash_color(int dark, int k, uint8_t rgb[3]);

#endif
