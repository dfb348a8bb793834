"""triattn vs the numpy reference on random-weight models written by `triattn make-model`.

For each preset (tiny-llama, tiny-qwen2, tiny-qwen3) and each file type (GGUF f32/f16/q8_0, HF
f32/f16): logits at all 20 positions of a fixed token sequence, engine vs the reference loaded from
the same file. The reference dequantizes the stored weights exactly and computes in f64, so the
tolerance only has to cover the engine's own arithmetic (relative = max |diff| / max |ref logit|):
- f32: 1e-4 (f32 accumulation; the engine measured 1.2-1.6e-7).
- f16: 1e-3 (weights are exact on both sides and the engine keeps activations f32: measured
  1.0-1.7e-7; the margin would still admit an engine that rounds activations to f16, which
  emulation puts at 4-7e-4).
- q8_0: 3e-2 (the engine quantizes activations to 8 bit for Q8_0 dot products, as llama.cpp
  does; emulating that in the reference moved logits by 1.0-1.6% here and on TinyStories; the
  engine measured 0.5-0.7%).
Plus a real shape (qwen3-0.6b, 1 layer) in f32 and Q4_K, and RoPE scaling (linear, llama3, yarn)
set through config.json and through GGUF metadata keys.
Also, with the same seed: the HF and GGUF files hold the same weights (compared after undoing the
llama q/k row permutation, exactly for f32 and f16), the engine's logits for the two formats agree
within 1e-4 (f32), and each preset really has its architecture's features (qwen2 q/k/v biases,
qwen3 q/k norms), so the comparison exercises them.
"""

import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli as C  # noqa: E402
import ref_model as R  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-3, "q8_0": 3e-2}
PRESETS = ("tiny-llama", "tiny-qwen2", "tiny-qwen3")
FILES = (("gguf", "f32"), ("gguf", "f16"), ("gguf", "q8_0"), ("hf", "f32"), ("hf", "f16"))
SEED = 1234
N_TOKENS = 20

C.binary()
work = C.work_dir("random_models")
c = C.Checks("random models reference")


def make(preset, fmt, typ):
    path = os.path.join(work, "%s-%s-%s%s" % (preset, typ, fmt, ".gguf" if fmt == "gguf" else ""))
    C.run("make-model", "--preset", preset, "--format", fmt, "--type", typ, "-o", path, "--seed", SEED)
    return path


def weights(m):
    out = {"tok_emb": m.tok_emb, "norm": m.norm, "lm_head": m.lm_head}
    for i, L in enumerate(m.layers):
        out.update({"%d.%s" % (i, k): v for k, v in L.items()})
    return out


def gguf_with_metadata(src, dst, extra):
    """Copy a GGUF file adding metadata keys. extra: [(key, "str" | "u32" | "f32", value)].
    Tensor infos and data are copied byte for byte (offsets are relative to the data section)."""
    with open(src, "rb") as f:
        blob = f.read()
    r = R._Reader(blob)
    r.p = 4
    version = r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv_start = r.p
    align = 32
    for _ in range(n_kv):
        k = r.string()
        v = r.value(r.take("<I"))
        if k == "general.alignment":
            align = v
    kv_end = r.p
    for _ in range(n_tensors):
        r.string()
        nd = r.take("<I")
        r.p += 8 * nd + 4 + 8
    infos_end = r.p
    data = blob[(infos_end + align - 1) // align * align:]

    def gstr(x):
        x = x.encode()
        return struct.pack("<Q", len(x)) + x

    added = b""
    for k, t, v in extra:
        added += gstr(k) + {"str": lambda: struct.pack("<I", 8) + gstr(v),
                            "u32": lambda: struct.pack("<II", 4, v),
                            "f32": lambda: struct.pack("<If", 6, v)}[t]()
    head = b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv + len(extra)) + blob[kv_start:kv_end] + added
    head += blob[kv_end:infos_end]
    head += b"\0" * ((-len(head)) % align)
    with open(dst, "wb") as f:
        f.write(head + data)


def same_weight(a, b):
    """Matrices must be bit-identical. GGUF writers keep 1-D tensors (norms, biases) in f32 as
    llama.cpp does, while an HF f16 file rounds them, so those may differ by f16 rounding."""
    if a.shape != b.shape:
        return False
    if a.ndim >= 2:
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=2.0 ** -10, atol=1e-7)


refs_by_preset, ids_by_preset = {}, {}
for preset in PRESETS:
    refs, engine_logits = {}, {}
    ids = None
    for fmt, typ in FILES:
        what = "%s %s %s" % (preset, fmt, typ)
        path = make(preset, fmt, typ)
        ref = R.load(path)
        refs[(fmt, typ)] = ref
        if ids is None:
            ids = np.random.default_rng(7).integers(3, ref.config.vocab_size, N_TOKENS)
            ids[0] = ref.config.bos_id
            cfg = ref.config
            feature = {"tiny-llama": ("llama", True), "tiny-qwen2": ("qwen2", "bq" in ref.layers[0] and "bk" in ref.layers[0]
                                                                  and "bv" in ref.layers[0]),
                       "tiny-qwen3": ("qwen3", "q_norm" in ref.layers[0] and "k_norm" in ref.layers[0])}[preset]
            c.check(cfg.arch == feature[0] and feature[1], "%s: arch %s with its features (biases/qk-norm) present" % (what, cfg.arch))
        got = C.logits(path, ids, all_positions=True)
        engine_logits[(fmt, typ)] = got
        c.close_logits(got, R.forward(ref, ids), TOL[typ], "%s: logits at %d positions" % (what, N_TOKENS))

    for typ in ("f32", "f16"):
        wh, wg = weights(refs[("hf", typ)]), weights(refs[("gguf", typ)])
        diff = [k for k in wh if k not in wg or not same_weight(wh[k], wg[k])]
        c.check(not diff and set(wh) == set(wg), "%s %s: HF and GGUF hold identical weights (seed %d)%s"
                % (preset, typ, SEED, "" if not diff else "; differ: %s" % diff[:6]))
    c.close_logits(engine_logits[("gguf", "f32")], engine_logits[("hf", "f32")], TOL["f32"],
                   "%s: engine logits GGUF f32 vs HF f32" % preset)
    refs_by_preset[preset], ids_by_preset[preset] = refs[("hf", "f32")], ids

# A real shape (qwen3-0.6b cut to 1 layer and a 512-token vocabulary: head_dim 128, rows of 1024 so
# K-quants apply) in f32 and Q4_K. Q4_K tolerance 5e-2: measured 2.1e-2, the engine quantizing
# activations to 8 bit over 256-value blocks (emulating 32-value blocks gave 1.4e-2); the Q4_K
# weights themselves are 0.26 away from the f32 ones, so a wrong dequantization cannot pass.
BIG = ("--preset", "qwen3-0.6b", "--format", "gguf", "--layers", 1, "--vocab", 512, "--seed", SEED)
for typ, tol in (("f32", TOL["f32"]), ("q4_k", 5e-2)):
    path = os.path.join(work, "qwen3-0.6b-1layer-%s.gguf" % typ)
    C.run("make-model", *BIG, "--type", typ, "-o", path)
    ref = R.load(path)
    ids = np.random.default_rng(8).integers(3, ref.config.vocab_size, N_TOKENS)
    c.check(ref.config.head_dim == 128 and ref.config.qk_norm, "qwen3-0.6b %s: head_dim %d, qk-norm %s"
            % (typ, ref.config.head_dim, ref.config.qk_norm))
    c.close_logits(C.logits(path, ids, all_positions=True), R.forward(ref, ids), tol,
                   "qwen3-0.6b (1 layer) gguf %s: logits at %d positions" % (typ, N_TOKENS))

# RoPE scaling: the HF f32 copies with a rope_scaling block added to config.json. The engine and
# the reference read the same config, so any difference is in how the scaling is computed.
# Short original contexts put the scaled bands inside a 20-token test.
SCALINGS = {
    "linear": {"rope_type": "linear", "factor": 2.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
}
for preset, kinds in (("tiny-llama", ("linear", "llama3", "yarn")), ("tiny-qwen3", ("yarn",))):
    src = os.path.join(work, "%s-f32-hf" % preset)
    for kind in kinds:
        dst = os.path.join(work, "%s-f32-hf-%s" % (preset, kind))
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        with open(os.path.join(dst, "config.json")) as f:
            cj = json.load(f)
        cj["rope_scaling"] = SCALINGS[kind]
        if kind == "yarn":
            # Some transformers versions replace yarn's factor by max_position_embeddings /
            # original_max_position_embeddings; keep the two consistent so every reading agrees.
            cj["max_position_embeddings"] = int(SCALINGS[kind]["factor"] * SCALINGS[kind]["original_max_position_embeddings"])
        with open(os.path.join(dst, "config.json"), "w") as f:
            json.dump(cj, f, indent=1)
        ref = R.load(dst)
        ids = ids_by_preset[preset]
        effect = C.rel_diff(R.forward(ref, ids), R.forward(refs_by_preset[preset], ids))
        c.check(effect > 10 * TOL["f32"], "%s %s: the scaling moves the reference logits by %.3g (> 10x tol, so "
                "ignoring it would fail)" % (preset, kind, effect))
        c.close_logits(C.logits(dst, ids, all_positions=True), R.forward(ref, ids), TOL["f32"],
                       "%s hf f32 + %s rope scaling: logits at %d positions" % (preset, kind, N_TOKENS))

# The same through GGUF metadata keys ({arch}.rope.scaling.*), on the f32 GGUF copies.
GGUF_SCALINGS = {
    "yarn": [("rope.scaling.type", "str", "yarn"), ("rope.scaling.factor", "f32", 4.0),
             ("rope.scaling.original_context_length", "u32", 32)],
    "llama3": [("rope.scaling.type", "str", "llama3"), ("rope.scaling.factor", "f32", 8.0),
               ("rope.scaling.low_freq_factor", "f32", 1.0), ("rope.scaling.high_freq_factor", "f32", 4.0),
               ("rope.scaling.original_context_length", "u32", 64)],
    "linear": [("rope.scaling.type", "str", "linear"), ("rope.scaling.factor", "f32", 2.0)],
}
for preset, kinds in (("tiny-llama", ("linear", "llama3", "yarn")), ("tiny-qwen3", ("yarn",))):
    src = os.path.join(work, "%s-f32-gguf.gguf" % preset)
    arch = refs_by_preset[preset].config.arch
    for kind in kinds:
        dst = os.path.join(work, "%s-f32-%s.gguf" % (preset, kind))
        gguf_with_metadata(src, dst, [(arch + "." + k, t, v) for k, t, v in GGUF_SCALINGS[kind]])
        ref = R.load(dst)
        ids = ids_by_preset[preset]
        effect = C.rel_diff(R.forward(ref, ids), R.forward(refs_by_preset[preset], ids))
        c.check(effect > 10 * TOL["f32"], "%s gguf %s: the scaling moves the reference logits by %.3g" % (preset, kind, effect))
        c.close_logits(C.logits(dst, ids, all_positions=True), R.forward(ref, ids), TOL["f32"],
                       "%s gguf f32 + %s rope scaling (metadata keys): logits at %d positions" % (preset, kind, N_TOKENS))

c.finish()
