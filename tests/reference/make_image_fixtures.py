#!/usr/bin/env python3
"""make_image_fixtures.py — reference outputs of Hugging Face's Gemma4UnifiedImageProcessor for g4's image tests.

Run on the reference machine (transformers 5.17, torch, torchvision, pillow, numpy; no network needed):

    python3 tests/reference/make_image_fixtures.py --out DIR

It makes its own test images deterministically (PIL + numpy + a tiny PNG writer for what PIL cannot write:
16-bit, interlaced, 1/2-bit), saves each file into DIR/images/, runs the processor on each one exactly as a
user of transformers would (PIL.Image.open, and for EXIF-rotated JPEGs ImageOps.exif_transpose first), and
writes what g4's C tests need to compare byte for byte:

    DIR/images/NAME.EXT          the input files (the C decoder reads these)
    DIR/resized/NAME_N.webp      the resized uint8 image the processor patched (H' x W' x 3), rebuilt from
                                 pixel_values (uint8 = round(pixel_values * 255), verified exact); lossless
                                 WebP (PNG where this PIL lacks WebP), checked to round-trip exactly
    DIR/decoded/NAME.webp        the RGB image handed to the processor (after convert_rgb / exif_transpose),
                                 for lossy formats whose decode depends on the decoder library (small ones)
    DIR/manifest.json            versions, processor settings, the conversion rules observed in PIL, and one
                                 entry per case: file, max_soft_tokens, resized [H', W'], n, positions [[x,y]..],
                                 patches_sha256 (sha256 of the (n, 6912) uint8 rows), decoded_sha256, checks

Each case runs inside try/except: a failing case is reported and the rest still run. A summary table is
printed at the end. `--dry-run` skips transformers (for checking image generation and output sizes on a
machine without torch): it then records no processor outputs.

Nothing here downloads anything; total output is kept to about 3 MB.
"""
import argparse
import hashlib
import io
import json
import os
import platform
import struct
import sys
import time
import traceback
import zlib

import numpy as np
from PIL import Image, ImageOps

# --------------------------------------------------------------------------------------------------------
# Image content: smooth gradients and waves, flat shapes with hard edges, low-frequency "cloud" noise and a
# small high-frequency noise patch. Deterministic for a given seed.
# --------------------------------------------------------------------------------------------------------


def natural(w, h, seed, noise_patch=True, flat=False):
    """(h, w, 3) uint8 natural-ish picture."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    u = xx / max(w - 1, 1)
    v = yy / max(h - 1, 1)
    img = np.zeros((h, w, 3), np.float64)
    if flat:
        img[:] = rng.randint(40, 220, size=3)
    else:
        for c in range(3):
            a, b = rng.uniform(-90, 90, size=2)
            f1, f2, ph = rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0), rng.uniform(0, 6.28)
            img[..., c] = 128 + a * (u - 0.5) + b * (v - 0.5) + 35 * np.sin(6.2832 * (f1 * u + f2 * v) + ph)
        # low-frequency noise: a coarse random grid, bilinearly enlarged
        gh, gw = 6, 6
        grid = rng.uniform(-25, 25, size=(gh, gw, 3))
        gy = v * (gh - 1)
        gx = u * (gw - 1)
        y0 = np.clip(np.floor(gy).astype(int), 0, gh - 2)
        x0 = np.clip(np.floor(gx).astype(int), 0, gw - 2)
        fy = (gy - y0)[..., None]
        fx = (gx - x0)[..., None]
        img += (grid[y0, x0] * (1 - fy) * (1 - fx) + grid[y0 + 1, x0] * fy * (1 - fx) +
                grid[y0, x0 + 1] * (1 - fy) * fx + grid[y0 + 1, x0 + 1] * fy * fx)
    nshapes = 4 + rng.randint(0, 4)
    for _ in range(nshapes):
        col = rng.randint(0, 256, size=3)
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rx, ry = rng.uniform(0.05, 0.3) * w + 0.6, rng.uniform(0.05, 0.3) * h + 0.6
        if rng.rand() < 0.5:
            m = (np.abs(xx - cx) < rx) & (np.abs(yy - cy) < ry)
        else:
            m = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 < 1.0
        img[m] = col
    if noise_patch and not flat:
        ph, pw = max(1, h // 10), max(1, w // 10)
        y1, x1 = rng.randint(0, h - ph + 1), rng.randint(0, w - pw + 1)
        img[y1:y1 + ph, x1:x1 + pw] += rng.uniform(-40, 40, size=(ph, pw, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def alpha_plane(w, h, seed):
    """(h, w) uint8 alpha with every kind of value: 0, 255, ramps, a transparent hole."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    a = 255 * (xx / max(w - 1, 1))
    a[(yy < h / 3)] = 255
    a[(yy > 2 * h / 3)] = 0
    cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
    a[((xx - cx) ** 2 + (yy - cy) ** 2) < (min(w, h) / 6) ** 2] = 0
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------------------------------------
# A tiny PNG writer for what PIL does not write: 16-bit RGB/RGBA/gray, 1/2-bit gray and palette, gray+tRNS,
# Adam7 interlace.
# --------------------------------------------------------------------------------------------------------


def _chunk(kind, data):
    c = struct.pack(">I", len(data)) + kind + data
    return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _filter_row(kind, row, prev, bpp):
    """PNG filter `kind` (0 none, 1 sub, 2 up, 3 average, 4 paeth) applied to one packed row."""
    out = bytearray(len(row))
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 0:
            pred = 0
        elif kind == 1:
            pred = a
        elif kind == 2:
            pred = b
        elif kind == 3:
            pred = (a + b) // 2
        else:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        out[i] = (x - pred) & 0xFF
    return bytes([kind]) + bytes(out)


def _filtered(rows, bpp):
    """Rows with filters cycling 0..4 (so the decoder's every unfilter path runs)."""
    out = b""
    prev = bytes(len(rows[0])) if rows else b""
    for i, r in enumerate(rows):
        out += _filter_row(i % 5, r, prev, bpp)
        prev = r
    return out


def _pack_rows(samples, depth):
    """samples: (h, w*channels) ints -> list of packed row bytes."""
    rows = []
    for r in samples:
        if depth == 16:
            rows.append(np.asarray(r, ">u2").tobytes())
        elif depth == 8:
            rows.append(np.asarray(r, np.uint8).tobytes())
        else:
            per = 8 // depth
            n = len(r)
            out = bytearray((n + per - 1) // per)
            for i, s in enumerate(r):
                out[i // per] |= (int(s) & ((1 << depth) - 1)) << (8 - depth * (1 + i % per))
            rows.append(bytes(out))
    return rows


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(path, pix, color_type, depth, palette=None, trns=None, interlace=False):
    """pix: (h, w, channels) array of sample values (already in range for depth)."""
    h, w = pix.shape[:2]
    ch = pix.shape[2]
    bpp = max(1, ch * depth // 8)
    raw = b""
    if interlace:
        for x0, y0, dx, dy in ADAM7:
            sub = pix[y0::dy, x0::dx]
            if sub.shape[0] == 0 or sub.shape[1] == 0:
                continue
            raw += _filtered(_pack_rows(sub.reshape(sub.shape[0], -1), depth), bpp)
    else:
        raw += _filtered(_pack_rows(pix.reshape(h, w * ch), depth), bpp)
    data = b"\x89PNG\r\n\x1a\n"
    data += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0))
    if palette is not None:
        data += _chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        data += _chunk(b"tRNS", trns)
    data += _chunk(b"IDAT", zlib.compress(raw, 9))
    data += _chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------------------------------------
# The cases. Each maker writes DIR/images/NAME.EXT and returns the file name.
# --------------------------------------------------------------------------------------------------------


def save_pil(img, path, fmt, **kw):
    img.save(path, fmt, **kw)


def mk_png_rgb(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    save_pil(Image.fromarray(natural(w, h, seed)), p, "PNG", compress_level=9)
    return p


def mk_png_flat(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    save_pil(Image.fromarray(natural(w, h, seed, flat=True)), p, "PNG", compress_level=9)
    return p


def mk_png_rgba(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    rgba = np.dstack([natural(w, h, seed), alpha_plane(w, h, seed + 1)])
    save_pil(Image.fromarray(rgba, "RGBA"), p, "PNG", compress_level=9)
    return p


def mk_png_la(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    g = natural(w, h, seed)[..., 1]
    la = np.dstack([g, alpha_plane(w, h, seed + 1)])
    save_pil(Image.fromarray(la, "LA"), p, "PNG", compress_level=9)
    return p


def mk_png_gray8(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    save_pil(Image.fromarray(natural(w, h, seed)[..., 0], "L"), p, "PNG", compress_level=9)
    return p


def mk_png_pal_trns(d, name, w, h, seed):
    """8-bit palette with a tRNS chunk giving several entries partial or zero alpha."""
    p = os.path.join(d, name + ".png")
    rgb = Image.fromarray(natural(w, h, seed))
    pal = rgb.quantize(colors=200, method=Image.MEDIANCUT if hasattr(Image, "MEDIANCUT") else 0)
    trns = bytes([(i * 37) % 256 if i % 3 == 0 else 255 for i in range(200)])
    save_pil(pal, p, "PNG", transparency=trns, compress_level=9)
    return p


def mk_png_pal2bit(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    rng = np.random.RandomState(seed)
    palette = rng.randint(0, 256, size=(4, 3))
    yy, xx = np.mgrid[0:h, 0:w]
    idx = ((xx // 7 + yy // 5) % 4).astype(np.uint8)[..., None]
    write_png(p, idx, 3, 2, palette=palette, trns=bytes([255, 0, 128]))
    return p


def mk_png_gray1(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    g = natural(w, h, seed)[..., 2]
    write_png(p, (g > 127).astype(np.uint8)[..., None], 0, 1)
    return p


def mk_png_gray_trns(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    g = natural(w, h, seed)[..., 0]
    write_png(p, g[..., None], 0, 8, trns=struct.pack(">H", int(g[0, 0])))
    return p


def _sixteen(w, h, seed):
    """16-bit samples whose low bytes are not a copy of the high bytes."""
    base = natural(w, h, seed).astype(np.uint32) * 257
    rng = np.random.RandomState(seed + 7)
    return np.clip(base + rng.randint(-200, 200, size=base.shape), 0, 65535)


def mk_png_rgb16(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    write_png(p, _sixteen(w, h, seed), 2, 16)
    return p


def mk_png_rgba16(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    a = alpha_plane(w, h, seed + 1).astype(np.uint32) * 257
    write_png(p, np.dstack([_sixteen(w, h, seed), a]), 6, 16)
    return p


def mk_png_gray16(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    write_png(p, _sixteen(w, h, seed)[..., :1], 0, 16)
    return p


def mk_png_interlaced(d, name, w, h, seed):
    p = os.path.join(d, name + ".png")
    write_png(p, natural(w, h, seed), 2, 8, interlace=True)
    return p


def mk_jpeg(d, name, w, h, seed, quality=90, progressive=False, subsampling=2, mode="RGB"):
    p = os.path.join(d, name + ".jpg")
    img = Image.fromarray(natural(w, h, seed))
    if mode == "L":
        img = img.convert("L")
    elif mode == "CMYK":
        # real ink values with black (PIL's own RGB -> CMYK conversion always gives K = 0)
        a = natural(w, h, seed)
        k = natural(w, h, seed + 500)[..., 1] // 2
        img = Image.fromarray(np.dstack([255 - a, k]).astype(np.uint8), "CMYK")
    kw = dict(quality=quality, progressive=progressive, optimize=progressive)
    if mode == "RGB":
        kw["subsampling"] = subsampling
    save_pil(img, p, "JPEG", **kw)
    return p


# exif_transpose applies these to the stored image; the stored image is the upright one put through the
# inverse, so that exif_transpose(stored) == upright (up to JPEG loss, which both sides decode alike).
def _tp(name):
    T = getattr(Image, "Transpose", None)
    return getattr(T, name) if T is not None else getattr(Image, name)


EXIF_INVERSE = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE",
                6: "ROTATE_90", 7: "TRANSVERSE", 8: "ROTATE_270"}


def mk_jpeg_exif(d, name, w, h, seed, orientation):
    p = os.path.join(d, name + ".jpg")
    upright = Image.fromarray(natural(w, h, seed))
    stored = upright.transpose(_tp(EXIF_INVERSE[orientation]))
    exif = Image.Exif()
    exif[0x0112] = orientation
    save_pil(stored, p, "JPEG", quality=92, exif=exif.tobytes())
    return p


def mk_webp(d, name, w, h, seed, lossless=False, alpha=False, quality=80):
    p = os.path.join(d, name + ".webp")
    rgb = natural(w, h, seed)
    img = Image.fromarray(np.dstack([rgb, alpha_plane(w, h, seed + 1)]), "RGBA") if alpha else Image.fromarray(rgb)
    save_pil(img, p, "WEBP", lossless=lossless, quality=100 if lossless else quality, method=4)
    return p


def mk_webp_anim(d, name, w, h, seed):
    p = os.path.join(d, name + ".webp")
    f1 = Image.fromarray(natural(w, h, seed))
    f2 = Image.fromarray(natural(w, h, seed + 100))
    save_pil(f1, p, "WEBP", save_all=True, append_images=[f2], duration=100, loop=0, quality=80, lossless=False)
    return p


# (name, maker, args, budgets). Sizes are (w, h). Budgets 70 keep outputs small; a few run at 280 and one
# (flat shapes, which compress well) at 1120.
CASES = [
    ("rgb_640x480", mk_png_rgb, (640, 480, 1), (70, 280)),
    ("rgb_5x7", mk_png_rgb, (5, 7, 2), (70,)),
    ("rgb_1x1", mk_png_rgb, (1, 1, 3), (70,)),
    ("rgb_2x3", mk_png_rgb, (2, 3, 33), (70,)),
    ("rgb_384x384_noresize", mk_png_rgb, (384, 384, 4), (70,)),
    ("rgb_333x222", mk_png_rgb, (333, 222, 34), (70,)),
    ("rgb_720x480_down", mk_png_rgb, (720, 480, 35), (70,)),
    ("tall_100x4000", mk_png_rgb, (100, 4000, 5), (70, 280)),
    ("thin_20x3000_edge", mk_png_rgb, (20, 3000, 6), (70,)),
    ("wide_3000x16_edge", mk_png_rgb, (3000, 16, 7), (70,)),
    ("wide_1200x240", mk_png_rgb, (1200, 240, 8), (70,)),
    ("shapes_1600x1200", mk_png_flat, (1600, 1200, 9), (1120,)),
    ("rgba_400x300", mk_png_rgba, (400, 300, 10), (70,)),
    ("la_200x150", mk_png_la, (200, 150, 11), (70,)),
    ("gray8_300x300", mk_png_gray8, (300, 300, 12), (70,)),
    ("gray1_64x64", mk_png_gray1, (64, 64, 13), (70,)),
    ("gray_trns_120x90", mk_png_gray_trns, (120, 90, 14), (70,)),
    ("pal_trns_256x192", mk_png_pal_trns, (256, 192, 15), (70,)),
    ("pal2bit_trns_90x60", mk_png_pal2bit, (90, 60, 16), (70,)),
    ("rgb16_96x72", mk_png_rgb16, (96, 72, 17), (70,)),
    ("rgba16_120x60", mk_png_rgba16, (120, 60, 18), (70,)),
    ("gray16_160x120", mk_png_gray16, (160, 120, 19), (70,)),
    ("interlaced_300x200", mk_png_interlaced, (300, 200, 20), (70,)),
    ("jpeg_base_1920x1080", mk_jpeg, (1920, 1080, 21), (70, 280)),
    ("jpeg_prog_800x600", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 85, True), (800, 600, 22), (70,)),
    ("jpeg_444_500x375", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 90, False, 0), (500, 375, 23), (70,)),
    ("jpeg_422_360x270", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 90, False, 1), (360, 270, 36), (70,)),
    ("jpeg_gray_300x200", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 90, mode="L"), (300, 200, 24), (70,)),
    ("jpeg_cmyk_240x160", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 90, mode="CMYK"), (240, 160, 25), (70,)),
    ("jpeg_odd_1001x751", lambda d, n, w, h, s: mk_jpeg(d, n, w, h, s, 80), (1001, 751, 26), (70,)),
    ("webp_lossy_400x300", mk_webp, (400, 300, 27), (70,)),
    ("webp_lossless_300x200", lambda d, n, w, h, s: mk_webp(d, n, w, h, s, lossless=True), (300, 200, 28), (70,)),
    ("webp_lossy_alpha_320x240", lambda d, n, w, h, s: mk_webp(d, n, w, h, s, alpha=True), (320, 240, 29), (70,)),
    ("webp_lossless_alpha_240x180", lambda d, n, w, h, s: mk_webp(d, n, w, h, s, lossless=True, alpha=True),
     (240, 180, 30), (70,)),
    ("webp_anim_200x150", mk_webp_anim, (200, 150, 31), (70,)),
] + [
    ("exif_o%d_160x96" % o, (lambda o: lambda d, n, w, h, s: mk_jpeg_exif(d, n, w, h, s, o))(o), (160, 96, 40 + o),
     (70,)) for o in range(2, 9)
]

LOSSY = (".jpg", ".webp")
DECODED_MAX_PIXELS = 80 * 1000  # store the decoded image only when it is this small (else its sha256 only)


# --------------------------------------------------------------------------------------------------------
# Conversion rules: what PIL's convert("RGB") (the processor's convert_rgb) does, measured on the images.
# --------------------------------------------------------------------------------------------------------


def observe_rule(img, rgb):
    """Compare PIL's RGB conversion with candidate rules; returns a dict of which rule matched."""
    a = np.asarray(rgb)
    out = {"mode": img.mode}
    try:
        if img.mode in ("RGBA", "LA", "RGBX", "RGBa", "La"):
            src = np.asarray(img)
            if img.mode.startswith("L"):
                drop = np.repeat(src[..., :1], 3, axis=2)
            else:
                drop = src[..., :3]
            out["alpha_dropped"] = bool(np.array_equal(drop, a))
            alpha = src[..., -1:].astype(np.int64)
            white = (drop.astype(np.int64) * alpha + 255 * (255 - alpha) + 127) // 255
            out["composited_on_white"] = bool(np.array_equal(white, a))
        elif img.mode == "P":
            pal = np.asarray(img.getpalette(), np.uint8).reshape(-1, 3)
            idx = np.asarray(img)
            out["palette_lookup"] = bool(np.array_equal(pal[idx], a))
            out["has_transparency"] = "transparency" in img.info
        elif img.mode in ("I;16", "I;16B", "I", "I;16L"):
            v = np.asarray(img).astype(np.int64)
            out["i16_clip"] = bool(np.array_equal(np.repeat(np.clip(v, 0, 255)[..., None], 3, 2), a))
            out["i16_high_byte"] = bool(np.array_equal(np.repeat((v >> 8)[..., None], 3, 2), a))
            out["i16_max"] = int(v.max())
        elif img.mode == "CMYK":
            c = np.asarray(img).astype(np.int64)
            nk = 255 - c[..., 3:4]
            t = c[..., :3] * nk + 128
            muldiv = np.clip(nk - (((t >> 8) + t) >> 8), 0, 255)
            out["cmyk_muldiv"] = bool(np.array_equal(muldiv, a))
            sub = np.clip(255 - (c[..., :3] + c[..., 3:4]), 0, 255)
            out["cmyk_subtract"] = bool(np.array_equal(sub, a))
        elif img.mode in ("L", "1"):
            src = np.asarray(img.convert("L"))
            out["gray_replicated"] = bool(np.array_equal(np.repeat(src[..., None], 3, 2), a))
            out["has_transparency"] = "transparency" in img.info
    except Exception as e:  # recording a rule must never stop a case
        out["error"] = repr(e)
    return out


def _webp_lossless_ok():
    """Lossless WebP is ~25 % smaller than PNG for these pictures; use it when PIL round-trips it exactly."""
    try:
        a = natural(37, 23, 99)
        b = io.BytesIO()
        Image.fromarray(a).save(b, "WEBP", lossless=True, quality=100, method=6)
        return np.array_equal(np.asarray(Image.open(io.BytesIO(b.getvalue())).convert("RGB")), a)
    except Exception:
        return False


LOSSLESS_EXT = "webp" if _webp_lossless_ok() else "png"


def lossless_bytes(arr):
    """The RGB array as a lossless WebP (or PNG), verified to decode back to the same bytes."""
    b = io.BytesIO()
    if LOSSLESS_EXT == "webp":
        Image.fromarray(arr).save(b, "WEBP", lossless=True, quality=100, method=6)
    else:
        Image.fromarray(arr).save(b, "PNG", compress_level=9)
    data = b.getvalue()
    back = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    if not np.array_equal(back, arr):
        raise RuntimeError("lossless encoding did not round-trip")
    return data


def sha(b):
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------------------------------------
# Running the processor
# --------------------------------------------------------------------------------------------------------


def load_processor_class():
    try:
        from transformers import Gemma4UnifiedImageProcessor
        return Gemma4UnifiedImageProcessor
    except Exception:
        from transformers.models.gemma4_unified.image_processing_gemma4_unified import Gemma4UnifiedImageProcessor
        return Gemma4UnifiedImageProcessor


def run_processor(procs, cls, rgb_img, budget):
    """Returns (u8 rows (n, 6912), positions (n, 2), n, checks dict)."""
    import torch
    if budget not in procs:
        try:
            procs[budget] = (cls(max_soft_tokens=budget), False)
        except Exception:
            procs[budget] = (cls(), True)
    proc, pass_kw = procs[budget]
    out = proc(images=[rgb_img], max_soft_tokens=budget, return_tensors="pt") if pass_kw else \
        proc(images=[rgb_img], return_tensors="pt")
    pv = out["pixel_values"][0]
    pos = out["image_position_ids"][0]
    n = out["num_soft_tokens_per_image"]
    try:
        n = int(n[0])
    except (TypeError, IndexError):
        n = int(n)
    checks = {"pixel_values_dtype": str(pv.dtype), "pixel_values_shape": list(pv.shape)}
    f = pv[:n].double().numpy() * 255.0
    u8 = np.rint(f)
    checks["u8_reconstruction_max_err"] = float(np.abs(f - u8).max()) if n else 0.0
    if checks["u8_reconstruction_max_err"] > 1e-3:
        raise RuntimeError("pixel_values are not k/255: max err %g" % checks["u8_reconstruction_max_err"])
    u8 = u8.astype(np.uint8)
    # The processor rescales uint8 by multiplying with 1/255: check that our uint8 rows reproduce it exactly.
    again = torch.from_numpy(u8.copy()) * (1.0 / 255.0)
    checks["rescale_exact"] = bool(torch.equal(again.to(pv.dtype), pv[:n]))
    checks["padding_zero"] = bool((pv[n:] == 0).all().item()) and bool((pos[n:] == -1).all().item())
    return u8, pos[:n].numpy().astype(np.int64), n, checks


def target_size(h, w, budget):
    """The processor's resize rule (used only for --dry-run estimates; the real run asks the processor)."""
    import math
    target_px = budget * 9 * 256
    f = math.sqrt(target_px / (h * w))
    th = int(math.floor(f * h / 48)) * 48
    tw = int(math.floor(f * w / 48)) * 48
    if th == 0:
        th, tw = 48, min(int(math.floor(w / h)) * 48, budget * 48)
    elif tw == 0:
        tw, th = 48, min(int(math.floor(h / w)) * 48, budget * 48)
    return th, tw


def direct_resize(rgb_img, h2, w2):
    """torchvision resize of the same uint8 tensor, for an independent check of the rebuilt image."""
    import torch
    from torchvision.transforms.v2 import functional as tvF
    t = tvF.pil_to_tensor(rgb_img)
    if (t.shape[1], t.shape[2]) != (h2, w2):
        t = tvF.resize(t, [h2, w2], interpolation=tvF.InterpolationMode.BICUBIC, antialias=True)
    return t.permute(1, 2, 0).contiguous().numpy()


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
         "machine": platform.machine()}
    import PIL
    v["pillow"] = PIL.__version__
    try:
        from PIL import features
        v["pillow_features"] = {k: features.version(k) for k in ("jpg", "webp", "zlib", "libjpeg_turbo")
                                if features.check(k)} if hasattr(features, "version") else {}
    except Exception as e:
        v["pillow_features"] = repr(e)
    for mod in ("torch", "torchvision", "transformers"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception as e:
            v[mod] = "unavailable: %r" % (e,)
    try:
        import torch
        v["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        v["torch_num_threads"] = torch.get_num_threads()
    except Exception:
        pass
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--only", default="", help="comma-separated case names to run (default all)")
    ap.add_argument("--dry-run", action="store_true", help="make images only; no transformers")
    args = ap.parse_args()

    out = args.out
    for sub in ("images", "resized", "decoded"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    only = set(s for s in args.only.split(",") if s)

    manifest = {"format": 1, "versions": versions(), "cases": [], "rules": {}, "failures": []}
    cls = None
    procs = {}
    if not args.dry_run:
        try:
            cls = load_processor_class()
            p0 = cls()
            manifest["processor"] = {k: (v if isinstance(v, (int, float, str, bool, type(None), list)) else repr(v))
                                     for k, v in sorted(p0.to_dict().items())} if hasattr(p0, "to_dict") else {}
            manifest["processor"]["class"] = cls.__module__ + "." + cls.__name__
            try:
                manifest["processor"]["backend"] = p0.backend
            except Exception:
                pass
        except Exception:
            traceback.print_exc()
            print("FATAL: cannot construct Gemma4UnifiedImageProcessor", file=sys.stderr)
            return 2

    rows = []
    for name, maker, margs, budgets in CASES:
        if only and name not in only:
            continue
        try:
            path = maker(os.path.join(out, "images"), name, *margs)
        except Exception as e:
            traceback.print_exc()
            manifest["failures"].append({"case": name, "stage": "make", "error": repr(e)})
            rows.append((name, "-", "MAKE FAILED: %r" % (e,)))
            continue
        fname = os.path.basename(path)
        try:
            img = Image.open(path)
            img.load()
            mode0 = img.mode
            orientation = None
            try:
                orientation = img.getexif().get(0x0112)
            except Exception:
                pass
            upright = ImageOps.exif_transpose(img) if fname.startswith("exif_") else img
            rgb = upright if upright.mode == "RGB" else upright.convert("RGB")
            rule = observe_rule(upright, rgb)
            manifest["rules"][name] = rule
            dec = np.asarray(rgb)
            dec_sha = sha(np.ascontiguousarray(dec).tobytes())
            dec_png = None
            if fname.endswith(LOSSY) and dec.shape[0] * dec.shape[1] <= DECODED_MAX_PIXELS:
                dec_png = "decoded/%s.%s" % (name, LOSSLESS_EXT)
                with open(os.path.join(out, dec_png), "wb") as f:
                    f.write(lossless_bytes(dec))
        except Exception as e:
            traceback.print_exc()
            manifest["failures"].append({"case": name, "stage": "open", "error": repr(e)})
            rows.append((name, "-", "OPEN FAILED: %r" % (e,)))
            continue
        for budget in budgets:
            entry = {"name": name, "file": "images/" + fname, "pil_mode": mode0, "exif_orientation": orientation,
                     "size": [rgb.width, rgb.height], "max_soft_tokens": budget,
                     "decoded_sha256": dec_sha, "decoded_png": dec_png}
            try:
                if args.dry_run:
                    # Size estimate only: PIL's bicubic stands in for the processor's resize.
                    h2, w2 = target_size(rgb.height, rgb.width, budget)
                    est = np.asarray(rgb.resize((w2, h2), Image.BICUBIC))
                    rp = "resized/%s_%d.%s" % (name, budget, LOSSLESS_EXT)
                    with open(os.path.join(out, rp), "wb") as f:
                        f.write(lossless_bytes(est))
                    entry["dry_run"] = True
                    manifest["cases"].append(entry)
                    rows.append((name, budget, "made (dry run) %dx%d %s -> %dx%d" % (
                        rgb.width, rgb.height, mode0, w2, h2)))
                    continue
                t1 = time.time()
                u8, pos, n, checks = run_processor(procs, cls, rgb, budget)
                gx = int(pos[:, 0].max()) + 1
                gy = int(pos[:, 1].max()) + 1
                if gx * gy != n:
                    raise RuntimeError("positions do not tile a grid: %d x %d != %d" % (gx, gy, n))
                expect = np.stack(np.meshgrid(np.arange(gx), np.arange(gy), indexing="xy"), -1).reshape(-1, 2)
                checks["positions_row_major"] = bool(np.array_equal(expect, pos))
                h2, w2 = gy * 48, gx * 48
                resized = u8.reshape(gy, gx, 48, 48, 3).transpose(0, 2, 1, 3, 4).reshape(h2, w2, 3)
                try:
                    checks["direct_resize_equal"] = bool(np.array_equal(direct_resize(rgb, h2, w2), resized))
                except Exception as e:
                    checks["direct_resize_equal"] = "error: %r" % (e,)
                rp = "resized/%s_%d.%s" % (name, budget, LOSSLESS_EXT)
                with open(os.path.join(out, rp), "wb") as f:
                    f.write(lossless_bytes(resized))
                entry.update({"resized": [h2, w2], "n": n, "positions": pos.tolist(),
                              "patches_sha256": sha(u8.tobytes()), "resized_png": rp,
                              "resized_sha256": sha(resized.tobytes()), "checks": checks,
                              "seconds": round(time.time() - t1, 3)})
                manifest["cases"].append(entry)
                ok = all(v is True for k, v in checks.items() if isinstance(v, bool))
                rows.append((name, budget, "%s %4dx%-4d -> %4dx%-4d n=%-4d %s %s" % (
                    "ok  " if ok else "WARN", rgb.width, rgb.height, w2, h2, n, entry["patches_sha256"][:12],
                    "" if ok else json.dumps(checks))))
            except Exception as e:
                traceback.print_exc()
                entry["error"] = repr(e)
                manifest["failures"].append({"case": name, "budget": budget, "stage": "process", "error": repr(e)})
                rows.append((name, budget, "PROCESS FAILED: %r" % (e,)))

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)

    total = 0
    for root, _, files in os.walk(out):
        for fn in files:
            total += os.path.getsize(os.path.join(root, fn))
    print()
    print("%-30s %6s  %s" % ("case", "budget", "result"))
    for r in rows:
        print("%-30s %6s  %s" % r)
    print()
    print("rules observed in PIL's convert('RGB'):")
    for k, v in manifest["rules"].items():
        if v.get("mode") not in ("RGB",):
            print("  %-30s %s" % (k, json.dumps(v, sort_keys=True)))
    print()
    print("versions: %s" % json.dumps(manifest["versions"], sort_keys=True))
    print("cases: %d, failures: %d, output: %s (%.2f MB)" % (len(manifest["cases"]), len(manifest["failures"]),
                                                           out, total / 1e6))
    return 1 if manifest["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
