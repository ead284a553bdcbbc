// attention — every row of a step over its own stream's keys (spec §2.6, §4.6): keys of the row's item come
// from the step's new k/v, older ones from the layer's cache (ring slot pos % cap). Version 1: one warp per
// (row, query head), keys visited one at a time in increasing position with an online softmax in fp32, so
// a row's result depends only on its own keys — never on the batch, the chunking, or the row's place.
//
// Masks: full layers see k <= p (and, with mask_all, their own image block); sliding layers see
// k > p - W and (k <= p or same block) — or, with mask_all, (k > p - W and k <= p) or same block.
#include "common.cuh"
#include "kernels.h"

#define MAX_PER_LANE 16 // D <= 512

__device__ __forceinline__ const uint16_t *key_at(const uint16_t *fresh, const uint16_t *cache,
                                                  const struct kern_row &m, int kp, int cap, int kvd)
{
    if (kp >= m.pos0) return fresh + (size_t)(m.base + kp - m.pos0) * kvd;
    return cache + ((size_t)m.stream * cap + kp % cap) * kvd;
}

__global__ void attention_kernel(const float *__restrict__ q, const uint16_t *__restrict__ k_new,
                                 const uint16_t *__restrict__ v_new, const uint16_t *__restrict__ cache_k,
                                 const uint16_t *__restrict__ cache_v, const struct kern_row *__restrict__ meta,
                                 int n_heads, int n_kv, int D, int cap, int is_full, int window, int mask_all,
                                 uint16_t *__restrict__ out)
{
    int r = blockIdx.x, h = blockIdx.y, lane = threadIdx.x, kvh = h / (n_heads / n_kv), kvd = n_kv * D;
    struct kern_row m = meta[r];
    int p = m.pos, in_block = m.block >= 0, last = m.pos0 + (m.item_end - m.base) - 1;
    int lo = is_full ? 0 : p - window + 1, hi = p;
    float qv[MAX_PER_LANE], acc[MAX_PER_LANE], mx = -INFINITY, l = 0.0f;
    const float *qr = q + ((size_t)r * n_heads + h) * D;
    int per = (D + 31) / 32;
    if (in_block && (!is_full || mask_all)) hi = last;
    if (in_block && mask_all && lo > m.pos0) lo = m.pos0;
    if (lo < 0) lo = 0;
    for (int j = 0; j < per; j++) {
        int i = lane + 32 * j;
        qv[j] = i < D ? qr[i] : 0.0f;
        acc[j] = 0.0f;
    }
    for (int kp = lo; kp <= hi; kp++) {
        int same = in_block && kp >= m.pos0 && meta[m.base + kp - m.pos0].block == m.block;
        int vis = is_full ? (kp <= p || (same && mask_all))
                          : (mask_all ? ((kp > p - window && kp <= p) || same) : (kp > p - window && (kp <= p || same)));
        if (!vis) continue;
        const uint16_t *kr = key_at(k_new, cache_k, m, kp, cap, kvd) + (size_t)kvh * D;
        const uint16_t *vr = key_at(v_new, cache_v, m, kp, cap, kvd) + (size_t)kvh * D;
        float s = 0.0f;
        for (int j = 0; j < per; j++) {
            int i = lane + 32 * j;
            if (i < D) s += qv[j] * bf16_bits_to_f32(kr[i]);
        }
        s = warp_sum(s);
        float mn = fmaxf(mx, s), corr = expf(mx - mn), pw = expf(s - mn);
        l = l * corr + pw;
        for (int j = 0; j < per; j++) {
            int i = lane + 32 * j;
            acc[j] = acc[j] * corr + (i < D ? pw * bf16_bits_to_f32(vr[i]) : 0.0f);
        }
        mx = mn;
    }
    uint16_t *o = out + ((size_t)r * n_heads + h) * D;
    for (int j = 0; j < per; j++) {
        int i = lane + 32 * j;
        if (i < D) o[i] = f32_to_bf16_bits(acc[j] / l);
    }
}

extern "C" void kern_attention(const float *q, const uint16_t *k_new, const uint16_t *v_new, const uint16_t *cache_k,
                               const uint16_t *cache_v, const struct kern_row *rows_meta, int rows, int n_heads,
                               int n_kv, int D, int cap, int is_full, int window, int mask_all, uint16_t *out,
                               kern_stream s)
{
    dim3 grid(rows, n_heads);
    if (rows == 0) return;
    if (D > 32 * MAX_PER_LANE) {
        fprintf(stderr, "g4: fatal: kern_attention: head dim %d over %d\n", D, 32 * MAX_PER_LANE);
        abort();
    }
    attention_kernel<<<grid, 32, 0, s>>>(q, k_new, v_new, cache_k, cache_v, rows_meta, n_heads, n_kv, D, cap, is_full,
                                         window, mask_all, out);
    KERN_LAUNCHED();
}
