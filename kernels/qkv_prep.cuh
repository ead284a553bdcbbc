// qkv_prep.cuh — one (row, head) of the q/k/v preparation by one warp: the arithmetic that the standalone
// kernel (qkv_prep.cu) and the decode q|k|v product's tail (gemm_tail.cuh) share, so both give the same bits.
// Head index h: queries 0 .. n_heads - 1, keys n_heads .. + n_kv - 1, values after them.
#pragma once

#include "common.cuh"
#include "kernels.h"

#define QP_MAX_D 512

// The pass's constants one warp needs for its head (early loads, kernels.h), when loaded ahead.
struct qp_pre {
    float4 w[QP_MAX_D / 128]; // the norm weight's float4 pieces lane + 32 j (D % 128 == 0, q and k heads)
    float f[QP_MAX_D / 64];   // the frequencies of the rotation pairs i = lane + 32 j (q and k heads)
    float pos;                // the row's position (q and k heads)
};

// Where head h of row r reads and writes: kind 0 (query), 1 (key), 2 (value), its source, weight and output.
struct qp_head {
    int kind;
    const float *src, *w;
    uint16_t *dst;
};

__device__ __forceinline__ struct qp_head qp_head_of(const float *qkv, int ld, int k_off, int v_off,
                                                     const float *q_norm, const float *k_norm, int n_heads, int n_kv,
                                                     int D, uint16_t *q_out, uint16_t *k_out, uint16_t *v_out, int r,
                                                     int h)
{
    const float *row = qkv + (size_t)r * ld;
    struct qp_head o;
    if (h < n_heads) {
        o.kind = 0, o.src = row + (size_t)h * D, o.w = q_norm, o.dst = q_out + ((size_t)r * n_heads + h) * D;
    } else if (h < n_heads + n_kv) {
        h -= n_heads;
        o.kind = 1, o.src = row + k_off + (size_t)h * D, o.w = k_norm, o.dst = k_out + ((size_t)r * n_kv + h) * D;
    } else {
        h -= n_heads + n_kv;
        o.kind = 2, o.src = row + v_off + (size_t)h * D, o.w = NULL, o.dst = v_out + ((size_t)r * n_kv + h) * D;
    }
    return o;
}

// Loads a head's constants ahead (the early-load form).
__device__ __forceinline__ void qp_preload(const struct qp_head &hd, const float *inv_freq, const struct kern_row *meta,
                                           int r, int D, struct qp_pre *pre)
{
    const int lane = threadIdx.x & 31;
    pre->pos = 0.0f;
    if (hd.kind != 2) {
        pre->pos = (float)meta[r].pos;
#pragma unroll
        for (int j = 0; j < QP_MAX_D / 64; j++)
            if (lane + 32 * j < D / 2) pre->f[j] = inv_freq[lane + 32 * j];
    }
    if (hd.w && D % 128 == 0)
#pragma unroll
        for (int j = 0; j < QP_MAX_D / 128; j++)
            if (lane + 32 * j < D / 4) pre->w[j] = reinterpret_cast<const float4 *>(hd.w)[lane + 32 * j];
}

// The head by the calling warp: RMSNorm (weight hd.w, or none), then for queries and keys RoPE at the row's
// position (pairs (i, i + D/2), angle pos * inv_freq[i]; zero frequencies leave a pair alone), bf16 into
// hd.dst. buf: the warp's D floats of shared memory. pre: the constants loaded ahead, or NULL. The source may
// have been written by other CTAs of the calling kernel (read through L2).
__device__ __forceinline__ void qp_run(const struct qp_head &hd, const float *inv_freq, const struct kern_row *meta,
                                       int r, float eps, int D, float *buf, const struct qp_pre *pre)
{
    const int lane = threadIdx.x & 31;
    const float *src = hd.src, *w = hd.w;
    float ss = 0.0f, scale;
    if (D % 128 == 0) { // float4 pieces, all loads of the head at once (D <= QP_MAX_D: at most 4 per lane)
        float4 v[QP_MAX_D / 128];
#pragma unroll
        for (int j = 0; j < QP_MAX_D / 128; j++)
            if (lane + 32 * j < D / 4) v[j] = __ldcg(reinterpret_cast<const float4 *>(src) + lane + 32 * j);
#pragma unroll
        for (int j = 0; j < QP_MAX_D / 128; j++)
            if (lane + 32 * j < D / 4)
                ss = __fadd_rn(ss, __fmaf_rn(v[j].w, v[j].w, __fmaf_rn(v[j].z, v[j].z,
                                                                       __fmaf_rn(v[j].y, v[j].y, __fmul_rn(v[j].x, v[j].x)))));
        ss = warp_sum(ss);
        scale = 1.0f / sqrtf(ss / (float)D + eps);
#pragma unroll
        for (int j = 0; j < QP_MAX_D / 128; j++) {
            int q = lane + 32 * j;
            if (q >= D / 4) break;
            float4 ww = !w ? make_float4(1.0f, 1.0f, 1.0f, 1.0f) : pre ? pre->w[j] : reinterpret_cast<const float4 *>(w)[q];
            buf[4 * q] = __fmul_rn(__fmul_rn(v[j].x, scale), ww.x);
            buf[4 * q + 1] = __fmul_rn(__fmul_rn(v[j].y, scale), ww.y);
            buf[4 * q + 2] = __fmul_rn(__fmul_rn(v[j].z, scale), ww.z);
            buf[4 * q + 3] = __fmul_rn(__fmul_rn(v[j].w, scale), ww.w);
        }
    } else {
        for (int i = lane; i < D; i += 32) ss = __fmaf_rn(__ldcg(&src[i]), __ldcg(&src[i]), ss);
        ss = warp_sum(ss);
        scale = 1.0f / sqrtf(ss / (float)D + eps);
        for (int i = lane; i < D; i += 32) buf[i] = __fmul_rn(__fmul_rn(__ldcg(&src[i]), scale), w ? w[i] : 1.0f);
    }
    __syncwarp();
    if (hd.kind == 2) {
        for (int i = lane; i < D; i += 32) hd.dst[i] = f32_to_bf16_bits(buf[i]);
        __syncwarp(); // buf is free for the warp's next head
        return;
    }
    float pos = pre ? pre->pos : (float)meta[r].pos;
#pragma unroll
    for (int j = 0; j < QP_MAX_D / 64; j++) {
        int i = lane + 32 * j;
        if (i >= D / 2) break;
        float a = buf[i], b = buf[i + D / 2], c = 1.0f, sn = 0.0f, f = pre ? pre->f[j] : inv_freq[i];
        if (f != 0.0f) sincosf(__fmul_rn(pos, f), &sn, &c);
        float x0 = f != 0.0f ? __fmaf_rn(a, c, -__fmul_rn(b, sn)) : a, x1 = f != 0.0f ? __fmaf_rn(b, c, __fmul_rn(a, sn)) : b;
        hd.dst[i] = f32_to_bf16_bits(x0);
        hd.dst[i + D / 2] = f32_to_bf16_bits(x1);
    }
    __syncwarp(); // buf is free for the warp's next head
}
