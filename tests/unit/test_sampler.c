/* Unit tests for backend/engine/sampler.c and stop.c: the keyed random number (Philox known answers), greedy
 * and its ties, suppression, the sampled distribution after temperature / top-k / top-p / min-p against an
 * independent computation from Hugging Face's definitions, the full-vocabulary selection paths against a
 * qsort reference, parameter validation, finish reasons and the streaming stop-string matcher. */
#include "test.h"
#include "engine/sampler.h"
#include "util/util.h"

#include <float.h>
#include <stdint.h>

#define V_GEMMA 262144

/* A small deterministic generator for test data (not the sampler's). */
static uint64_t test_rng = 0x1234567;
static double test_rand(void)
{
    test_rng = test_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(test_rng >> 11) * 0x1p-53;
}

/* ======================================================================================================= */
/* random numbers                                                                                          */
/* ======================================================================================================= */

/* Random123's published known-answer vectors for Philox4x32-10 (kat_vectors). */
static void test_philox_known_answers(void)
{
    static const uint32_t ctr[3][4] = { { 0, 0, 0, 0 },
                                        { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff },
                                        { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 } };
    static const uint32_t key[3][2] = { { 0, 0 }, { 0xffffffff, 0xffffffff }, { 0xa4093822, 0x299f31d0 } };
    static const uint32_t want[3][4] = { { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 },
                                         { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd },
                                         { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } };
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        samp_philox4x32_10(ctr[i], key[i], out);
        EXPECTF(!memcmp(out, want[i], sizeof out), "vector %d: %08x %08x %08x %08x", i, out[0], out[1],
                out[2], out[3]);
    }
}

/* samp_uniform is the documented function of Philox's output, depends on (seed, position) only, and looks
 * uniform. */
static void test_uniform_keyed(void)
{
    uint32_t ctr[4] = { 0x89abcdefu, 0x01234567u, SAMP_STREAM_TOKEN, 0 }, key[2] = { 0x2au, 0x7u }, out[4];
    samp_philox4x32_10(ctr, key, out);
    double want = (double)(((uint64_t)out[0] << 21) ^ (out[1] >> 11)) / 9007199254740992.0;
    EXPECT(samp_uniform(0x70000002aULL, 0x0123456789abcdefULL) == want);
    EXPECT(samp_uniform(42, 7) == samp_uniform(42, 7));
    EXPECT(samp_uniform(42, 7) != samp_uniform(43, 7));
    EXPECT(samp_uniform(42, 7) != samp_uniform(42, 8));
    EXPECT(samp_uniform(42, 7) != samp_uniform(42, 7 + (1ULL << 32)));   /* the high word counts */
    EXPECT(samp_uniform(42, 7) != samp_uniform(42 + (1ULL << 32), 7));

    enum { N = 200000, B = 20 };
    int bucket[B] = { 0 }, bad = 0;
    double sum = 0, prev = -1;
    int repeats = 0;
    for (int i = 0; i < N; i++) {
        double u = samp_uniform(2024, (uint64_t)i);
        if (!(u >= 0.0 && u < 1.0)) bad++;
        else bucket[(int)(u * B)]++;
        if (u == prev) repeats++;
        prev = u;
        sum += u;
    }
    EXPECT(bad == 0);
    EXPECT(repeats == 0);
    EXPECTF(fabs(sum / N - 0.5) < 0.005, "mean %g", sum / N);
    double chi2 = 0, e = (double)N / B;
    for (int b = 0; b < B; b++) chi2 += (bucket[b] - e) * (bucket[b] - e) / e;
    EXPECTF(chi2 < 19 + 8 * sqrt(2 * 19.0), "chi2 %g over %d buckets", chi2, B);
}

/* samp_exp agrees with libm's exp to a couple of ulps over its whole range, and its edges are as documented. */
static void test_samp_exp(void)
{
    EXPECT(samp_exp(0.0) == 1.0);
    EXPECT(samp_exp(-0.0) == 1.0);
    EXPECT(samp_exp(2.0) == 1.0);                       /* a > 0 is treated as 0 */
    EXPECT(samp_exp(SAMP_EXP_MIN_ARG) > 0.0);
    EXPECT(samp_exp(nextafter(SAMP_EXP_MIN_ARG, -1000.0)) == 0.0);
    EXPECT(samp_exp(-INFINITY) == 0.0);
    EXPECT(samp_exp(NAN) == 0.0);
    double worst = 0, worst_a = 0;
    for (int i = 0; i <= 1000000; i++) {
        double a = SAMP_EXP_MIN_ARG * i / 1000000.0 * (i % 2 ? 1.0 : 0.999999);
        double rel = fabs(samp_exp(a) / exp(a) - 1.0);
        if (rel > worst) {
            worst = rel;
            worst_a = a;
        }
    }
    EXPECTF(worst < 4.5e-16, "relative error %g at %.17g", worst, worst_a);
}

/* +inf logits: the +inf tokens share all the mass (weight 1 each), finite ones get none. */
static void test_infinite_logits(void)
{
    float x[5] = { 1, INFINITY, 3, INFINITY, -INFINITY };
    struct samp_params p;
    samp_params_init(&p);
    samp_ws *ws = samp_ws_create(5);
    int seen[5] = { 0 };
    for (int pos = 0; pos < 2000; pos++) seen[samp_sample(&p, x, (uint64_t)pos, ws)]++;
    EXPECT(seen[0] == 0 && seen[2] == 0 && seen[4] == 0);
    EXPECTF(seen[1] > 900 && seen[3] > 900, "%d %d", seen[1], seen[3]);
    p.temperature = 0;
    EXPECT(samp_sample(&p, x, 0, ws) == 1);
    samp_ws_destroy(ws);
}

/* ======================================================================================================= */
/* greedy, suppression, top-k = 1                                                                          */
/* ======================================================================================================= */

static void test_greedy_ties_and_bad_values(void)
{
    struct samp_params p;
    samp_params_init(&p);
    p.temperature = 0;
    samp_ws *ws = samp_ws_create(8);
    float a[8] = { 1, 3, -2, 3, NAN, 3, -INFINITY, 0 };
    EXPECT(samp_sample(&p, a, 0, ws) == 1);                       /* three 3s: the lowest id */
    float b[8] = { NAN, -INFINITY, -5, NAN, -INFINITY, -5.5f, -4, NAN };
    EXPECT(samp_sample(&p, b, 0, ws) == 6);                       /* NaN and -inf are never chosen */
    float c[8] = { NAN, NAN, -INFINITY, NAN, NAN, NAN, NAN, -INFINITY };
    EXPECT(samp_sample(&p, c, 0, ws) == -1);                      /* nothing to choose */
    float d[8] = { -0.0f, 0.0f, -1, -1, -1, -1, -1, -1 };
    EXPECT(samp_sample(&p, d, 0, ws) == 0);                       /* -0 == +0: the lower id */
    samp_ws_destroy(ws);

    ws = samp_ws_create(V_GEMMA);
    float *x = g4_malloc(V_GEMMA * sizeof *x);
    for (int i = 0; i < V_GEMMA; i++) x[i] = (float)(test_rand() * 20 - 10);
    x[200001] = 12.5f;
    x[250000] = 12.5f;
    EXPECT(samp_sample(&p, x, 5, ws) == 200001);
    x[100] = 12.5f;
    EXPECT(samp_sample(&p, x, 5, ws) == 100);
    free(x);
    samp_ws_destroy(ws);
}

static void test_suppressed_never_chosen(void)
{
    samp_ws *ws = samp_ws_create(V_GEMMA);
    float *x = g4_malloc(V_GEMMA * sizeof *x);
    for (int i = 0; i < V_GEMMA; i++) x[i] = (float)(test_rand() * 4 - 2);
    x[258883] = 30;      /* Gemma's suppressed ids, with by far the highest logits */
    x[258882] = 29;
    x[17] = 3;           /* the best allowed one */
    struct samp_params p;
    samp_params_gemma4(&p);
    p.temperature = 0;
    EXPECT(samp_sample(&p, x, 0, ws) == 17);
    samp_params_gemma4(&p);
    int hits = 0, hits17 = 0;
    for (int pos = 0; pos < 300; pos++) {
        int32_t t = samp_sample(&p, x, (uint64_t)pos, ws);
        hits += t == 258883 || t == 258882;
        hits17 += t == 17;
    }
    EXPECT(hits == 0);
    EXPECT(hits17 > 0);
    p.top_k = 0;                      /* the full-sort path */
    p.temperature = 2;
    for (int pos = 0; pos < 20; pos++) {
        int32_t t = samp_sample(&p, x, (uint64_t)pos, ws);
        EXPECT(t != 258883 && t != 258882 && t >= 0);
    }
    /* The suppression mask is per call: without the list the ids come back. */
    p.n_suppress_ids = 0;
    p.temperature = 0;
    EXPECT(samp_sample(&p, x, 0, ws) == 258883);
    free(x);
    samp_ws_destroy(ws);

    /* Small vocabulary: every id but one suppressed, sampled. */
    ws = samp_ws_create(4);
    float y[4] = { 5, 4, 3, 2 };
    samp_params_init(&p);
    p.suppress_ids[0] = 0;
    p.suppress_ids[1] = 1;
    p.suppress_ids[2] = 3;
    p.n_suppress_ids = 3;
    for (int pos = 0; pos < 50; pos++) EXPECT(samp_sample(&p, y, (uint64_t)pos, ws) == 2);
    p.suppress_ids[3] = 2;
    p.n_suppress_ids = 4;
    EXPECT(samp_sample(&p, y, 0, ws) == -1);
    samp_ws_destroy(ws);
}

static void test_top_k_1_is_greedy(void)
{
    enum { V = 5000 };
    samp_ws *ws = samp_ws_create(V);
    float *x = g4_malloc(V * sizeof *x);
    struct samp_params g, k1;
    samp_params_init(&g);
    g.temperature = 0;
    samp_params_init(&k1);
    k1.top_k = 1;
    k1.temperature = 1.5f;
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < V; i++) x[i] = (float)(int)(test_rand() * 40);   /* many exact ties */
        int32_t want = samp_sample(&g, x, 0, ws);
        for (int pos = 0; pos < 20; pos++)
            EXPECT(samp_sample(&k1, x, (uint64_t)(trial * 100 + pos), ws) == want);
    }
    free(x);
    samp_ws_destroy(ws);
}

/* Same (seed, position): same token; different positions: different draws; different seeds: different
 * streams. */
static void test_keyed_determinism(void)
{
    enum { V = 1000 };
    samp_ws *ws = samp_ws_create(V);
    float x[V];
    for (int i = 0; i < V; i++) x[i] = 0.0f;   /* uniform: the token reveals the draw */
    struct samp_params p;
    samp_params_init(&p);
    p.seed = 99;
    int same = 0, distinct = 0, seen[V] = { 0 };
    for (int pos = 0; pos < 200; pos++) {
        int32_t t = samp_sample(&p, x, (uint64_t)pos, ws);
        EXPECT(t == samp_sample(&p, x, (uint64_t)pos, ws));
        EXPECT(t == (int32_t)(samp_uniform(99, (uint64_t)pos) * V));   /* equal weights: floor(u * V) */
        if (!seen[t]++) distinct++;
        p.seed = 100;
        same += t == samp_sample(&p, x, (uint64_t)pos, ws);
        p.seed = 99;
    }
    EXPECTF(distinct > 150, "%d distinct tokens over 200 positions", distinct);
    /* -0.0 and +0.0 are the same logit: the full sort keeps them in id order too. */
    for (int i = 0; i < V; i++) x[i] = i % 3 ? 0.0f : -0.0f;
    for (int pos = 0; pos < 200; pos++)
        EXPECT(samp_sample(&p, x, (uint64_t)pos, ws) == (int32_t)(samp_uniform(99, (uint64_t)pos) * V));
    EXPECTF(same < 10, "seed 99 and 100 agreed %d times in 200", same);
    samp_ws_destroy(ws);
}

/* ======================================================================================================= */
/* the sampled distribution, against an independent computation                                            */
/* ======================================================================================================= */

/* A (logit, id) pair for the reference computation. */
struct ref_item {
    double x;
    int id;
};

static int ref_asc(const void *a, const void *b)   /* ascending logit, then descending id */
{
    const struct ref_item *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return q->id - p->id;
}

/* The probabilities Hugging Face's warpers give (TemperatureLogitsWarper, TopKLogitsWarper with exactly k
 * kept, TopPLogitsWarper, MinPLogitsWarper, in that order), computed the way their code does it: masks of
 * removed tokens over an ascending sort, softmax after each stage. prob: (V) out. */
static void ref_distribution(const float *logits, int v, const struct samp_params *p, double *prob)
{
    double s[64];
    int removed[64] = { 0 };
    struct ref_item it[64];
    G4_CHECK(v <= 64, "v %d", v);
    for (int i = 0; i < v; i++) s[i] = (double)logits[i] / p->temperature;
    if (p->top_k > 0) {             /* keep the k largest: drop everything below rank k */
        for (int i = 0; i < v; i++) it[i] = (struct ref_item){ s[i], i };
        qsort(it, (size_t)v, sizeof *it, ref_asc);
        for (int j = 0; j < v - p->top_k; j++) removed[it[j].id] = 1;
    }
    if (p->top_p < 1.0f) {          /* ascending cumulative softmax mass <= 1 - top_p is removed */
        double mx = -INFINITY, z = 0, cum = 0;
        int n = 0;
        for (int i = 0; i < v; i++) {
            if (removed[i]) continue;
            it[n++] = (struct ref_item){ s[i], i };
            mx = fmax(mx, s[i]);
        }
        qsort(it, (size_t)n, sizeof *it, ref_asc);
        for (int j = 0; j < n; j++) z += exp(it[j].x - mx);
        for (int j = 0; j < n - 1; j++) {   /* the last (largest) always stays */
            cum += exp(it[j].x - mx) / z;
            if (cum <= 1.0 - p->top_p) removed[it[j].id] = 1;
        }
    }
    if (p->min_p > 0.0f) {          /* probability below min_p * max probability is removed */
        double mx = -INFINITY, z = 0;
        for (int i = 0; i < v; i++) if (!removed[i]) mx = fmax(mx, s[i]);
        for (int i = 0; i < v; i++) if (!removed[i]) z += exp(s[i] - mx);
        for (int i = 0; i < v; i++)
            if (!removed[i] && exp(s[i] - mx) / z < p->min_p * (1.0 / z)) removed[i] = 1;
    }
    double mx = -INFINITY, z = 0;
    for (int i = 0; i < v; i++) if (!removed[i]) mx = fmax(mx, s[i]);
    for (int i = 0; i < v; i++) z += removed[i] ? 0 : exp(s[i] - mx);
    for (int i = 0; i < v; i++) prob[i] = removed[i] ? 0 : exp(s[i] - mx) / z;
}

/* Samples N positions and compares the counts with ref_distribution: zero-probability tokens must never
 * appear, and the chi-square over the others must be within df + 8 standard deviations. */
static void check_distribution(const char *what, const float *logits, int v, const struct samp_params *p)
{
    enum { N = 200000 };
    double prob[64];
    int count[64] = { 0 };
    ref_distribution(logits, v, p, prob);
    samp_ws *ws = samp_ws_create(v);
    for (int pos = 0; pos < N; pos++) {
        int32_t t = samp_sample(p, logits, (uint64_t)pos + 1000, ws);
        if (t >= 0 && t < v) count[t]++;
    }
    samp_ws_destroy(ws);
    double chi2 = 0;
    int df = -1, total = 0;
    for (int i = 0; i < v; i++) {
        total += count[i];
        if (prob[i] == 0) {
            EXPECTF(count[i] == 0, "%s: token %d has probability 0 but was drawn %d times", what, i,
                    count[i]);
            continue;
        }
        double e = prob[i] * N;
        chi2 += (count[i] - e) * (count[i] - e) / e;
        df++;
    }
    EXPECT(total == N);
    double limit = df + 8 * sqrt(2.0 * (df > 0 ? df : 1));
    EXPECTF(chi2 < limit, "%s: chi-square %.1f over %d degrees of freedom (limit %.1f)", what, chi2, df,
            limit);
}

static void test_distribution_after_warpers(void)
{
    /* Ten tokens, two tied, listed out of order so the rank order differs from the id order. */
    static const float x[10] = { 0.3f, 2.0f, -1.0f, 1.1f, 2.0f, -0.4f, 0.9f, -3.0f, 1.6f, 0.0f };
    struct samp_params p;
    samp_params_init(&p);
    check_distribution("T=1", x, 10, &p);
    p.temperature = 0.5f;
    check_distribution("T=0.5", x, 10, &p);
    p.temperature = 1.8f;
    check_distribution("T=1.8", x, 10, &p);
    samp_params_init(&p);
    p.top_k = 3;
    check_distribution("top_k=3", x, 10, &p);
    p.top_k = 1;                    /* splits the tie at 2.0: only the lower id, 1, stays */
    check_distribution("top_k=1", x, 10, &p);
    samp_params_init(&p);
    p.top_p = 0.8f;
    check_distribution("top_p=0.8", x, 10, &p);
    p.top_p = 0.3f;
    check_distribution("top_p=0.3", x, 10, &p);
    samp_params_init(&p);
    p.min_p = 0.3f;
    check_distribution("min_p=0.3", x, 10, &p);
    samp_params_init(&p);
    p.temperature = 0.7f;
    p.top_k = 6;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    check_distribution("T=0.7 top_k=6 top_p=0.9 min_p=0.05", x, 10, &p);
    p.temperature = 1.3f;
    p.top_k = 8;
    p.top_p = 0.75f;
    p.min_p = 0.2f;
    check_distribution("T=1.3 top_k=8 top_p=0.75 min_p=0.2", x, 10, &p);

    /* Top-p before min-p matters: weights 1, .5, .5 and twenty of .1. Top-p 0.45 over all of them keeps
     * three (mass above the third: 1.5 < 0.45 * 4); min-p 0.3 keeps the same three. Min-p first would leave
     * a mass of 2, and top-p 0.45 of that would keep one token only. */
    float y[23];
    y[0] = 0;
    y[1] = y[2] = (float)log(0.5);
    for (int i = 3; i < 23; i++) y[i] = (float)log(0.1);
    samp_params_init(&p);
    p.top_p = 0.45f;
    p.min_p = 0.3f;
    check_distribution("top_p=0.45 then min_p=0.3", y, 23, &p);
}

/* Where u lands: candidate r owns [C_{r-1}, C_r) of [0, W), so equal weights split [0, 1) evenly; a
 * zero-weight candidate is never chosen. */
static void test_pick_intervals(void)
{
    struct samp_params p;
    samp_params_init(&p);
    double w[4];
    static const float eq[4] = { 1, 1, 1, 1 };
    static const int32_t ids[4] = { 7, 8, 9, 10 };
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 0.0, w) == 7);
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 0.2499, w) == 7);
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 0.25, w) == 8);
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 0.5, w) == 9);
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 0.75, w) == 10);
    EXPECT(samp_pick_sorted(&p, eq, ids, 4, 1.0 - 0x1p-53, w) == 10);
    static const float tail[3] = { 0, -1000, -1000 };   /* weights 1, 0, 0 */
    EXPECT(samp_pick_sorted(&p, tail, ids, 3, 1.0 - 0x1p-53, w) == 7);
    p.top_k = 2;   /* top_k is applied before samp_pick_sorted: n is the cut */
    EXPECT(samp_pick_sorted(&p, eq, ids, 2, 0.75, w) == 8);
}

/* Probabilities 1/2, 1/4, 1/8, 1/16, ...: top-p keeps the smallest prefix whose mass reaches p, including
 * the token that crosses p; the top token always stays. */
static void test_top_p_boundary(void)
{
    enum { V = 6 };
    float x[V];
    for (int i = 0; i < V; i++) x[i] = (float)(-(i + 1) * log(2.0));   /* id order = rank order */
    static const float ps[4] = { 0.3f, 0.7f, 0.8f, 0.999f };
    /* masses .508 .254 .127 .063 .032 .016; mass above each token: 0 .508 .762 .889 .952 .984 */
    static const int want_kept[4] = { 1, 2, 3, 6 };
    samp_ws *ws = samp_ws_create(V);
    for (int c = 0; c < 4; c++) {
        struct samp_params p;
        samp_params_init(&p);
        p.top_p = ps[c];
        int seen[V] = { 0 };
        for (int pos = 0; pos < 5000; pos++) seen[samp_sample(&p, x, (uint64_t)pos, ws)]++;
        int kept = 0;
        while (kept < V && seen[kept]) kept++;
        for (int i = kept; i < V; i++) EXPECTF(!seen[i], "top_p %g: token %d drawn", (double)ps[c], i);
        EXPECTF(kept == want_kept[c], "top_p %g: %d tokens kept, want %d", (double)ps[c], kept, want_kept[c]);
    }
    samp_ws_destroy(ws);
}

/* min-p compares with the top token's probability: with weights 1, .5, .25, .125, min_p = 0.3 keeps two. */
static void test_min_p_relative(void)
{
    float x[4] = { 0, (float)-log(2.0), (float)-log(4.0), (float)-log(8.0) };
    struct samp_params p;
    samp_params_init(&p);
    p.min_p = 0.3f;
    int seen[4] = { 0 };
    double pw[4] = { 1, 0.5, 0.25, 0.125 };
    samp_ws *ws = samp_ws_create(4);
    for (int pos = 0; pos < 30000; pos++) seen[samp_sample(&p, x, (uint64_t)pos, ws)]++;
    EXPECT(seen[0] > 0 && seen[1] > 0 && seen[2] == 0 && seen[3] == 0);
    EXPECTF(fabs(seen[0] / 30000.0 - pw[0] / 1.5) < 0.015, "%d", seen[0]);
    /* Higher temperature flattens: weights 1, .707, .5, .354 with T = 2; min_p 0.3 keeps all four. */
    p.temperature = 2;
    memset(seen, 0, sizeof seen);
    for (int pos = 0; pos < 30000; pos++) seen[samp_sample(&p, x, (uint64_t)pos, ws)]++;
    EXPECT(seen[3] > 0);
    samp_ws_destroy(ws);
}

/* ======================================================================================================= */
/* full vocabulary: heap and radix selection against a qsort reference                                     */
/* ======================================================================================================= */

static int rank_cmp(const void *a, const void *b)   /* descending logit, then ascending id */
{
    const struct ref_item *p = a, *q = b;
    if (p->x != q->x) return p->x > q->x ? -1 : 1;
    return p->id - q->id;
}

static void test_full_vocab_selection(void)
{
    samp_ws *ws = samp_ws_create(V_GEMMA);
    float *x = g4_malloc(V_GEMMA * sizeof *x);
    /* bf16-rounded logits: thousands of exact ties, as a real bf16 head gives; a few specials. */
    for (int i = 0; i < V_GEMMA; i++) x[i] = bf16_to_f32(f32_to_bf16((float)(test_rand() * 16 - 8)));
    for (int i = 0; i < 50; i++) x[(i * 7919) % V_GEMMA] = NAN;
    for (int i = 0; i < 50; i++) x[(i * 104729 + 3) % V_GEMMA] = -INFINITY;
    x[10] = -0.0f;
    x[11] = 0.0f;
    struct ref_item *ref = g4_malloc(V_GEMMA * sizeof *ref);
    float *rx = g4_malloc(V_GEMMA * sizeof *rx);
    int32_t *rid = g4_malloc(V_GEMMA * sizeof *rid);
    double *w = g4_malloc(V_GEMMA * sizeof *w);
    struct samp_params p;
    samp_params_gemma4(&p);
    int n = 0;
    for (int i = 0; i < V_GEMMA; i++) {
        int sup = 0;
        for (int j = 0; j < p.n_suppress_ids; j++) sup |= p.suppress_ids[j] == i;
        if (x[i] > -INFINITY && !sup) ref[n++] = (struct ref_item){ x[i], i };
    }
    qsort(ref, (size_t)n, sizeof *ref, rank_cmp);
    for (int i = 0; i < n; i++) {
        rx[i] = (float)ref[i].x;
        rid[i] = ref[i].id;
    }
    /* heap, heap at its limit, radix selection twice, everything sorted */
    static const int32_t ks[5] = { 64, 512, 513, 30000, 0 };
    for (int c = 0; c < 5; c++) {
        p.top_k = ks[c];
        p.top_p = c == 4 ? 0.95f : 0.99f;
        int32_t kn = ks[c] ? ks[c] : n;
        int mismatches = 0;
        for (int pos = 0; pos < 40; pos++) {
            int32_t want = samp_pick_sorted(&p, rx, rid, kn, samp_uniform(p.seed, (uint64_t)pos), w);
            mismatches += samp_sample(&p, x, (uint64_t)pos, ws) != want;
        }
        EXPECTF(mismatches == 0, "top_k %d: %d of 40 differ from the qsort reference", ks[c], mismatches);
    }
    free(w);
    free(rid);
    free(rx);
    free(ref);
    free(x);
    samp_ws_destroy(ws);
}

/* ======================================================================================================= */
/* validation and finish reasons                                                                           */
/* ======================================================================================================= */

static void test_validation(void)
{
    char err[G4_ERR_MAX];
    struct samp_params p;
    samp_params_gemma4(&p);
    EXPECT(samp_params_validate(&p, V_GEMMA, err) == 0);
    EXPECT(samp_params_validate(&p, 1000, err) < 0);            /* suppress ids beyond a small vocab */
    EXPECT_STR_HAS(err, "suppress_ids[0]");

#define BAD(field_set, needle) do { samp_params_gemma4(&p); field_set; err[0] = 0; \
        EXPECT(samp_params_validate(&p, V_GEMMA, err) < 0); EXPECT_STR_HAS(err, needle); } while (0)
    BAD(p.temperature = -1, "temperature must be in [0, 2], got -1");
    BAD(p.temperature = 2.5f, "temperature must be in [0, 2], got 2.5");
    BAD(p.temperature = NAN, "temperature");
    BAD(p.top_k = -1, "top_k must be in [0, 262144]");
    BAD(p.top_k = V_GEMMA + 1, "top_k");
    BAD(p.top_p = 0, "top_p must be in (0, 1]");
    BAD(p.top_p = 1.01f, "top_p");
    BAD(p.top_p = NAN, "top_p");
    BAD(p.min_p = 1, "min_p must be in [0, 1)");
    BAD(p.min_p = -0.1f, "min_p");
    BAD(p.min_p = NAN, "min_p");
    BAD(p.max_tokens = 0, "max_tokens must be in [1, 262144], got 0");
    BAD(p.max_tokens = SAMP_MAX_TOKENS_LIMIT + 1, "max_tokens");
    BAD(p.stop_ids[1] = V_GEMMA, "stop_ids[1]");
    BAD(p.stop_ids[0] = -3, "stop_ids[0]");
    BAD(p.n_stop_ids = SAMP_MAX_STOP_IDS + 1, "stop_ids must have 0 to 16 entries");
    BAD(p.suppress_ids[1] = -1, "suppress_ids[1]");
    BAD(p.n_suppress_ids = -1, "suppress_ids");
    BAD(p.n_stop_strings = SAMP_MAX_STOP_STRINGS + 1, "stop must have 0 to 8 strings");
    BAD((p.n_stop_strings = 1, p.stop_strings[0][0] = 0), "stop[0] must not be empty");
    BAD((p.n_stop_strings = 2, strcpy(p.stop_strings[0], "x"),
         memset(p.stop_strings[1], 'a', sizeof p.stop_strings[1])), "stop[1] must be 1 to 256 bytes");
#undef BAD

    /* The edges of each range are accepted. */
    samp_params_init(&p);
    p.temperature = 0;
    p.top_k = V_GEMMA;
    p.top_p = 1;
    p.min_p = 0;
    p.max_tokens = SAMP_MAX_TOKENS_LIMIT;
    p.n_stop_strings = 1;
    memset(p.stop_strings[0], 'a', SAMP_MAX_STOP_STRING_LEN);
    EXPECT(samp_params_validate(&p, V_GEMMA, err) == 0);
    p.temperature = 2;
    p.top_p = 1e-6f;
    p.min_p = 0.999f;
    p.max_tokens = 1;
    EXPECT(samp_params_validate(&p, V_GEMMA, err) == 0);
}

static void test_finish_reasons(void)
{
    struct samp_params p;
    samp_params_gemma4(&p);
    p.max_tokens = 3;
    EXPECT(samp_is_stop_id(&p, 106) && samp_is_stop_id(&p, 1) && samp_is_stop_id(&p, 50));
    EXPECT(!samp_is_stop_id(&p, 107));
    EXPECT(samp_finish_after_token(&p, 5, 1) == SAMP_FINISH_NONE);
    EXPECT(samp_finish_after_token(&p, 106, 1) == SAMP_FINISH_STOP_ID);
    EXPECT(samp_finish_after_token(&p, 5, 3) == SAMP_FINISH_LENGTH);
    EXPECT(samp_finish_after_token(&p, 1, 3) == SAMP_FINISH_STOP_ID);   /* a stop id wins */
    EXPECT(!strcmp(samp_finish_name(SAMP_FINISH_STOP_ID), "stop"));
    EXPECT(!strcmp(samp_finish_name(SAMP_FINISH_STOP_STRING), "stop"));
    EXPECT(!strcmp(samp_finish_name(SAMP_FINISH_LENGTH), "length"));
}

/* ======================================================================================================= */
/* stop strings                                                                                            */
/* ======================================================================================================= */

/* Output gathered from a matcher. */
struct stop_run {
    struct samp_stop s;
    char out[4096];
    size_t n;
    int matched;
};

static void run_begin(struct stop_run *r, const char *const *stops, int n_stops)
{
    struct samp_params p;
    samp_params_init(&p);
    for (int i = 0; i < n_stops; i++) strcpy(p.stop_strings[i], stops[i]);
    p.n_stop_strings = n_stops;
    char err[G4_ERR_MAX];
    G4_CHECK(samp_params_validate(&p, 10, err) == 0, "%s", err);
    samp_stop_init(&r->s, &p);
    r->n = 0;
    r->matched = 0;
}

/* Feeds one delta; returns how many bytes it released. */
static size_t run_feed(struct stop_run *r, const char *delta)
{
    const char *text;
    int m;
    size_t k = samp_stop_feed(&r->s, delta, strlen(delta), &text, &m);
    G4_CHECK(r->n + k < sizeof r->out, "test output overflow");
    memcpy(r->out + r->n, text, k);
    r->n += k;
    r->out[r->n] = 0;
    r->matched |= m;
    return k;
}

static size_t run_flush(struct stop_run *r)
{
    const char *text;
    size_t k = samp_stop_flush(&r->s, &text);
    memcpy(r->out + r->n, text, k);
    r->n += k;
    r->out[r->n] = 0;
    samp_stop_free(&r->s);
    return k;
}

static void test_stop_split_across_deltas(void)
{
    static const char *const stops[] = { "</end>" };
    struct stop_run r;
    run_begin(&r, stops, 1);
    EXPECT(run_feed(&r, "Hello ") == 6);
    EXPECT(run_feed(&r, "wor") == 3);
    EXPECT(run_feed(&r, "ld </e") == 3);       /* "</e" is held */
    EXPECT(!r.matched);
    EXPECT(run_feed(&r, "n") == 0);
    EXPECT(run_feed(&r, "d> and more") == 0);  /* matched: nothing of the stop string or after it */
    EXPECT(r.matched);
    EXPECT(run_feed(&r, "later") == 0);
    EXPECT(run_flush(&r) == 0);
    EXPECT(!strcmp(r.out, "Hello world "));
}

static void test_stop_partial_then_mismatch(void)
{
    static const char *const stops[] = { "STOP" };
    struct stop_run r;
    run_begin(&r, stops, 1);
    EXPECT(run_feed(&r, "abcST") == 3);
    EXPECT(run_feed(&r, "O") == 0);
    EXPECT(run_feed(&r, "x") == 4);            /* "STOx" is released at once */
    EXPECT(run_feed(&r, "SSTO") == 1);         /* "S" cannot start "STOP" followed by "STO"; "STO" held */
    EXPECT(run_flush(&r) == 3);                /* the end releases what was held */
    EXPECT(!r.matched);
    EXPECT(!strcmp(r.out, "abcSTOxSSTO"));
}

static void test_stop_multiple_strings(void)
{
    static const char *const s1[] = { "world", "wor", "xyz" };
    struct stop_run r;
    run_begin(&r, s1, 3);
    run_feed(&r, "hello wor");                 /* "wor" completes before "world" could */
    EXPECT(r.matched);
    run_flush(&r);
    EXPECT(!strcmp(r.out, "hello "));

    static const char *const s2[] = { "abcd", "bc" };
    run_begin(&r, s2, 2);                      /* in one delta, the first to complete wins: "bc", byte 3 */
    run_feed(&r, "xxabcd");
    run_flush(&r);
    EXPECT(r.matched && !strcmp(r.out, "xxa"));

    static const char *const s3[] = { "cd", "abcd" };
    run_begin(&r, s3, 2);                      /* both complete at the same byte: the longer one cuts */
    run_feed(&r, "zab");
    run_feed(&r, "cdq");
    run_flush(&r);
    EXPECT(r.matched && !strcmp(r.out, "z"));

    static const char *const s4[] = { "aab", "ab" };
    run_begin(&r, s4, 2);                      /* overlapping prefixes: "aa" then "ac" releases all */
    EXPECT(run_feed(&r, "aa") == 0);
    EXPECT(run_feed(&r, "c") == 3);
    run_flush(&r);
    EXPECT(!r.matched && !strcmp(r.out, "aac"));
}

static void test_stop_at_start(void)
{
    static const char *const stops[] = { "<x>" };
    struct stop_run r;
    run_begin(&r, stops, 1);
    EXPECT(run_feed(&r, "<x>abc") == 0);
    EXPECT(r.matched);
    run_flush(&r);
    EXPECT(r.n == 0);

    run_begin(&r, NULL, 0);                    /* no stop strings: everything passes at once */
    EXPECT(run_feed(&r, "<x") == 2);
    run_flush(&r);
}

static void test_stop_utf8(void)
{
    static const char *const none[] = { "\x01\x02" };
    struct stop_run r;
    run_begin(&r, none, 1);
    EXPECT(run_feed(&r, "caf") == 3);
    EXPECT(run_feed(&r, "\xC3") == 0);         /* a lead byte alone is held */
    EXPECT(run_feed(&r, "\xA9!") == 3);        /* "é!" */
    EXPECT(run_feed(&r, "\xF0\x9F") == 0);     /* half an emoji */
    EXPECT(run_feed(&r, "\x98") == 0);
    EXPECT(run_feed(&r, "\x80") == 4);         /* U+1F600 complete */
    EXPECT(run_feed(&r, "\xE2\x82") == 0);
    EXPECT(run_flush(&r) == 2);                /* the end releases even a partial character */
    EXPECT(!strcmp(r.out, "caf\xC3\xA9!\xF0\x9F\x98\x80\xE2\x82"));

    static const char *const e[] = { "\xC3\xA9" };   /* stop at "é" */
    run_begin(&r, e, 1);
    const char *text = "na\xC3\xAFve caf\xC3\xA9 au lait";   /* "naïve café au lait": ï is C3 AF */
    char one[2] = { 0, 0 };
    for (const char *c = text; *c; c++) {
        one[0] = *c;
        run_feed(&r, one);
    }
    run_flush(&r);
    EXPECT(r.matched && !strcmp(r.out, "na\xC3\xAFve caf"));

    static const char *const k[] = { "\xE3\x80\x82" };   /* the ideographic full stop */
    run_begin(&r, k, 1);
    EXPECT(run_feed(&r, "\xE4\xBD\xA0\xE5\xA5") == 3);   /* 你 and half of 好 */
    EXPECT(run_feed(&r, "\xBD\xE3\x80") == 3);           /* 好, then a held prefix of the stop */
    EXPECT(run_feed(&r, "\x82\xE5\x90\x97") == 0);
    run_flush(&r);
    EXPECT(r.matched && !strcmp(r.out, "\xE4\xBD\xA0\xE5\xA5\xBD"));
}

/* Random texts over a small alphabet, random stop sets, random cuts: the released text equals the text before
 * the first-completing stop string (computed naively), however the text is cut. */
static void test_stop_matches_naive_reference(void)
{
    static const char alpha[] = "abc";
    for (int trial = 0; trial < 400; trial++) {
        char text[80], stops[3][6];
        const char *sp[3];
        int ns = 1 + (int)(test_rand() * 3), tl = (int)(test_rand() * 60);
        for (int i = 0; i < tl; i++) text[i] = alpha[(int)(test_rand() * 3)];
        text[tl] = 0;
        for (int j = 0; j < ns; j++) {
            int l = 1 + (int)(test_rand() * 5);
            for (int i = 0; i < l; i++) stops[j][i] = alpha[(int)(test_rand() * 3)];
            stops[j][l] = 0;
            sp[j] = stops[j];
        }
        /* naive: smallest end, then longest */
        int best_end = -1, best_start = -1;
        for (int e = 1; e <= tl && best_end < 0; e++)
            for (int j = 0; j < ns; j++) {
                int l = (int)strlen(stops[j]);
                if (l <= e && !strncmp(text + e - l, stops[j], (size_t)l) &&
                    (best_end < 0 || e - l < best_start)) {
                    best_end = e;
                    best_start = e - l;
                }
            }
        struct stop_run r;
        run_begin(&r, sp, ns);
        for (int i = 0; i < tl;) {
            int step = 1 + (int)(test_rand() * 7);
            char piece[8];
            if (step > tl - i) step = tl - i;
            memcpy(piece, text + i, (size_t)step);
            piece[step] = 0;
            run_feed(&r, piece);
            i += step;
        }
        run_flush(&r);
        int want_n = best_end >= 0 ? best_start : tl;
        EXPECTF(r.matched == (best_end >= 0) && (int)r.n == want_n && !strncmp(r.out, text, (size_t)want_n),
                "text \"%s\", %d stops (\"%s\"...): got \"%s\" matched %d", text, ns, stops[0], r.out,
                r.matched);
    }
}

int main(void)
{
    RUN_TEST(test_philox_known_answers);
    RUN_TEST(test_uniform_keyed);
    RUN_TEST(test_samp_exp);
    RUN_TEST(test_infinite_logits);
    RUN_TEST(test_greedy_ties_and_bad_values);
    RUN_TEST(test_suppressed_never_chosen);
    RUN_TEST(test_top_k_1_is_greedy);
    RUN_TEST(test_keyed_determinism);
    RUN_TEST(test_distribution_after_warpers);
    RUN_TEST(test_top_p_boundary);
    RUN_TEST(test_pick_intervals);
    RUN_TEST(test_min_p_relative);
    RUN_TEST(test_full_vocab_selection);
    RUN_TEST(test_validation);
    RUN_TEST(test_finish_reasons);
    RUN_TEST(test_stop_split_across_deltas);
    RUN_TEST(test_stop_partial_then_mismatch);
    RUN_TEST(test_stop_multiple_strings);
    RUN_TEST(test_stop_at_start);
    RUN_TEST(test_stop_utf8);
    RUN_TEST(test_stop_matches_naive_reference);
    return test_report();
}
