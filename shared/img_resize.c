/* img_resize — the Gemma 4 processor's target size and its antialiased bicubic resize on uint8.
 *
 * Hugging Face's Gemma4UnifiedImageProcessor (torchvision backend) resizes the uint8 CHW tensor with
 * torchvision's resize(..., BICUBIC, antialias=True). On CPU, torchvision keeps uint8 for bicubic and calls
 * torch.nn.functional.interpolate, i.e. ATen's _upsample_bicubic2d_aa on uint8: the "separable AA
 * interpolation" of aten/src/ATen/native/cpu/UpSampleKernel.cpp (or its AVX2 twin, which computes the same
 * integers). What that kernel does, and what this file does the same way:
 *
 *   - one axis at a time, horizontal (width) first, then vertical; an axis whose size does not change is
 *     skipped; the intermediate image is uint8;
 *   - per axis, scale = in / out; support = 2 * max(scale, 1); taps = ceil(support) * 2 + 1 at most;
 *     for output i: center = scale * (i + 0.5), xmin = max(trunc(center - support + 0.5), 0),
 *     xsize = min(trunc(center + support + 0.5), in) - xmin; weight j = Keys cubic (a = -0.5) at
 *     (j + xmin - center + 0.5) / max(scale, 1), all in double, then divided by their sum;
 *   - the weights become int16 at a precision p chosen from the axis's largest weight (the largest p < 22
 *     with round(wmax * 2^(p+1)) < 2^15), each rounded half away from zero;
 *   - each output sample = clamp((2^(p-1) + sum(pixel * weight)) >> p, 0, 255).
 *
 * The double arithmetic must not be contracted into fused multiply-adds (gcc's ISO C mode and wasm do not).
 * This file must not allocate anything a client sized beyond what the limits in img.h allow. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "img.h"

static void set_err(char *err, const char *msg)
{
    if (err) snprintf(err, IMG_ERR_MAX, "%s", msg);
}

int img_budget_ok(int max_soft_tokens)
{
    return max_soft_tokens == 70 || max_soft_tokens == 140 || max_soft_tokens == 280 ||
           max_soft_tokens == 560 || max_soft_tokens == 1120;
}

/* The processor's get_aspect_ratio_preserving_size with patch_size 16 and pooling_kernel_size 3. Python's
 * int / int is a correctly rounded double division, as is C's on these exactly representable values, and
 * sqrt/floor are exact operations in both: the sizes agree for every input. */
int img_target_size(int h, int w, int max_soft_tokens, int *out_h, int *out_w, char *err)
{
    if (!img_budget_ok(max_soft_tokens)) {
        if (err) snprintf(err, IMG_ERR_MAX, "max_soft_tokens must be one of 70, 140, 280, 560, 1120 (got %d)",
                          max_soft_tokens);
        return IMG_E_ARG;
    }
    if (h <= 0 || w <= 0) {
        set_err(err, "image has no pixels");
        return IMG_E_ARG;
    }
    const long long side = IMG_PATCH;
    const long long target_px = (long long)max_soft_tokens * 9 * 256;
    const double factor = sqrt((double)target_px / ((double)h * (double)w));
    long long th = (long long)floor(factor * h / side) * side;
    long long tw = (long long)floor(factor * w / side) * side;
    if (th == 0 && tw == 0) {
        set_err(err, "image would resize to 0 x 0");
        return IMG_E_ARG;
    }
    const long long max_side = (long long)max_soft_tokens * side;
    if (th == 0) {
        th = side;
        tw = (long long)floor((double)w / (double)h) * side;
        if (tw > max_side) tw = max_side;
    } else if (tw == 0) {
        tw = side;
        th = (long long)floor((double)h / (double)w) * side;
        if (th > max_side) th = max_side;
    }
    if (th * tw > target_px) {
        set_err(err, "resized image would exceed the patch budget");
        return IMG_E_ARG;
    }
    *out_h = (int)th;
    *out_w = (int)tw;
    return IMG_OK;
}

/* Keys' cubic convolution kernel with a = -0.5 (PyTorch's aa_filter for bicubic + antialias), evaluated
 * exactly as UpSample.h's cubic_convolution1/2. */
static double keys_cubic(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

/* One axis's taps: for output i, start[i] and count[i] input indices and count[i] int16 weights at
 * weights[i * taps ...], all scaled by 2^precision. */
struct axis {
    int taps;      /* weights stored per output (max_interp_size) */
    int precision; /* bits */
    int *start;    /* (out) */
    int *count;    /* (out) */
    int16_t *w;    /* (out, taps) */
};

static void axis_free(struct axis *a)
{
    free(a->start);
    free(a->count);
    free(a->w);
    memset(a, 0, sizeof *a);
}

/* HelperInterpBase::_compute_index_ranges_weights (antialias) + _compute_index_ranges_int16_weights. */
static int axis_init(struct axis *a, int in, int out)
{
    memset(a, 0, sizeof *a);
    const double scale = (double)in / (double)out;
    const double support = scale >= 1.0 ? (4 * 0.5) * scale : 4 * 0.5;
    const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    const int taps = (int)ceil(support) * 2 + 1;
    double *wf = malloc((size_t)out * taps * sizeof *wf);
    a->start = malloc((size_t)out * sizeof *a->start);
    a->count = malloc((size_t)out * sizeof *a->count);
    a->w = malloc((size_t)out * taps * sizeof *a->w);
    if (!wf || !a->start || !a->count || !a->w) {
        free(wf);
        axis_free(a);
        return IMG_E_NOMEM;
    }
    a->taps = taps;
    double wt_max = 0.0;
    for (int i = 0; i < out; i++) {
        const double center = scale * (i + 0.5);
        long long xmin = (long long)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        long long xend = (long long)(center + support + 0.5);
        if (xend > in) xend = in;
        long long xsize = xend - xmin;
        if (xsize < 0) xsize = 0;
        if (xsize > taps) xsize = taps;
        double *wi = wf + (size_t)i * taps;
        double total = 0.0;
        long long j = 0;
        for (; j < xsize; j++) {
            double w = keys_cubic(((double)(j + xmin) - center + 0.5) * invscale);
            wi[j] = w;
            total += w;
        }
        if (total != 0.0) {
            for (j = 0; j < xsize; j++) {
                wi[j] /= total;
                if (wi[j] > wt_max) wt_max = wi[j];
            }
        }
        for (; j < taps; j++) wi[j] = 0.0;
        a->start[i] = (int)xmin;
        a->count[i] = (int)xsize;
    }
    int p;
    for (p = 0; p < 22; p++) {
        int next = (int)(0.5 + wt_max * (1 << (p + 1)));
        if (next >= (1 << 15)) break;
    }
    a->precision = p;
    for (size_t k = 0; k < (size_t)out * taps; k++) {
        double v = wf[k] * (1 << p);
        a->w[k] = (int16_t)(v < 0 ? (int)(-0.5 + v) : (int)(0.5 + v));
    }
    free(wf);
    return IMG_OK;
}

static inline uint8_t round_shift(long long acc, int p)
{
    if (acc < 0) return 0;
    acc >>= p;
    return acc > 255 ? 255 : (uint8_t)acc;
}

/* (h, sw, 3) -> (h, dw, 3) along rows. */
static void pass_horizontal(const uint8_t *src, int h, int sw, uint8_t *dst, int dw, const struct axis *a)
{
    const long long half = 1ll << (a->precision - 1);
    for (int y = 0; y < h; y++) {
        const uint8_t *srow = src + (size_t)y * sw * 3;
        uint8_t *drow = dst + (size_t)y * dw * 3;
        for (int x = 0; x < dw; x++) {
            const int16_t *w = a->w + (size_t)x * a->taps;
            const uint8_t *s = srow + (size_t)a->start[x] * 3;
            long long r = half, g = half, b = half;
            for (int j = 0; j < a->count[x]; j++) {
                r += (long long)s[3 * j] * w[j];
                g += (long long)s[3 * j + 1] * w[j];
                b += (long long)s[3 * j + 2] * w[j];
            }
            drow[3 * x] = round_shift(r, a->precision);
            drow[3 * x + 1] = round_shift(g, a->precision);
            drow[3 * x + 2] = round_shift(b, a->precision);
        }
    }
}

/* (sh, w, 3) -> (dh, w, 3) along columns, one output row at a time. */
static void pass_vertical(const uint8_t *src, int w, uint8_t *dst, int dh, const struct axis *a)
{
    const long long half = 1ll << (a->precision - 1);
    const size_t stride = (size_t)w * 3;
    for (int y = 0; y < dh; y++) {
        const int16_t *wt = a->w + (size_t)y * a->taps;
        const uint8_t *s0 = src + (size_t)a->start[y] * stride;
        uint8_t *drow = dst + (size_t)y * stride;
        for (size_t k = 0; k < stride; k++) {
            long long acc = half;
            const uint8_t *s = s0 + k;
            for (int j = 0; j < a->count[y]; j++) acc += (long long)s[(size_t)j * stride] * wt[j];
            drow[k] = round_shift(acc, a->precision);
        }
    }
}

int img_resize(const uint8_t *src, int sh, int sw, uint8_t *dst, int dh, int dw, char *err)
{
    if (!src || !dst || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0 || sh > IMG_MAX_SIDE || sw > IMG_MAX_SIDE ||
        dh > IMG_MAX_SIDE * 8 || dw > IMG_MAX_SIDE * 8) {
        set_err(err, "resize: bad size");
        return IMG_E_ARG;
    }
    if (sh == dh && sw == dw) {
        memcpy(dst, src, (size_t)sh * sw * 3);
        return IMG_OK;
    }
    struct axis ax = {0}, ay = {0};
    uint8_t *tmp = NULL;
    int rc = IMG_OK;
    if (sw != dw && (rc = axis_init(&ax, sw, dw)) != IMG_OK) goto free_buffers;
    if (sh != dh && (rc = axis_init(&ay, sh, dh)) != IMG_OK) goto free_buffers;
    if (sw != dw && sh != dh) {
        tmp = malloc((size_t)sh * dw * 3);
        if (!tmp) {
            rc = IMG_E_NOMEM;
            goto free_buffers;
        }
        pass_horizontal(src, sh, sw, tmp, dw, &ax);
        pass_vertical(tmp, dw, dst, dh, &ay);
    } else if (sw != dw) {
        pass_horizontal(src, sh, sw, dst, dw, &ax);
    } else {
        pass_vertical(src, sw, dst, dh, &ay);
    }
free_buffers:
    if (rc == IMG_E_NOMEM) set_err(err, "resize: out of memory");
    free(tmp);
    axis_free(&ax);
    axis_free(&ay);
    return rc;
}
