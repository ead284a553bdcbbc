/* cpu_ops — the fp32 building blocks of the CPU reference forward: a bf16-weight matrix product spread
 * over a thread pool, RMSNorm, LayerNorm, RoPE, tanh-GELU.
 *
 * Every output element is computed by one thread with one fixed reduction order (8 interleaved partial
 * sums combined pairwise), so results are identical for any thread count and any number of rows. */
#ifndef G4_CPU_OPS_H
#define G4_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/cpu/pool.h"

/* y (T, O) = x (T, I) · wᵀ + bias, w (O, I) bf16 row-major, bias (O) fp32 or NULL. */
void cpu_matmul_bf16(struct pool *p, const float *x, int T, int I, const uint16_t *w, int O, const float *bias,
                     float *y);

/* Dot product of fp32 x and bf16 w over n elements, in the fixed order above. */
float cpu_dot_bf16(const float *x, const uint16_t *w, int n);

/* Dot product of two fp32 vectors, same fixed order. */
float cpu_dot_f32(const float *a, const float *b, int n);

/* y = x / sqrt(mean(x²) + eps) (· w when w is not NULL), over n elements. x and y may alias. */
void cpu_rmsnorm(const float *x, int n, const float *w, float eps, float *y);

/* y = (x - mean) / sqrt(var + eps) · w + b (biased variance), over n elements. x and y may alias. */
void cpu_layernorm(const float *x, int n, const float *w, const float *b, float eps, float *y);

/* Rotates one head vector x (d) in place at position pos, rotate-half pairing (i, i + d/2), with
 * inv_freq (d/2) (zeros leave their pair untouched, as proportional RoPE needs). */
void cpu_rope(float *x, int d, const float *inv_freq, int pos);

/* Rounds n values to bf16 in place (round to nearest even): the CUDA path's activation precision. */
void cpu_round_bf16(float *x, size_t n);

/* gelu with the tanh approximation (PyTorch's gelu(approximate="tanh")). */
float cpu_gelu_tanh(float x);

/* Fills inv_freq (d/2) the way transformers does: 1 / theta^(2i/d) in fp32 for i < rotary_pairs, 0 after. */
void cpu_rope_inv_freq(float *inv_freq, int d, double theta, int rotary_pairs);

#endif
