/* sampler — parameters, the keyed random number, and logits -> token (see sampler.h for the exact
 * algorithm a GPU port must follow).
 *
 * Called on the engine thread, one row at a time, with a workspace made once. Must not keep state between
 * rows, must not allocate per row, and must not depend on anything but (params, logits row, position): the
 * tokens of a request may not change with batching, drafting or resuming. Stop handling is in stop.c. */
#include "engine/sampler.h"
#include "engine/sampler_core.h"

#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================================================= */
/* parameters                                                                                              */
/* ======================================================================================================= */

void samp_params_init(struct samp_params *p)
{
    memset(p, 0, sizeof *p);
    p->temperature = 1.0f;
    p->top_k = 0;
    p->top_p = 1.0f;
    p->min_p = 0.0f;
    p->seed = 0;
    p->max_tokens = SAMP_DEFAULT_MAX_TOKENS;
}

void samp_params_gemma4(struct samp_params *p)
{
    samp_params_init(p);
    p->temperature = 1.0f;
    p->top_k = 64;
    p->top_p = 0.95f;
    p->stop_ids[0] = 1;        /* <eos> */
    p->stop_ids[1] = 106;      /* <turn|> */
    p->stop_ids[2] = 50;       /* <|tool_response> */
    p->n_stop_ids = 3;
    p->suppress_ids[0] = 258883;  /* <audio|> (eoa) */
    p->suppress_ids[1] = 258882;  /* <image|> (eoi) */
    p->n_suppress_ids = 2;
}

/* Checks a list of n ids (n within [0, max]) against [0, vocab). field names the list in messages. */
static int validate_ids(const char *field, const int32_t *ids, int32_t n, int32_t max, int32_t vocab,
                        char *err)
{
    if (n < 0 || n > max)
        return g4_errf(err, "%s must have 0 to %d entries, got %d", field, max, n);
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return g4_errf(err, "%s[%d] must be a token id in [0, %d), got %d", field, i, vocab, ids[i]);
    return 0;
}

int samp_params_validate(const struct samp_params *p, int32_t vocab_size, char *err)
{
    G4_CHECK(vocab_size >= 1, "vocab_size %d", vocab_size);
    /* Written as !(in range) so that NaN, which fails every comparison, is refused. */
    if (!(p->temperature >= 0.0f && p->temperature <= SAMP_MAX_TEMPERATURE))
        return g4_errf(err, "temperature must be in [0, %g], got %g", (double)SAMP_MAX_TEMPERATURE,
                       (double)p->temperature);
    if (p->top_k < 0 || p->top_k > vocab_size)
        return g4_errf(err, "top_k must be in [0, %d] (0 = off), got %d", vocab_size, p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return g4_errf(err, "top_p must be in (0, 1] (1 = off), got %g", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p < 1.0f))
        return g4_errf(err, "min_p must be in [0, 1) (0 = off), got %g", (double)p->min_p);
    if (p->max_tokens < 1 || p->max_tokens > SAMP_MAX_TOKENS_LIMIT)
        return g4_errf(err, "max_tokens must be in [1, %d], got %d", SAMP_MAX_TOKENS_LIMIT, p->max_tokens);
    if (validate_ids("stop_ids", p->stop_ids, p->n_stop_ids, SAMP_MAX_STOP_IDS, vocab_size, err) ||
        validate_ids("suppress_ids", p->suppress_ids, p->n_suppress_ids, SAMP_MAX_SUPPRESS_IDS, vocab_size,
                     err))
        return -1;
    if (p->n_stop_strings < 0 || p->n_stop_strings > SAMP_MAX_STOP_STRINGS)
        return g4_errf(err, "stop must have 0 to %d strings, got %d", SAMP_MAX_STOP_STRINGS,
                       p->n_stop_strings);
    for (int32_t i = 0; i < p->n_stop_strings; i++) {
        size_t n = strnlen(p->stop_strings[i], SAMP_MAX_STOP_STRING_LEN + 1);
        if (n == 0)
            return g4_errf(err, "stop[%d] must not be empty", i);
        if (n > SAMP_MAX_STOP_STRING_LEN)
            return g4_errf(err, "stop[%d] must be 1 to %d bytes, got more", i, SAMP_MAX_STOP_STRING_LEN);
    }
    return 0;
}

/* ======================================================================================================= */
/* random numbers and exp: the shared core (sampler_core.h)                                              */
/* ======================================================================================================= */

void samp_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    samp_core_philox(ctr, key, out);
}

double samp_uniform(uint64_t seed, uint64_t position)
{
    return samp_core_uniform(seed, position, SAMP_STREAM_TOKEN);
}

double samp_exp(double a)
{
    if (!(a >= SAMP_EXP_MIN_ARG)) return 0.0;   /* also -inf and NaN */
    return samp_core_exp(a > 0.0 ? 0.0 : a);
}

/* ======================================================================================================= */
/* workspace                                                                                               */
/* ======================================================================================================= */

/* A candidate token: its sort key (samp_core_desc_key of its logit) and id. */
struct cand {
    uint32_t key;
    int32_t id;
};

struct samp_ws {
    int32_t vocab;        /* V */
    uint8_t *suppressed;  /* (V) 1 for the current row's suppressed ids, else 0; all 0 between calls */
    struct cand *a;       /* (V) candidates */
    struct cand *b;       /* (V) radix-sort scratch */
    float *xs;            /* (V) candidate logits in rank order, for samp_pick_sorted */
    int32_t *ids;         /* (V) candidate ids in rank order */
    double *w;            /* (V) weights, then prefix sums */
};

samp_ws *samp_ws_create(int32_t vocab_size)
{
    G4_CHECK(vocab_size >= 1, "vocab_size %d", vocab_size);
    samp_ws *ws = g4_calloc(1, sizeof *ws);
    size_t v = (size_t)vocab_size;
    ws->vocab = vocab_size;
    ws->suppressed = g4_calloc(v, 1);
    ws->a = g4_malloc(v * sizeof *ws->a);
    ws->b = g4_malloc(v * sizeof *ws->b);
    ws->xs = g4_malloc(v * sizeof *ws->xs);
    ws->ids = g4_malloc(v * sizeof *ws->ids);
    ws->w = g4_malloc(v * sizeof *ws->w);
    return ws;
}

void samp_ws_destroy(samp_ws *ws)
{
    if (!ws) return;
    free(ws->suppressed);
    free(ws->a);
    free(ws->b);
    free(ws->xs);
    free(ws->ids);
    free(ws->w);
    free(ws);
}

/* ======================================================================================================= */
/* candidate selection (steps 1-4): comparisons only                                                        */
/* ======================================================================================================= */

/* 1 if a comes after b in rank order (lower logit, or equal logit and higher id). */
static inline int worse(struct cand a, struct cand b)
{
    return a.key > b.key || (a.key == b.key && a.id > b.id);
}

/* Greedy: the best candidate in rank order, or -1. Scans ids upward and takes strictly greater logits
 * only, so the lowest id wins a tie; x > best is false for NaN and for -inf (best starts at -inf). */
static int32_t pick_greedy(const float *logits, int32_t v, const uint8_t *suppressed)
{
    float best = -INFINITY;
    int32_t best_id = -1;
    for (int32_t i = 0; i < v; i++) {
        if (logits[i] > best && !suppressed[i]) {
            best = logits[i];
            best_id = i;
        }
    }
    return best_id;
}

/* Restores the heap property below slot i of a heap whose root is the worst candidate. */
static void heap_sift_down(struct cand *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(h[l], h[m])) m = l;
        if (r < n && worse(h[r], h[m])) m = r;
        if (m == i) return;
        struct cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Top-k by partial selection, for small k: keeps the k best candidates in a heap (root = worst kept) while
 * scanning the row once, then heap-sorts them into rank order in out. Returns min(k, candidates). Most
 * logits are rejected by one float comparison against the current k-th best. */
static int32_t select_top_k_heap(const float *logits, int32_t v, const uint8_t *suppressed, int32_t k,
                                 struct cand *out)
{
    int32_t n = 0;
    float thr = -INFINITY;   /* to enter, a logit must be > thr: equal ones have higher ids (ids rise) */
    for (int32_t i = 0; i < v; i++) {
        float x = logits[i];
        if (!(x > thr) || suppressed[i]) continue;
        struct cand c = { samp_core_desc_key(x), i };
        if (n < k) {   /* grow: sift up */
            int32_t j = n++;
            while (j > 0 && worse(c, out[(j - 1) / 2])) {
                out[j] = out[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            out[j] = c;
            if (n == k) thr = samp_core_key_logit(out[0].key);
        } else {       /* c beats the worst kept one: replace the root */
            out[0] = c;
            heap_sift_down(out, n, 0);
            thr = samp_core_key_logit(out[0].key);
        }
    }
    for (int32_t end = n - 1; end > 0; end--) {   /* heap sort: the worst goes to the end */
        struct cand t = out[0];
        out[0] = out[end];
        out[end] = t;
        heap_sift_down(out, end, 0);
    }
    return n;
}

/* Sorts n candidates in a (collected in id order) into rank order; b is scratch. LSD radix sort on the
 * key, three passes of 11, 11 and 10 bits: a -> b -> a -> b, then one copy back. Stable, so equal logits
 * stay in id order. Returns n. */
static int32_t sort_cands(struct cand *a, struct cand *b, int32_t n)
{
    static const int shift[3] = { 0, 11, 22 };
    struct cand *src = a, *dst = b;
    for (int pass = 0; pass < 3; pass++) {
        uint32_t count[2048] = { 0 };
        int s = shift[pass];
        for (int32_t i = 0; i < n; i++) count[(src[i].key >> s) & 2047u]++;
        uint32_t sum = 0;
        for (int d = 0; d < 2048; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int32_t i = 0; i < n; i++) dst[count[(src[i].key >> s) & 2047u]++] = src[i];
        struct cand *t = src;
        src = dst;
        dst = t;
    }
    memcpy(a, src, (size_t)n * sizeof *a);   /* after an odd number of passes the result is in b */
    return n;
}

/* Top-k by radix selection, for larger k, and every candidate when k == 0 (or k >= candidates). For k > 0
 * a first pass counts the logits per bucket of the top 11 key bits (a quarter octave of logits) and finds
 * the best buckets that hold k + n_sup logits (n_sup: suppressed ids, which may be among them), so at least
 * k candidates; a second pass collects the candidates in those buckets in id order, and only they are
 * sorted. Reading the row twice costs less than writing every candidate out. Returns min(k, candidates)
 * (all for k == 0) in rank order in a; b is scratch. */
static int32_t select_top_k_radix(const float *logits, int32_t v, const uint8_t *suppressed, int32_t n_sup,
                                  int32_t k, struct cand *a, struct cand *b)
{
    uint32_t last = 2047;   /* the last bucket taken */
    if (k > 0) {
        uint32_t hist[2048] = { 0 }, cum = 0, want = (uint32_t)k + (uint32_t)n_sup;
        for (int32_t i = 0; i < v; i++)
            if (logits[i] > -INFINITY) hist[samp_core_desc_key(logits[i]) >> 21]++;
        for (last = 0; last < 2047; last++) {
            cum += hist[last];
            if (cum >= want) break;
        }
    }
    int32_t n = 0;
    for (int32_t i = 0; i < v; i++) {
        if (!(logits[i] > -INFINITY)) continue;
        uint32_t key = samp_core_desc_key(logits[i]);
        if ((key >> 21) <= last && !suppressed[i]) a[n++] = (struct cand){ key, i };
    }
    sort_cands(a, b, n);
    return k > 0 && n > k ? k : n;
}

/* ======================================================================================================= */
/* weights and the draw (steps 5-9): double precision, rank order                                           */
/* ======================================================================================================= */

int32_t samp_pick_sorted(const struct samp_params *p, const float *logits, const int32_t *ids, int32_t n,
                         double u, double *w)
{
    int32_t r = samp_core_pick_rank(p->temperature, p->top_p, p->min_p, logits, n, u, w);
    G4_CHECK(r >= 0, "n %d T %g u %.17g", n, (double)p->temperature, u);
    return ids[r];
}

/* Above this top_k, radix selection (two passes over the row, ~0.8 ms at V = 262144 on the build machine)
 * beats the heap, whose sift-downs grow with k (bench_sampler: ~0.2 ms at k = 256, ~0.9 ms at k = 1000). */
#define SAMP_HEAP_MAX_K 512

int32_t samp_sample(const struct samp_params *p, const float *logits, uint64_t position, samp_ws *ws)
{
    const int32_t v = ws->vocab;
    int32_t result = -1, n;

    for (int32_t i = 0; i < p->n_suppress_ids; i++) {
        G4_CHECK(p->suppress_ids[i] >= 0 && p->suppress_ids[i] < v, "unvalidated suppress id %d (V %d)",
                 p->suppress_ids[i], v);
        ws->suppressed[p->suppress_ids[i]] = 1;
    }

    if (p->temperature == 0.0f) {
        result = pick_greedy(logits, v, ws->suppressed);
        goto clear_suppressed;
    }
    if (p->top_k > 0 && p->top_k <= SAMP_HEAP_MAX_K)
        n = select_top_k_heap(logits, v, ws->suppressed, p->top_k, ws->a);
    else
        n = select_top_k_radix(logits, v, ws->suppressed, p->n_suppress_ids, p->top_k, ws->a, ws->b);
    if (n == 0) goto clear_suppressed;
    if (n == 1) {
        result = ws->a[0].id;
        goto clear_suppressed;
    }
    for (int32_t r = 0; r < n; r++) {
        ws->xs[r] = samp_core_key_logit(ws->a[r].key);
        ws->ids[r] = ws->a[r].id;
    }
    result = samp_pick_sorted(p, ws->xs, ws->ids, n, samp_uniform(p->seed, position), ws->w);

clear_suppressed:
    for (int32_t i = 0; i < p->n_suppress_ids; i++) ws->suppressed[p->suppress_ids[i]] = 0;
    return result;
}
