/* sampler_core — the arithmetic of a draw, written once for the CPU (sampler.c) and the GPU (kernels/sample.cu).
 *
 * Why it exists: the exactness contract says a request's tokens do not depend on the device that sampled
 * them. The simplest proof is one source: Philox4x32-10, the keyed uniform, the sampler's own exp, the rank
 * key of a logit, and steps 5-9 of the algorithm in sampler.h (weights, top-p, min-p, the draw) live here as
 * inline functions that both compilers see. Every double operation goes through SAMP_MUL / SAMP_ADD /
 * SAMP_SUB / SAMP_DIV: plain operators in C (-std=c11 keeps multiply and add apart), the correctly rounded
 * intrinsics on the device (__dmul_rn and friends, which nvcc never fuses), so both round the same way.
 *
 * Plain C11 and CUDA C++ at once: no allocation, no asserts (callers check the returned -1), no libm. */
#ifndef G4_SAMPLER_CORE_H
#define G4_SAMPLER_CORE_H

#include <stdint.h>

#ifdef __CUDACC__
#define SAMP_FN static __host__ __device__ __forceinline__
#else
#define SAMP_FN static inline
#endif

#if defined(__CUDA_ARCH__)
#define SAMP_MUL(a, b) __dmul_rn((a), (b))
#define SAMP_ADD(a, b) __dadd_rn((a), (b))
#define SAMP_SUB(a, b) __dsub_rn((a), (b))
#define SAMP_DIV(a, b) __ddiv_rn((a), (b))
#else
#define SAMP_MUL(a, b) ((a) * (b))
#define SAMP_ADD(a, b) ((a) + (b))
#define SAMP_SUB(a, b) ((a) - (b))
#define SAMP_DIV(a, b) ((a) / (b))
#endif

#define SAMP_CORE_EXP_MIN_ARG (-707.0)   /* = SAMP_EXP_MIN_ARG (sampler.h) */

/* ---- Philox4x32-10 and the uniform double ------------------------------------------------------------- */

SAMP_FN void samp_core_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        if (round > 0) {             /* the key is bumped before every round but the first */
            k0 += 0x9E3779B9u;       /* golden ratio */
            k1 += 0xBB67AE85u;       /* sqrt(3) - 1 */
        }
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c1 = (uint32_t)p1;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c3 = (uint32_t)p0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* u in [0, 1) with 53 random bits; purpose is Philox counter word 2 (SAMP_STREAM_TOKEN for token draws). */
SAMP_FN double samp_core_uniform(uint64_t seed, uint64_t position, uint32_t purpose)
{
    uint32_t ctr[4] = { (uint32_t)position, (uint32_t)(position >> 32), purpose, 0 };
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    uint32_t out[4];
    samp_core_philox(ctr, key, out);
    uint64_t bits = ((uint64_t)out[0] << 21) ^ (out[1] >> 11);   /* 32 + 21 = 53 bits: exact in a double */
    return (double)bits * 0x1p-53;                                /* a power of two: exact */
}

/* ---- exp from IEEE basic operations only ---------------------------------------------------------------- */

/* samp_exp for a in [SAMP_CORE_EXP_MIN_ARG, 0] (definition in sampler.h). Cody-Waite split of ln 2
 * (fdlibm's): the high part has 32 significant bits, so k * LN2_HI is exact for |k| < 2^21. */
SAMP_FN double samp_core_exp(double a)
{
    /* nearest integer to a / ln 2 (ties to even), in [-1020, 0]: adding and removing 1.5 * 2^52 rounds away
     * the fraction in one correctly rounded addition */
    double k = SAMP_SUB(SAMP_ADD(SAMP_MUL(a, 0x1.71547652b82fep+0), 0x1.8p52), 0x1.8p52);
    double r = SAMP_SUB(SAMP_SUB(a, SAMP_MUL(k, 0x1.62e42feep-1)), SAMP_MUL(k, 0x1.a39ef35793c76p-33));
    /* Taylor series to r^13 / 13! (next term < 4e-18), Horner, coefficients 1/n! rounded to double */
#define SAMP_HORNER(c) q = SAMP_ADD(SAMP_MUL(q, r), (c))
    double q = 1.0 / 6227020800.0;   /* 1/13! */
    SAMP_HORNER(1.0 / 479001600.0);  /* 1/12! */
    SAMP_HORNER(1.0 / 39916800.0);
    SAMP_HORNER(1.0 / 3628800.0);
    SAMP_HORNER(1.0 / 362880.0);
    SAMP_HORNER(1.0 / 40320.0);
    SAMP_HORNER(1.0 / 5040.0);
    SAMP_HORNER(1.0 / 720.0);
    SAMP_HORNER(1.0 / 120.0);
    SAMP_HORNER(1.0 / 24.0);
    SAMP_HORNER(1.0 / 6.0);
    SAMP_HORNER(0.5);
    SAMP_HORNER(1.0);
    SAMP_HORNER(1.0);
#undef SAMP_HORNER
    union { uint64_t u; double d; } scale;   /* 2^k, exact: k >= -1020 keeps it normal */
    scale.u = (uint64_t)((int64_t)k + 1023) << 52;
    return SAMP_MUL(q, scale.d);
}

/* ---- rank keys ------------------------------------------------------------------------------------------ */

/* Sort key: unsigned ascending order of keys is logit descending order. -0.0 + 0.0f is +0.0, so the two
 * zeros share a key; negative floats have all bits flipped, positive ones the sign bit (branch-free). Never
 * called on NaN. */
SAMP_FN uint32_t samp_core_desc_key(float x)
{
    union { float f; uint32_t u; } v;
    v.f = x + 0.0f;
    uint32_t neg = (uint32_t) - (int32_t)(v.u >> 31);   /* all ones for negative logits */
    return ~(v.u ^ (neg | 0x80000000u));
}

/* The logit a key came from (+0.0 for either zero). */
SAMP_FN float samp_core_key_logit(uint32_t key)
{
    union { float f; uint32_t u; } v;
    uint32_t asc = ~key;
    v.u = (asc & 0x80000000u) ? (asc & 0x7fffffffu) : ~asc;
    return v.f;
}

/* ---- steps 5-9: weights, top-p, min-p and the draw, in rank order ---------------------------------------- */

/* logits (n) in rank order, n >= 1, all > -inf; temperature > 0; u in [0, 1); w: n doubles of scratch.
 * Returns the chosen rank, or -1 if the arguments break those rules (a bug in the caller). */
SAMP_FN int32_t samp_core_pick_rank(float temperature, float top_p, float min_p, const float *logits, int32_t n,
                                    double u, double *w)
{
    if (!(n >= 1 && temperature > 0.0f && u >= 0.0 && u < 1.0)) return -1;
    const double x0 = logits[0], t = temperature;
    for (int32_t r = 0; r < n; r++) {   /* w_r = samp_exp((x_r - x_0) / T), 1 for x_r == x_0 */
        double x = logits[r], a = SAMP_DIV(SAMP_SUB(x, x0), t);
        double e = samp_core_exp(a >= SAMP_CORE_EXP_MIN_ARG ? a : SAMP_CORE_EXP_MIN_ARG);
        w[r] = x == x0 ? 1.0 : a >= SAMP_CORE_EXP_MIN_ARG ? e : 0.0;
    }
    int32_t m_min = n;
    if (min_p > 0.0f) {
        for (int32_t r = 0; r < n; r++) {
            if (w[r] < (double)min_p) {
                m_min = r;
                break;
            }
        }
    }
    for (int32_t r = 1; r < n; r++) w[r] = SAMP_ADD(w[r], w[r - 1]);   /* prefix sums C_r */

    int32_t m = n;
    if (top_p < 1.0f) {
        const double cut = SAMP_MUL((double)top_p, w[n - 1]);
        for (int32_t r = 1; r < n; r++) {
            if (w[r - 1] >= cut) {   /* the mass above rank r already reaches top_p */
                m = r;
                break;
            }
        }
    }
    if (m_min < m) m = m_min;

    /* The smallest r in [0, m) with C_r > t, by bisection (C is non-decreasing). It exists: for u < 1 the
     * rounded product u * W is below W (W * (1 - 2^-53) is exact for a power of two, and nearer the
     * predecessor of W otherwise). A zero-weight rank is never chosen: C_r == C_{r-1} > t picks r - 1. */
    const double target = SAMP_MUL(u, w[m - 1]);
    int32_t lo = 0, hi = m - 1;
    if (!(w[hi] > target)) return -1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (w[mid] > target) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

#endif
