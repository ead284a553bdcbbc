#!/usr/bin/env python3
"""Reference fixtures for g4's CPU engine, made by Hugging Face transformers itself.

Run on the GPU machine (python3 with torch + transformers 5.17; no network needed):

    python3 tests/reference/make_engine_fixtures.py --out DIR

It builds two small random-weight Gemma 4 checkpoints in the real on-disk layout (save_pretrained):

  unified/  gemma4_unified (12B-style): text decoder + encoder-free patch embedder; sliding window 8 so the
            prompts cross it; 2 full layers (k_eq_v, proportional RoPE over head dim 64); special-token ids
            placed inside a 512-token vocabulary (they come from the config, not constants).
  text31/   gemma4 (31B-style) text decoder: 8 query heads, 4 KV heads on sliding layers (GQA 2), 2 KV heads on
            full layers (GQA 4), hidden 96 so sqrt(H) is not a bf16 number.

Every parameter and buffer is randomized (norm weights around 1, layer scalars, LayerNorm biases, the position
table), rounded to bf16 and saved in bf16. The reference runs in fp32 with eager attention on the same
bf16-rounded values, loaded back from the saved files in fp32. The embedding scale is set to bf16(sqrt(H)), which is what the model does when it runs in
its checkpoint dtype (the scale is cast to the weight dtype); an fp32 run would otherwise use the unrounded one.

For each case it writes cases.json (ids, mm_token_type_ids, image files, greedy continuation) and float32
logits for every prompt position (row-major (T, V)), under two image-mask variants where images are present:
  "generate": what generate() builds (create_masks_for_generate): bidirectional within an image on sliding
              layers only;
  "forward":  what a direct forward with mm_token_type_ids builds: bidirectional within an image on every layer.
plus the logits generate() reports for each decode step (before any logits processor).
"""
import argparse
import hashlib
import json
import math
import os
import sys
import traceback

import numpy as np
import torch

VOCAB = 512
SPECIAL = dict(boi_token_id=500, image_token_id=501, eoi_token_id=502, video_token_id=503,
               audio_token_id=504, boa_token_id=505, eoa_token_index=506)


def log(*a):
    print(*a, flush=True)


def randomize(model, seed):
    """Every parameter and buffer gets values that expose a wrong convention (weights not ones, biases not 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if "inv_freq" in name or name.endswith("embed_scale"):
                continue
            shape = p.shape
            if name.endswith("layer_scalar"):
                v = torch.rand(shape, generator=g) + 0.5
            elif name.endswith("language_model.norm.weight") or name == "model.norm.weight":
                # a large final norm pushes logits into the soft-cap's curved range
                v = torch.rand(shape, generator=g) * 40 + 20
            elif "norm" in name or "_ln" in name:
                if name.endswith("bias"):
                    v = torch.randn(shape, generator=g) * 0.1
                else:
                    v = torch.rand(shape, generator=g) + 0.5
            elif name.endswith("bias"):
                v = torch.randn(shape, generator=g) * 0.1
            elif "embed_tokens" in name:
                # small rows: the layers, not the input token, dominate the residual (no echo of the input)
                v = torch.randn(shape, generator=g) * 0.1
            elif "pos_embedding" in name or "position_embedding" in name:
                v = torch.randn(shape, generator=g)
            elif p.dim() >= 2:
                v = torch.randn(shape, generator=g) / math.sqrt(shape[-1])
            else:
                v = torch.randn(shape, generator=g) * 0.5
            p.copy_(v.to(torch.bfloat16).to(p.dtype))


def set_bf16_embed_scale(model):
    for name, mod in model.named_modules():
        if hasattr(mod, "embed_scale") and isinstance(getattr(mod, "embed_scale"), torch.Tensor):
            s = float(mod.embed_scale)
            r = float(torch.tensor(s).to(torch.bfloat16).float())
            mod.embed_scale.fill_(r)
            log(f"  {name}.embed_scale {s} -> bf16 {r}")


def save_f32(path, t):
    a = t.detach().to(torch.float32).cpu().numpy().astype("<f4")
    a.tofile(path)
    return {"file": os.path.basename(path), "shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}


def gen_greedy(model, n, extra, suppress):
    from transformers import GenerationConfig
    gc = GenerationConfig(do_sample=False, max_new_tokens=n, eos_token_id=None, pad_token_id=0, bos_token_id=2,
                          suppress_tokens=suppress or None)
    out = model.generate(**extra, generation_config=gc, output_logits=True, return_dict_in_generate=True)
    seq = out.sequences[0].tolist()
    prompt_len = extra["input_ids"].shape[1]
    logits = torch.stack([l[0] for l in out.logits])  # (n, V), raw (before processors)
    return seq[prompt_len:], logits


def make_image(path, w, h, seed):
    from PIL import Image
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    r = (xx * 255 // max(w - 1, 1))
    g = (yy * 255 // max(h - 1, 1))
    b = ((xx // 24 + yy // 24) % 2) * 180 + rng.integers(0, 60, size=(h, w))
    img = np.stack([r, g, b], -1).clip(0, 255).astype(np.uint8)
    Image.fromarray(img, "RGB").save(path)
    return Image.open(path).convert("RGB")


# ---- unified (12B-style) -----------------------------------------------------------------------------------

def build_unified(out_dir, seed):
    from transformers import (Gemma4UnifiedConfig, Gemma4UnifiedForConditionalGeneration,
                              Gemma4UnifiedTextConfig, Gemma4UnifiedVisionConfig)
    try:
        from transformers import Gemma4UnifiedAudioConfig
        audio = Gemma4UnifiedAudioConfig()
    except Exception:
        audio = None
    text = Gemma4UnifiedTextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, global_head_dim=64,
        num_global_key_value_heads=1, attention_k_eq_v=True, sliding_window=8,
        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention", "sliding_attention", "full_attention"],
        final_logit_softcapping=30.0, rms_norm_eps=1e-6, max_position_embeddings=4096,
        pad_token_id=0, eos_token_id=1, bos_token_id=2, tie_word_embeddings=True,
        use_bidirectional_attention="vision")
    vision = Gemma4UnifiedVisionConfig(mm_embed_dim=48, output_proj_dims=48, mm_posemb_size=16)
    kw = dict(text_config=text, vision_config=vision, **SPECIAL)
    if audio is not None:
        kw["audio_config"] = audio
    cfg = Gemma4UnifiedConfig(**kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = Gemma4UnifiedForConditionalGeneration(cfg)
    randomize(model, seed)
    model = model.to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    return reload_fp32(Gemma4UnifiedForConditionalGeneration, out_dir)


def reload_fp32(cls, out_dir):
    """The reference: the saved checkpoint loaded back in fp32 (bf16 weights widened exactly; RoPE frequencies
    computed afresh in fp32 — converting the in-memory model with .to() would round those buffers to bf16)."""
    model = cls.from_pretrained(out_dir, dtype=torch.float32, attn_implementation="eager").eval()
    set_bf16_embed_scale(model)
    for name, b in model.named_buffers():
        if "inv_freq" in name and b.dtype != torch.float32:
            raise SystemExit(f"{name} is {b.dtype}")
    return model


def image_inputs(paths_sizes, mst):
    from transformers import Gemma4UnifiedImageProcessor
    proc = Gemma4UnifiedImageProcessor(max_soft_tokens=mst)
    imgs = [make_image(p, w, h, i + 10) for i, (p, w, h) in enumerate(paths_sizes)]
    feat = proc(images=imgs, return_tensors="pt", max_soft_tokens=mst)
    return feat


def unified_cases(model, out_dir, rng):
    cases = []
    V = VOCAB
    suppress = [SPECIAL["eoi_token_id"], SPECIAL["eoa_token_index"]]
    # -- text crossing the window many times
    ids = [2] + rng.integers(3, 490, size=47).tolist()
    x = torch.tensor([ids])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0]
        greedy, dec_logits = gen_greedy(model, 12, dict(input_ids=x), suppress)
    c = dict(name="text", ids=ids, logits=save_f32(os.path.join(out_dir, "text.logits.f32"), logits),
             greedy=greedy, suppress=suppress,
             decode_logits=save_f32(os.path.join(out_dir, "text.decode.f32"), dec_logits))
    log(f"  text: T={len(ids)} greedy={greedy} |logits| max {logits.abs().max().item():.3g} std {logits.std().item():.3g}")
    cases.append(c)

    # -- two images (no resize: both sizes sit exactly on the 70-token budget's grid)
    files = [("image-a.png", 432, 336), ("image-b.png", 384, 384)]
    feat = image_inputs([(os.path.join(out_dir, f), w, h) for f, w, h in files], 70)
    ns = [int(n) for n in feat["num_soft_tokens_per_image"]]
    log(f"  images: soft tokens {ns}, pixel_values {tuple(feat['pixel_values'].shape)}")
    pv = feat["pixel_values"]
    for i, (f, w, h) in enumerate(files):
        u8 = torch.round(pv[i, :ns[i]] * 255)
        assert torch.equal(u8 / 255, pv[i, :ns[i]].float()) or torch.allclose(u8 / 255, pv[i, :ns[i]].float(), atol=1e-7)
        u8.to(torch.uint8).numpy().tofile(os.path.join(out_dir, f + ".patches.u8"))
        np.asarray(feat["image_position_ids"][i, :ns[i]], dtype="<i4").tofile(os.path.join(out_dir, f + ".pos.i32"))
    t = lambda n: rng.integers(3, 490, size=n).tolist()
    ids = [2] + t(3) + [SPECIAL["boi_token_id"]] + [SPECIAL["image_token_id"]] * ns[0] + [SPECIAL["eoi_token_id"]] \
        + t(3) + [SPECIAL["boi_token_id"]] + [SPECIAL["image_token_id"]] * ns[1] + [SPECIAL["eoi_token_id"]] + t(4)
    tt = [1 if i == SPECIAL["image_token_id"] else 0 for i in ids]
    x = torch.tensor([ids])
    mm = torch.tensor([tt])
    extra = dict(input_ids=x, pixel_values=pv, image_position_ids=feat["image_position_ids"], mm_token_type_ids=mm)
    variants = {}
    with torch.no_grad():
        variants["forward"] = model(**extra).logits[0]
        try:
            emb = torch.zeros(1, len(ids), model.config.get_text_config().hidden_size)
            pos = torch.arange(len(ids)).unsqueeze(0)
            masks = type(model).create_masks_for_generate(
                config=model.config, inputs_embeds=emb, attention_mask=None, past_key_values=None,
                position_ids=pos, mm_token_type_ids=mm, is_first_iteration=True)
            variants["generate"] = model(**extra, attention_mask=masks).logits[0]
        except Exception:
            traceback.print_exc()
            log("  !! could not build generate() masks; only the forward variant is recorded")
        greedy, dec_logits = gen_greedy(model, 8, extra, suppress)
    d = (variants["forward"] - variants.get("generate", variants["forward"])).abs().max().item()
    log(f"  image: T={len(ids)} max|forward-generate| = {d:.4g}; greedy={greedy}")
    if "generate" in variants:
        # generate()'s first decode logits are the prefill's last row: they tell which variant generate() uses
        dl = dec_logits[0]
        for k, v in variants.items():
            log(f"    |{k}[-1] - generate step 0| = {(v[-1] - dl).abs().max().item():.4g}")
    c = dict(name="image", ids=ids, mm_token_type_ids=tt, images=[f for f, _, _ in files], max_soft_tokens=70,
             soft_tokens=ns, greedy=greedy, suppress=suppress,
             logits={k: save_f32(os.path.join(out_dir, f"image.{k}.logits.f32"), v) for k, v in variants.items()},
             decode_logits=save_f32(os.path.join(out_dir, "image.decode.f32"), dec_logits))
    cases.append(c)
    return cases


# ---- text31 (31B-style gemma4 text decoder) --------------------------------------------------------------

def build_text31(out_dir, seed):
    import transformers as T
    text = T.Gemma4TextConfig(
        vocab_size=VOCAB, hidden_size=96, intermediate_size=192, num_hidden_layers=6,
        num_attention_heads=8, num_key_value_heads=4, head_dim=32, global_head_dim=64,
        num_global_key_value_heads=2, attention_k_eq_v=True, sliding_window=6,
        layer_types=["sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention", "sliding_attention", "full_attention"],
        final_logit_softcapping=15.0, rms_norm_eps=1e-6, max_position_embeddings=4096,
        hidden_size_per_layer_input=0, num_kv_shared_layers=0, enable_moe_block=False,
        use_double_wide_mlp=False, pad_token_id=0, eos_token_id=1, bos_token_id=2, tie_word_embeddings=True)
    model = None
    try:
        vision = T.Gemma4VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                                      position_embedding_size=64)
        cfg = T.Gemma4Config(text_config=text, vision_config=vision, audio_config=None, **{
            k: v for k, v in SPECIAL.items() if k in ("boi_token_id", "image_token_id", "eoi_token_id",
                                                      "video_token_id", "audio_token_id")})
        torch.manual_seed(seed)
        model = T.Gemma4ForConditionalGeneration(cfg)
        kind = "Gemma4ForConditionalGeneration"
    except Exception:
        traceback.print_exc()
        log("  !! Gemma4ForConditionalGeneration failed; falling back to Gemma4ForCausalLM")
        torch.manual_seed(seed)
        model = T.Gemma4ForCausalLM(text)
        kind = "Gemma4ForCausalLM"
    model.config._attn_implementation = "eager"
    randomize(model, seed)
    model = model.to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    return reload_fp32(type(model), out_dir), kind


def text31_cases(model, out_dir, rng):
    ids = [2] + rng.integers(3, 490, size=47).tolist()
    x = torch.tensor([ids])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0]
        greedy, dec_logits = gen_greedy(model, 12, dict(input_ids=x), [])
    log(f"  text: T={len(ids)} greedy={greedy}")
    return [dict(name="text", ids=ids, logits=save_f32(os.path.join(out_dir, "text.logits.f32"), logits),
                 greedy=greedy, suppress=[],
                 decode_logits=save_f32(os.path.join(out_dir, "text.decode.f32"), dec_logits))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    import transformers
    versions = dict(transformers=transformers.__version__, torch=torch.__version__, python=sys.version.split()[0])
    log("versions", versions)
    torch.set_grad_enabled(False)
    rng = np.random.default_rng(args.seed)
    ok = True
    for name in ("unified", "text31"):
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        log(f"== {name}")
        try:
            if name == "unified":
                model = build_unified(d, args.seed)
                cases, kind = unified_cases(model, d, rng), "Gemma4UnifiedForConditionalGeneration"
            else:
                model, kind = build_text31(d, args.seed + 1)
                cases = text31_cases(model, d, rng)
            json.dump(dict(versions=versions, model_class=kind, seed=args.seed, vocab=VOCAB, cases=cases),
                      open(os.path.join(d, "cases.json"), "w"), indent=1)
            names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
            log(f"  {kind}: {len(names)} parameters/buffers")
        except Exception:
            traceback.print_exc()
            ok = False
    log("summary:", "ok" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
