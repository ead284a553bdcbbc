// segments.cuh — the end of the reduction rule (kernels.h), shared by the three product kernels
// (gemm_skinny.cu, gemm_bf16.cu, gemm_wgmma.cu): how an element's segment chains become y, or, for the
// gate|up product, h = GeGLU(gate, up) in bf16 without y ever reaching memory.
//
// A product of one segment writes (0.0f + chain) + bias. A product of several writes each segment's chain
// to scratch; the CTA that completes a tile (an arrival counter per tile) adds the segments in segment order
// to 0.0f, then the bias. One copy of these lines is what makes "the same bits whichever kernel ran" a fact
// of the source rather than three hand-kept copies.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.cuh"

// The host's check of a product's h (kernels.h): GeGLU pairs columns in fours.
static inline void seg_check_h(const char *who, const uint16_t *h, int N)
{
    if (h && N % 4) {
        fprintf(stderr, "g4: fatal: %s: GeGLU output for N = %d (a multiple of 4)\n", who, N);
        abort();
    }
}

// GeGLU of a gate|up product (spec §2.5: gelu_tanh(gate) * up), one rounding order wherever it runs. The
// weights' rows come interleaved in pairs (kernels.h): product columns 4j, 4j+1 are gate rows 2j, 2j+1, and
// columns 4j+2, 4j+3 the up rows, so h column 2j+e = geglu(column 4j+e, column 4j+2+e). In every mma layout
// lanes t and t^1 hold columns c, c+1 and c+2, c+3 of one row (c = 4j for t even): one shuffle gives each lane
// one (gate, up) pair, and lane t writes h column c/2 (2j for the even lane, 2j+1 for the odd).
//
// gelu_tanh(x) = 0.5 x (1 + tanh(u)) is computed as x / (1 + 2^(-2 u log2 e)), the same function with the
// hardware's exponential and reciprocal (ex2.approx, rcp.approx: relative errors ~2^-22, far under the bf16
// rounding of h). With tanhf, in branches only half the lanes took, the fused prompt product took 2.4 ms
// more of a 12B 512-row pass (16.0 against 13.6 ms; docs/perf.md, version 7). For very negative u the exponential is +inf and
// the quotient the right signed zero. (ex2_approx: common.cuh.)
__device__ __forceinline__ float geglu1(float x, float up)
{
    const float c = (float)(-2.0 * 0.7978845608028654 * 1.4426950408889634); // -2 sqrt(2/pi) log2(e)
    float x3 = __fmul_rn(__fmul_rn(x, x), x), e = ex2_approx(__fmul_rn(c, __fmaf_rn(0.044715f, x3, x)));
    return __fmul_rn(__fdividef(x, __fadd_rn(1.0f, e)), up);
}

// One lane's h value from its two finished chains of one segment (columns c, c + 1 of a row): (0.0f + chain)
// + bias, then paired with lane t ^ 1 (the pairing above) through GeGLU. Every lane of the warp must call it.
__device__ __forceinline__ float seg_geglu_lane(const float *bias, int N, int c, float a0, float a1)
{
    float v[2] = {a0, a1};
#pragma unroll
    for (int e = 0; e < 2; e++) v[e] = (0.0f + v[e]) + (bias && c + e < N ? bias[c + e] : 0.0f);
    bool odd = (c & 2) != 0; // this lane holds the up columns c, c + 1 of gate columns c - 2, c - 1
    float got = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[1], 1);
    float gate = odd ? got : v[0], up = odd ? v[1] : got;
    return geglu1(gate, up);
}

// This thread's two adjacent outputs (row r, columns c and c + 1; c even) of segment seg: the finished
// values when nseg == 1, else the segment's chains into partial (nseg slices of M x N). Rows past M and
// columns past N are not written. With H (gate|up products, N % 4 == 0) the finished values go through
// GeGLU into H (M, N/2) bf16 instead of Y, one element per lane; every lane of the warp must call it then (a
// shuffle pairs them).
__device__ __forceinline__ void seg_store2(float *Y, uint16_t *H, float *partial, const float *bias, int M, int N,
                                           int nseg, int seg, int r, int c, float a0, float a1)
{
    if (H && nseg == 1) {
        float hv = seg_geglu_lane(bias, N, c, a0, a1);
        if (r < M && c < N) H[(size_t)r * (N / 2) + c / 2] = f32_to_bf16_bits(hv);
        return;
    }
    float v[2] = {a0, a1};
    if (nseg == 1)
#pragma unroll
        for (int e = 0; e < 2; e++) v[e] = (0.0f + v[e]) + (bias && c + e < N ? bias[c + e] : 0.0f);
    if (r >= M) return;
    float *dst = (nseg == 1 ? Y : partial + (size_t)seg * M * N) + (size_t)r * N + c;
    if (c + 1 < N && (N % 2) == 0) *(float2 *)dst = make_float2(v[0], v[1]);
    else
#pragma unroll
        for (int e = 0; e < 2; e++)
            if (c + e < N) dst[e] = v[e];
}

// NB finished elements (r[b], c[b]) of a product cut into segments, where ok[b]: each one's chains added in
// segment order to 0.0f, then the bias. Every load of the NB elements goes out before the first add: one
// element at a time, a thread finishing a 64-row tile (13 elements at 160 threads) waited one L2 round trip
// per element and segment, and the segment totals took 12 % of a 64-row q|k|v product's samples under ncu
// (version 13.2).
#define SEG_BATCH 4 // elements a thread finishes at once
template <int NB>
__device__ __forceinline__ void seg_totals(const float *partial, const float *bias, int M, int N, int nseg,
                                           const int *r, const int *c, const bool *ok, float *total)
{
    float p[NB][KERN_GEMM_MAX_SEGMENTS];
#pragma unroll
    for (int b = 0; b < NB; b++)
#pragma unroll
        for (int q = 0; q < KERN_GEMM_MAX_SEGMENTS; q++)
            p[b][q] = ok[b] && q < nseg ? __ldcg(&partial[((size_t)q * M + r[b]) * N + c[b]]) : 0.0f;
#pragma unroll
    for (int b = 0; b < NB; b++) {
        float t = 0.0f;
#pragma unroll
        for (int q = 0; q < KERN_GEMM_MAX_SEGMENTS; q++)
            if (q < nseg) t += p[b][q];
        total[b] = t + (bias && ok[b] ? bias[c[b]] : 0.0f);
    }
}

// Called by every thread of a CTA after its seg_store2 calls (nseg > 1): the CTA that completes the tile
// of rows [m0, m0 + rows) and columns [n0, n0 + cols) adds its segments in order and writes y (or, with H,
// h = GeGLU of the gate and up columns; n0 and cols multiples of 4); the others return. counter: the tile's
// arrival counter, reset to zero by the last arrival; last: a shared flag.
__device__ __forceinline__ void seg_finish(float *Y, uint16_t *H, const float *partial, const float *bias, int M,
                                           int N, int nseg, int m0, int n0, int rows, int cols, int *counter,
                                           int *last)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        *last = atomicAdd(counter, 1) == nseg - 1;
        if (*last) *counter = 0;
    }
    __syncthreads();
    if (!*last) return;
    __threadfence();
    const int step = blockDim.x;
    if (H) { // h column hc of row r: GeGLU of columns c (gate) and c + 2 (up), as batch entries 2b and 2b + 1
        constexpr int NH = SEG_BATCH / 2;
        const int n = rows * (cols / 2);
        for (int i0 = threadIdx.x; i0 < n; i0 += NH * step) {
            int r[SEG_BATCH], c[SEG_BATCH], hc[NH];
            bool ok[SEG_BATCH];
            float t[SEG_BATCH];
#pragma unroll
            for (int b = 0; b < NH; b++) {
                const int i = i0 + b * step;
                hc[b] = n0 / 2 + i % (cols / 2);
                r[2 * b] = r[2 * b + 1] = m0 + i / (cols / 2);
                c[2 * b] = (hc[b] / 2) * 4 + hc[b] % 2, c[2 * b + 1] = c[2 * b] + 2;
                ok[2 * b] = ok[2 * b + 1] = i < n && r[2 * b] < M && c[2 * b] < N;
            }
            seg_totals<SEG_BATCH>(partial, bias, M, N, nseg, r, c, ok, t);
#pragma unroll
            for (int b = 0; b < NH; b++)
                if (ok[2 * b]) H[(size_t)r[2 * b] * (N / 2) + hc[b]] = f32_to_bf16_bits(geglu1(t[2 * b], t[2 * b + 1]));
        }
        return;
    }
    const int n = rows * cols;
    for (int i0 = threadIdx.x; i0 < n; i0 += SEG_BATCH * step) {
        int r[SEG_BATCH], c[SEG_BATCH];
        bool ok[SEG_BATCH];
        float t[SEG_BATCH];
#pragma unroll
        for (int b = 0; b < SEG_BATCH; b++) {
            const int i = i0 + b * step;
            r[b] = m0 + i / cols, c[b] = n0 + i % cols;
            ok[b] = i < n && r[b] < M && c[b] < N;
        }
        seg_totals<SEG_BATCH>(partial, bias, M, N, nseg, r, c, ok, t);
#pragma unroll
        for (int b = 0; b < SEG_BATCH; b++)
            if (ok[b]) Y[(size_t)r[b] * N + c[b]] = t[b];
    }
}

// h of a prompt product's whole CTA tile of one segment, through shared memory. seg_store2 writes h one 2-byte
// element per lane, so each warp store touches 8 rows at 8 bytes each; the fused prompt product was 3.5 %
// slower than writing fp32 y and running a GeGLU kernel (docs/perf.md, version 7). Here each lane's value
// (seg_geglu_lane, the same bits) goes to a shared copy of the tile (stage), then the CTA writes whole
// 16-byte pieces of rows (flush). The caller puts a barrier of every consumer thread before stage (the
// stages' last reads) and between the two. Layout of the m64nBN accumulators: this thread's rows rloc and
// rloc + 8 of the tile, columns 8 j + 2 t and + 1 in v[4 j + 2 h], [4 j + 2 h + 1] (h: the row + 8).
#define SEG_HS_STRIDE(bn) ((bn) / 2 + 8) // h per shared row: 16 bytes of padding put rows g = 0..7 on other banks
#define SEG_HS_BYTES(bm, bn) ((bm) * SEG_HS_STRIDE(bn) * 2)

template <int BN>
__device__ __forceinline__ void seg_geglu_stage(uint16_t *hs, const float *bias, int N, int n0, int rloc, int t,
                                                const float *v)
{
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float x = seg_geglu_lane(bias, N, n0 + 8 * j + 2 * t, v[4 * j + 2 * h], v[4 * j + 2 * h + 1]);
            hs[(rloc + 8 * h) * SEG_HS_STRIDE(BN) + 4 * j + t] = f32_to_bf16_bits(x);
        }
}

template <int BM, int BN>
__device__ __forceinline__ void seg_geglu_flush(uint16_t *H, const uint16_t *hs, int M, int N, int m0, int n0,
                                                int tid, int nthreads)
{
    constexpr int PIECES = BN / 16; // 16-byte pieces per tile row of h
    const int hn = N / 2, h0 = n0 / 2;
    const bool whole = hn % 8 == 0 && ((uintptr_t)H & 15) == 0;
    for (int p = tid; p < BM * PIECES; p += nthreads) {
        int rl = p / PIECES, hc = h0 + (p % PIECES) * 8, r = m0 + rl;
        if (r >= M || hc >= hn) continue;
        const uint16_t *src = hs + rl * SEG_HS_STRIDE(BN) + (p % PIECES) * 8;
        uint16_t *dst = H + (size_t)r * hn + hc;
        if (whole && hc + 8 <= hn) *(uint4 *)dst = *(const uint4 *)src;
        else
            for (int e = 0; e < 8 && hc + e < hn; e++) dst[e] = src[e];
    }
}
