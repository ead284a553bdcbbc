/* sampler — turns one row of logits into one token id, and decides when a stream ends.
 *
 * Why it exists: every stream's next token comes from here, on the CPU reference path and (through
 * samp_pick_sorted / samp_uniform) on the GPU path. It is written so that a row's token is a pure function
 * of (parameters, logits row, seed, position): that is what lets the engine batch, draft, cache and resume
 * a request without changing its tokens (design.md, "Exactness contract").
 *
 * What it must not do: keep hidden state between rows (no global RNG, no stream counter), read the clock,
 * allocate per token, or parse JSON (the server fills struct samp_params; samp_params_validate guards it).
 *
 * Dimension letter: V = vocabulary size (262144 for Gemma 4).
 *
 * ---------------------------------------------------------------------------------------------------------
 * THE ALGORITHM, exactly (a GPU port must follow it step by step to reproduce the same tokens)
 *
 * Order of the stages matches Hugging Face transformers `GenerationMixin._get_logits_processor`
 * (src/transformers/generation/utils.py): the plain processors come first, among them
 * SuppressTokensLogitsProcessor (suppressed ids -> -inf); then, only when do_sample, the warpers in this
 * order: TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper (min_p "applied after
 * temperature scaling"), each with min_tokens_to_keep = 1 for non-beam sampling.
 *
 *  1. Candidates. Token i is a candidate iff i is not in suppress_ids and logit x_i > -inf (so NaN and -inf
 *     are never chosen). No candidate at all: the result is -1.
 *  2. Rank order. Candidates are ordered by logit descending, then id ascending (float comparison, so -0.0
 *     and +0.0 are equal and fall back to id). r = 0, 1, ... is the rank; x_0 is the largest logit.
 *  3. Greedy (temperature == 0): the result is the rank-0 candidate (argmax, lowest id on ties). Stop here.
 *  4. Top-k (top_k > 0): keep ranks r < min(top_k, n). Unlike HF, which keeps every token tied with the k-th
 *     logit, exactly k are kept (ties broken by id): this makes top_k = 1 equal greedy, and the set a pure
 *     function of the rank order. Let n be the number kept.
 *  5. Weights, in double precision: w_r = 1 if x_r == x_0, else samp_exp(((double)x_r - (double)x_0) /
 *     (double)T), samp_exp being the sampler's own exp (below). (w_r = p_r / p_0 of the tempered softmax.)
 *  6. Prefix sums in rank order, in double: C_r = C_{r-1} + w_r, C_{-1} = 0. Z = C_{n-1}.
 *  7. Top-p (top_p < 1): m_p = the smallest m >= 1 with C_{m-1} >= (double)top_p * Z, or n if none. This is
 *     HF's rule "drop a token when the ascending cumulative mass up to it is <= 1 - top_p": a token stays iff
 *     the mass strictly above it is < top_p, i.e. the smallest set whose mass reaches top_p, the token that
 *     crosses top_p included; the top token always stays (min_tokens_to_keep = 1).
 *  8. Min-p (min_p > 0): m_min = the smallest r with w_r < (double)min_p, or n if none. (HF: drop p_r <
 *     min_p * p_max; p_r / p_max = w_r, and renormalisation after top-p does not change that ratio.)
 *     m_min >= 1 because w_0 = 1 > min_p.
 *  9. m = min(m_p, m_min). W = C_{m-1}. With u = samp_uniform(seed, position) in [0, 1) and t = u * W
 *     (one double multiply), the result is the candidate at the smallest r < m with C_r > t: rank r owns
 *     [C_{r-1}, C_r) of [0, W). Such an r always exists (u < 1 makes the rounded t < W), and a zero-weight
 *     rank is never chosen.
 *
 * Every operation above is an IEEE-754 correctly rounded double operation (samp_exp included, by
 * construction), so a port that keeps the same order of additions and does not fuse multiply-adds
 * reproduces every token bit for bit. Steps 1-4 are comparisons only. A GPU path may also select and order
 * the candidates on the device and hand that list (<= top_k entries) to samp_pick_sorted on the host.
 *
 * THE RANDOM NUMBER: samp_uniform(seed, position) = Philox4x32-10 (Salmon et al., SC'11; Random123's
 * reference definition, checked against its known-answer vectors in the tests) with
 *     key     = { (uint32)seed, (uint32)(seed >> 32) }
 *     counter = { (uint32)position, (uint32)(position >> 32), SAMP_STREAM_TOKEN (= 0), 0 }
 * giving out[0..3]; then u = (((uint64)out[0] << 21) ^ (out[1] >> 11)) * 2^-53, a double in [0, 1) with 53
 * random bits. position = the absolute index, in the whole sequence (prompt included), of the token being
 * generated. Counter word 2 names the purpose of the draw, so other uses get their own independent streams.
 * ---------------------------------------------------------------------------------------------------------
 */
#ifndef G4_SAMPLER_H
#define G4_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/* --- limits (named, documented, tested) ----------------------------------------------------------------- */
#define SAMP_MAX_TEMPERATURE      2.0f     /* temperature in [0, 2], as OpenAI's API */
#define SAMP_MAX_TOKENS_LIMIT     262144   /* max_tokens in [1, this]: Gemma 4's max_position_embeddings */
#define SAMP_MAX_STOP_IDS         16       /* stop ids per request (generation_config has 3) */
#define SAMP_MAX_SUPPRESS_IDS     64       /* suppressed ids per request (generation_config has 2) */
#define SAMP_MAX_STOP_STRINGS     8        /* stop strings per request (OpenAI allows 4) */
#define SAMP_MAX_STOP_STRING_LEN  256      /* bytes per stop string, NUL not counted; empty is refused */
#define SAMP_DEFAULT_MAX_TOKENS   4096     /* what samp_params_init puts in max_tokens */

/* Philox counter word 2: what a draw is for. Only token draws exist so far. */
#define SAMP_STREAM_TOKEN 0u

/* --- parameters ----------------------------------------------------------------------------------------- */

/* One request's sampling and stopping parameters. A plain struct (no pointers): copy it freely. */
struct samp_params {
    float temperature;   /* 0 = greedy; else [0, SAMP_MAX_TEMPERATURE] */
    int32_t top_k;       /* 0 = off; else keep the top_k best tokens; [0, V] */
    float top_p;         /* 1 = off; (0, 1] */
    float min_p;         /* 0 = off; [0, 1) */
    uint64_t seed;       /* keys the draws: with the position, fixes every random number */
    int32_t max_tokens;  /* generated tokens at most; [1, SAMP_MAX_TOKENS_LIMIT] */
    int32_t stop_ids[SAMP_MAX_STOP_IDS];             /* a generated one ends the stream; ids in [0, V) */
    int32_t n_stop_ids;
    int32_t suppress_ids[SAMP_MAX_SUPPRESS_IDS];     /* never generated, greedy or not; ids in [0, V) */
    int32_t n_suppress_ids;
    char stop_strings[SAMP_MAX_STOP_STRINGS][SAMP_MAX_STOP_STRING_LEN + 1];  /* NUL-terminated UTF-8 */
    int32_t n_stop_strings;
};

/* Neutral parameters: T = 1, no top-k/top-p/min-p, seed 0, max_tokens SAMP_DEFAULT_MAX_TOKENS, no stops. */
void samp_params_init(struct samp_params *p);

/* Gemma 4's generation_config.json defaults (gemma4-spec.md §1.2): T = 1.0, top_k = 64, top_p = 0.95,
 * stop ids {1, 106, 50}, suppress ids {258883, 258882}. A checkpoint's own file, when read, overrides. */
void samp_params_gemma4(struct samp_params *p);

/* Checks every field against its range for a vocabulary of vocab_size tokens. Returns 0, or -1 with a
 * message in err (G4_ERR_MAX bytes) that names the field, the allowed range and the value, e.g.
 * "temperature must be in [0, 2], got -1". NaN is refused everywhere. */
int samp_params_validate(const struct samp_params *p, int32_t vocab_size, char *err);

/* --- random numbers ------------------------------------------------------------------------------------- */

/* Philox4x32-10 block function: out = philox(ctr, key). Exposed for the tests' known-answer vectors and
 * for the CUDA port's own check. */
void samp_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The uniform double in [0, 1) that the token at this position draws (definition above). */
double samp_uniform(uint64_t seed, uint64_t position);

/* exp(a) for a <= 0 (a > 0 is treated as 0), built only from correctly rounded IEEE-754 double operations
 * (+, -, *, exact power-of-two scaling), so that every device computes the same bits; libm's and
 * CUDA's exp() may differ in the last bit. Relative error ~1e-16. Returns exactly 0 for a < SAMP_EXP_MIN_ARG
 * (-707: weights below e^-707 relative to the top token are dropped), and for -inf and NaN. Definition
 * (sampler.c): k = (a * INV_LN2 + 1.5 * 2^52) - 1.5 * 2^52; r = (a - k * LN2_HI) - k * LN2_LO; q = Horner of
 * sum_{n=0..13} r^n / n! with coefficients 1.0 / n! rounded to double, from 1/13! down; result = q * 2^k.
 * The port must not contract a * b + c into fused multiply-adds. C: -std=c11 makes gcc keep them apart
 * (-ffp-contract=off); checked on the build machine: -O2 -march=native -std=c11 gives the same bits as
 * plain -O2, while -std=gnu11 -march=native does not. CUDA: __dmul_rn / __dadd_rn, or --fmad=false. */
#define SAMP_EXP_MIN_ARG (-707.0)
double samp_exp(double a);

/* --- sampling ------------------------------------------------------------------------------------------- */

/* Scratch space for samp_sample, sized for one vocabulary. One per thread that samples (the engine thread);
 * created once, reused for every row. */
typedef struct samp_ws samp_ws;

samp_ws *samp_ws_create(int32_t vocab_size);
void samp_ws_destroy(samp_ws *ws);

/* Samples one token from one row of logits. logits: (V) float32, V = the workspace's vocab_size. p must
 * have passed samp_params_validate for that V. position: the absolute index of the token being generated.
 * Returns the token id, or -1 when no token is a candidate (all suppressed, -inf or NaN). */
int32_t samp_sample(const struct samp_params *p, const float *logits, uint64_t position, samp_ws *ws);

/* Steps 5-9 of the algorithm on a candidate list already in rank order (step 2) and already cut by top-k
 * (step 4): logits (n) and ids (n), n >= 1, every logit > -inf. u in [0, 1) (from samp_uniform). w: scratch
 * of n doubles. Temperature must be > 0 (greedy is ids[0]). Returns the chosen id. For GPU paths that
 * select candidates on the device, and for the tests. */
int32_t samp_pick_sorted(const struct samp_params *p, const float *logits, const int32_t *ids, int32_t n,
                         double u, double *w);

/* --- stopping ------------------------------------------------------------------------------------------- */

enum samp_finish {
    SAMP_FINISH_NONE = 0,      /* keep going */
    SAMP_FINISH_STOP_ID,       /* a stop id was generated (showing its text is the caller's choice) */
    SAMP_FINISH_STOP_STRING,   /* a stop string appeared in the text; the text before it was emitted */
    SAMP_FINISH_LENGTH,        /* max_tokens tokens were generated */
};

/* "stop", "length" or "none": OpenAI's finish_reason for a finish (stop ids and strings are both "stop"). */
const char *samp_finish_name(enum samp_finish f);

/* 1 if token is one of p's stop ids. */
int samp_is_stop_id(const struct samp_params *p, int32_t token);

/* After the n_generated-th token (1-based count, token included) was generated: STOP_ID if it is a stop id,
 * else LENGTH if n_generated >= max_tokens, else NONE. A stop id wins over the length limit. */
enum samp_finish samp_finish_after_token(const struct samp_params *p, int32_t token, int32_t n_generated);

/* Streaming stop-string matcher. Text arrives in deltas (the detokenized text of each new token); the
 * matcher holds back any tail that could still become a stop string, and any incomplete UTF-8 character at
 * the end, and releases the rest. When a stop string completes, the text before it is released and the stop
 * string itself never is (as OpenAI does). With several stop strings, the one that completes first in the
 * byte stream wins (the longest if several complete at the same byte); the result does not depend on how the
 * text was cut into deltas. Matching is bytewise, so it is exact on UTF-8. */
struct samp_stop {
    char strs[SAMP_MAX_STOP_STRINGS][SAMP_MAX_STOP_STRING_LEN + 1];  /* copies of the stop strings */
    size_t lens[SAMP_MAX_STOP_STRINGS];                               /* their lengths, bytes, >= 1 */
    int n;                                                            /* how many */
    char *buf;       /* pending text: [0, out) was released by the last call, [out, len) is held back */
    size_t len;      /* bytes in buf */
    size_t cap;      /* bytes allocated */
    size_t out;      /* bytes at the front of buf released by the last call, dropped at the next */
    int stopped;     /* 1 once a stop string matched: later calls release nothing */
};

/* Copies p's stop strings (validated) into s. s owns a buffer: call samp_stop_free. */
void samp_stop_init(struct samp_stop *s, const struct samp_params *p);
void samp_stop_free(struct samp_stop *s);

/* Feeds len bytes of new text. Returns how many bytes may be emitted now and points *text at them (valid
 * until the next call on s). *matched is set to 1 when a stop string completed (the returned bytes are the
 * last text to emit; the stream should finish with SAMP_FINISH_STOP_STRING), else 0. */
size_t samp_stop_feed(struct samp_stop *s, const char *delta, size_t len, const char **text, int *matched);

/* End of stream without a stop-string match (stop id, length): releases everything held back. Returns its
 * length and points *text at it. Nothing after a match. */
size_t samp_stop_flush(struct samp_stop *s, const char **text);

#endif
