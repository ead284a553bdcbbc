#!/usr/bin/env python3
"""g4's CUDA engine against transformers on random weights of the real 12B shape.

Run on the GPU machine, after `g4 bench --shape 12b --model DIR` (or `g4 make-tiny-model`'s shape writer) has
written the checkpoint:

    python3 tests/reference/compare_12b.py --model DIR --g4 build/g4 [--tokens 1000] [--out DIR]

Loading the g4-written checkpoint with transformers checks the on-disk names and config fields at the real
shape. Then, for one prompt of random ids, it compares per-position logits:
  g4 cuda           vs transformers fp32 (eager; embedding scale bf16(sqrt(H)) as a bf16 checkpoint applies it)
  transformers bf16 vs transformers fp32
The issue's bar: g4 must be at least as close to fp32 as transformers bf16 is. The same prompt is also run
through g4 one position per step (`--chunk 1`: every row takes the decode path) — its logits must equal the
prompt path's bit for bit, which makes them decode-step logits held to the same references.

--speed also times transformers bf16 (eager, its default dynamic cache) on the same weights, for the peer
columns of docs/perf.md: prefill of 512 and 2048 tokens, first token of 1000, and greedy decode tokens/s of
1 and 16 streams. Prints tables last.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch


def row_stats(a, b):
    """Per-row max |a - b| / max |b| and top-1 agreement, over rows of (T, V) tensors."""
    d = (a - b).abs().amax(dim=1) / b.abs().amax(dim=1)
    top = (a.argmax(dim=1) == b.argmax(dim=1)).float().mean().item()
    return d.mean().item(), d.max().item(), top


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--g4", required=True)
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--out", default="/tmp/g4cmp")
    ap.add_argument("--speed", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(12)
    ids = [2] + rng.integers(1000, 200000, size=args.tokens - 1).tolist()
    V = 262144

    t0 = time.time()
    out = os.path.join(args.out, "g4.f32")
    r = subprocess.run([args.g4, "logits", "--model", args.model, "--device", "cuda", "--ids",
                        ",".join(map(str, ids)), "--out", out], capture_output=True, text=True)
    print("g4:", r.stdout.strip(), r.stderr.strip()[-400:], f"({time.time() - t0:.1f} s)", flush=True)
    if r.returncode != 0:
        sys.exit(1)
    g4 = torch.from_numpy(np.fromfile(out, dtype="<f4").reshape(len(ids), V)).cuda()
    t0 = time.time()
    out1 = os.path.join(args.out, "g4-rows.f32")
    r = subprocess.run([args.g4, "logits", "--model", args.model, "--device", "cuda", "--chunk", "1", "--ids",
                        ",".join(map(str, ids)), "--out", out1], capture_output=True, text=True)
    print("g4 --chunk 1:", r.stdout.strip(), r.stderr.strip()[-400:], f"({time.time() - t0:.1f} s)", flush=True)
    if r.returncode != 0:
        sys.exit(1)
    g4_rows = torch.from_numpy(np.fromfile(out1, dtype="<f4").reshape(len(ids), V)).cuda()
    decode_equal = bool(torch.equal(g4, g4_rows))
    del g4_rows

    from transformers import Gemma4UnifiedForConditionalGeneration as M
    x = torch.tensor([ids]).cuda()
    results = {}
    with torch.no_grad():
        t0 = time.time()
        m32 = M.from_pretrained(args.model, dtype=torch.float32, attn_implementation="eager").cuda().eval()
        for name, mod in m32.named_modules():
            if hasattr(mod, "embed_scale") and isinstance(mod.embed_scale, torch.Tensor):
                mod.embed_scale.fill_(float(torch.tensor(float(mod.embed_scale)).to(torch.bfloat16).float()))
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ref = m32(input_ids=x).logits[0].float()
        print(f"transformers fp32 loaded and run in {time.time() - t0:.1f} s", flush=True)
        del m32
        torch.cuda.empty_cache()
        t0 = time.time()
        m16 = M.from_pretrained(args.model, dtype=torch.bfloat16, attn_implementation="eager").cuda().eval()
        hf16 = m16(input_ids=x).logits[0].float()
        print(f"transformers bf16 loaded and run in {time.time() - t0:.1f} s", flush=True)
        speed = time_transformers(m16, rng) if args.speed else None
        results["g4 cuda vs transformers fp32"] = row_stats(g4, ref)
        results["transformers bf16 vs transformers fp32"] = row_stats(hf16, ref)
        results["g4 cuda vs transformers bf16"] = row_stats(g4, hf16)
    json.dump(results, open(os.path.join(args.out, "compare_12b.json"), "w"), indent=1)
    print(f"\n12B-shaped random weights, prompt of {len(ids)} tokens, logits of every position")
    print("| comparison | mean row rel error | max row rel error | top-1 agreement |")
    print("|---|---|---|---|")
    for k, (mean, mx, top) in results.items():
        print(f"| {k} | {mean:.3e} | {mx:.3e} | {100 * top:.1f} % |")
    ok = results["g4 cuda vs transformers fp32"][0] <= results["transformers bf16 vs transformers fp32"][0]
    print("g4 at least as close to fp32 as transformers bf16 (mean row error):", "yes" if ok else "NO")
    print("g4 decode path (one position per step) = prompt path, bit for bit:", "yes" if decode_equal else "NO")
    if speed:
        print("\ntransformers 5.17 bf16, eager attention, dynamic cache, same weights (median of 3)")
        print("| what | value |")
        print("|---|---|")
        for k, v in speed.items():
            print(f"| {k} | {v} |")


def time_transformers(model, rng):
    """Prefill and greedy decode timings of a bf16 transformers model on random ids."""
    def ids(batch, n):
        return torch.tensor(rng.integers(1000, 200000, size=(batch, n)).tolist()).cuda()

    def timed(fn):
        ts = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.time()
            fn()
            torch.cuda.synchronize()
            ts.append(time.time() - t0)
        return sorted(ts)[1]

    out = {}
    with torch.no_grad():
        for n in (512, 2048):
            x = ids(1, n)
            model(input_ids=x)  # warm-up
            t = timed(lambda: model(input_ids=x, logits_to_keep=1))
            out[f"prefill {n} tokens"] = f"{t * 1e3:.1f} ms ({n / t:.0f} tok/s)"
        x = ids(1, 1000)
        t = timed(lambda: model(input_ids=x, logits_to_keep=1))
        out["first token, 1000-token prompt"] = f"{t * 1e3:.1f} ms"
        for batch in (1, 16):
            x = ids(batch, 512)
            new = 64
            gen = lambda: model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=new,
                                         min_new_tokens=new, do_sample=False)
            gen()  # warm-up
            t_all = timed(gen)
            t_pre = timed(lambda: model(input_ids=x, logits_to_keep=1))
            out[f"decode, {batch} stream(s), context 512"] = f"{batch * new / (t_all - t_pre):.1f} tok/s " \
                f"({(t_all - t_pre) / new * 1e3:.1f} ms a step)"
    return out


if __name__ == "__main__":
    main()
