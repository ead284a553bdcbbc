#!/usr/bin/env python3
"""g4's CUDA engine against transformers on random weights of the real 12B shape.

Run on the GPU machine, after `g4 bench --shape 12b --model DIR` (or `g4 make-tiny-model`'s shape writer) has
written the checkpoint:

    python3 tests/reference/compare_12b.py --model DIR --g4 build/g4 [--tokens 1000] [--out DIR]

Loading the g4-written checkpoint with transformers checks the on-disk names and config fields at the real
shape. Then, for one prompt of random ids, it compares per-position logits:
  g4 cuda           vs transformers fp32 (eager; embedding scale bf16(sqrt(H)) as a bf16 checkpoint applies it)
  transformers bf16 vs transformers fp32
The issue's bar: g4 must be at least as close to fp32 as transformers bf16 is. Prints a table last.
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


if __name__ == "__main__":
    main()
