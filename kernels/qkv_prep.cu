// qkv_prep — after the fused q|k|v projection, per row and head: RMSNorm of each query head (q_norm) then
// RoPE, stored bf16 for the attention's tensor cores; of each key head (k_norm) then RoPE, stored bf16 for
// the cache; weightless RMSNorm of each value head, stored bf16. One warp per (row, head), the head's values
// loaded at once (a decode step is latency-bound here); RoPE pairs (i, i + D/2) rotate by pos * inv_freq[i]
// (zeros: the proportional RoPE's untouched channels). A block holds QP_WARPS warps, the heads h0 .. h0 + 7 of
// one row: a 512-row prompt chunk of the 12B ran 16,384 one-warp blocks, 4 % of a pass (docs/perf.md,
// version 12), where 8-warp blocks keep more loads in flight per multiprocessor. Each warp's arithmetic is the
// same whichever block holds it.
#include "common.cuh"
#include "kernels.h"

#define MAX_D 512
#define QP_WARPS 8

__global__ void qkv_prep_kernel(const float *__restrict__ qkv, int ld, int k_off, int v_off,
                                const float *__restrict__ q_norm, const float *__restrict__ k_norm,
                                const float *__restrict__ inv_freq, const struct kern_row *__restrict__ meta, float eps,
                                int n_heads, int n_kv, int D, uint16_t *__restrict__ q_out, uint16_t *__restrict__ k_out,
                                uint16_t *__restrict__ v_out, int early)
{
    kern_dep_launch();
    if (!early) kern_dep_wait();
    __shared__ float bufs[QP_WARPS][MAX_D];
    int r = blockIdx.x, h = blockIdx.y * QP_WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31, kind, head;
    float *buf = bufs[threadIdx.x >> 5];
    if (h >= n_heads + 2 * n_kv) { // past the last head (a whole warp): it still waits, as every thread does
        kern_dep_wait();
        return;
    }
    const float *src, *w, *row = qkv + (size_t)r * ld;
    uint16_t *dst;
    float ss = 0.0f, scale;
    if (h < n_heads) {
        kind = 0, head = h, src = row + (size_t)head * D, w = q_norm, dst = q_out + ((size_t)r * n_heads + head) * D;
    } else if (h < n_heads + n_kv) {
        kind = 1, head = h - n_heads, src = row + k_off + (size_t)head * D, w = k_norm;
        dst = k_out + ((size_t)r * n_kv + head) * D;
    } else {
        kind = 2, head = h - n_heads - n_kv, src = row + v_off + (size_t)head * D, w = NULL;
        dst = v_out + ((size_t)r * n_kv + head) * D;
    }
    // early loads (kernels.h): the norm weights, the position and the frequencies (this lane's rotation pairs
    // i = lane + 32 j) are the pass's constants (no kernel writes them), so they are asked for before the
    // wait for the product, rather than after the sum and after the barrier
    float4 wpre[MAX_D / 128];
    float fpre[MAX_D / 64], pos_pre = 0.0f;
    if (early) {
        if (kind != 2) {
            pos_pre = (float)meta[r].pos;
#pragma unroll
            for (int j = 0; j < MAX_D / 64; j++)
                if (lane + 32 * j < D / 2) fpre[j] = inv_freq[lane + 32 * j];
        }
        if (w && D % 128 == 0)
#pragma unroll
            for (int j = 0; j < MAX_D / 128; j++)
                if (lane + 32 * j < D / 4) wpre[j] = reinterpret_cast<const float4 *>(w)[lane + 32 * j];
        kern_dep_wait();
    }
    if (D % 128 == 0) { // float4 pieces, all loads of the head at once (D <= MAX_D: at most 4 per lane)
        float4 v[MAX_D / 128];
#pragma unroll
        for (int j = 0; j < MAX_D / 128; j++)
            if (lane + 32 * j < D / 4) v[j] = reinterpret_cast<const float4 *>(src)[lane + 32 * j];
#pragma unroll
        for (int j = 0; j < MAX_D / 128; j++)
            if (lane + 32 * j < D / 4) ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
        ss = warp_sum(ss);
        scale = 1.0f / sqrtf(ss / (float)D + eps);
#pragma unroll
        for (int j = 0; j < MAX_D / 128; j++) {
            int q = lane + 32 * j;
            if (q >= D / 4) break;
            float4 ww = !w ? make_float4(1.0f, 1.0f, 1.0f, 1.0f) : early ? wpre[j] : reinterpret_cast<const float4 *>(w)[q];
            buf[4 * q] = v[j].x * scale * ww.x;
            buf[4 * q + 1] = v[j].y * scale * ww.y;
            buf[4 * q + 2] = v[j].z * scale * ww.z;
            buf[4 * q + 3] = v[j].w * scale * ww.w;
        }
    } else {
        for (int i = lane; i < D; i += 32) ss += src[i] * src[i];
        ss = warp_sum(ss);
        scale = 1.0f / sqrtf(ss / (float)D + eps);
        for (int i = lane; i < D; i += 32) buf[i] = w ? src[i] * scale * w[i] : src[i] * scale;
    }
    __syncwarp();
    if (kind == 2) {
        for (int i = lane; i < D; i += 32) dst[i] = f32_to_bf16_bits(buf[i]);
        return;
    }
    float pos = early ? pos_pre : (float)meta[r].pos;
#pragma unroll
    for (int j = 0; j < MAX_D / 64; j++) {
        int i = lane + 32 * j;
        if (i >= D / 2) break;
        float a = buf[i], b = buf[i + D / 2], c = 1.0f, sn = 0.0f, f = early ? fpre[j] : inv_freq[i];
        if (f != 0.0f) sincosf(pos * f, &sn, &c);
        float x0 = f != 0.0f ? a * c - b * sn : a, x1 = f != 0.0f ? b * c + a * sn : b;
        dst[i] = f32_to_bf16_bits(x0);
        dst[i + D / 2] = f32_to_bf16_bits(x1);
    }
}

extern "C" void kern_qkv_prep(const float *qkv, int ld, int k_off, int v_off, const float *q_norm,
                              const float *k_norm, const float *inv_freq, const struct kern_row *rows_meta, float eps,
                              int rows, int n_heads, int n_kv, int D, uint16_t *q_out, uint16_t *k_out,
                              uint16_t *v_out, kern_stream s)
{
    dim3 grid(rows, (n_heads + 2 * n_kv + QP_WARPS - 1) / QP_WARPS);
    if (rows == 0) return;
    if (D > MAX_D || D % 2) {
        fprintf(stderr, "g4: fatal: kern_qkv_prep: head dim %d unsupported (even, <= %d)\n", D, MAX_D);
        abort();
    }
    kern_launch(qkv_prep_kernel, dim3(grid), dim3(32 * QP_WARPS), 0, s, qkv, ld, k_off, v_off, q_norm, k_norm, inv_freq,
                rows_meta, eps, n_heads, n_kv, D, q_out, k_out, v_out, kern_early_loads(KERN_EARLY_QKV_PREP));
    KERN_LAUNCHED();
}
