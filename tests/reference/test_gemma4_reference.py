"""triattn vs the independent Gemma 4 numpy reference (gemma4_ref.py) on random-weight models
written by `triattn make-model --preset tiny-gemma4`: 8 layers, 5 and 7 full attention (the last
one full by the architecture's rule), the others sliding with a window of 8; 4 query heads; the
sliding layers 2 KV heads of 16, the full ones 1 KV head of 32 with V = K (no v_proj) and
proportional RoPE (4 of the 16 pairs rotate, frequencies over all 32 coordinates); q/k norms, the
weightless V norm, scores unscaled, a scalar per layer, norms x * w, final soft-cap 0.5 (small,
so it bites on random weights).

Checks:
- the files' layout as the reference reads it (HF: global_head_dim, num_global_key_value_heads,
  attention_k_eq_v, rope_parameters per layer type; GGUF: llama.cpp's per-layer head_count_kv,
  sliding_window_pattern, key_length_swa, rope_freqs 1 / 1e30, no attn_v on full layers);
- each piece matters: the reference with proportional RoPE replaced by ordinary partial RoPE, V
  taken after k_norm and RoPE, no V norm, no layer scalar, or no sliding window moves its logits
  by more than 10x the f32 tolerance;
- the reference reads the GGUF f32 file to the logits it reads from the HF f32 directory, within
  1e-4;
- engine logits at all 64 positions for GGUF f32 and f16 and HF f32; tolerance relative to the
  largest |logit|: f32 1e-4, f16 1e-3. No Q8_0 comparison, for the reason given in
  test_gemma_reference.py (the post-norms make tiny random Gemmas chaotic under 8-bit rounding);
- GGUF f32 and HF f32 engine logits agree within 1e-4; greedy decoding (prefill in chunks of 64,
  7 and 1, then one token a step, the sliding caches trimmed to their window) gives the
  reference's greedy continuation in both formats.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemma4_ref as G  # noqa: E402
import ref_cli as C  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-3}
FILES = (("hf", "f32"), ("gguf", "f32"), ("gguf", "f16"))
PRESET = "tiny-gemma4"
SEED = 2468
N_TOKENS = 64

C.binary()
work = C.work_dir("gemma4_reference")
c = C.Checks("gemma4 reference")


def make(fmt, typ):
    path = os.path.join(work, "%s-%s-%s%s" % (PRESET, typ, fmt, ".gguf" if fmt == "gguf" else ""))
    C.run("make-model", "--preset", PRESET, "--format", fmt, "--type", typ, "-o", path, "--seed", SEED)
    return path


def layout(what, m):
    cfg = m.cfg
    full = [i for i, t in enumerate(cfg["layer_types"]) if t == "full_attention"]
    no_v = [i for i, L in enumerate(m.layers) if "wv" not in L]
    c.check(full == [5, 7] and no_v == full and cfg["k_eq_v"] and (cfg["head_dim"], cfg["head_dim_full"]) == (16, 32)
            and (cfg["kv_heads"], cfg["kv_heads_full"]) == (2, 1) and cfg["window"] == 8
            and abs(cfg["partial_full"] - 0.25) < 1e-6 and all("layer_scalar" in L for L in m.layers),
            "%s: full layers %s (no v_proj: %s), head_dim %d/%d, KV heads %d/%d, window %d, rotated fraction %.3g"
            % (what, full, no_v, cfg["head_dim"], cfg["head_dim_full"], cfg["kv_heads"], cfg["kv_heads_full"],
               cfg["window"], cfg["partial_full"]))


def effects(what, m, base):
    """Each piece of the model, replaced by a plausible mistake, moves the logits by > 10x the f32 tolerance."""
    for name, kw in (("ordinary partial RoPE", {"proportional": False}), ("V after k_norm and RoPE", {"k_eq_v": "normed"}),
                     ("no V norm", {"v_norm": False}), ("no layer scalar", {"layer_scalar": False}),
                     ("no sliding window", {"window": False})):
        effect = C.rel_diff(G.forward(m, ids, **kw), base)
        c.check(effect > 10 * TOL["f32"], "%s: %s moves the reference logits by %.3g" % (what, name, effect))


ids = np.random.default_rng(17).integers(3, 512, N_TOKENS)
ids[0] = 1
paths, refs, engine = {}, {}, {}
for fmt, typ in FILES:
    what = "%s %s %s" % (PRESET, fmt, typ)
    path = paths[(fmt, typ)] = make(fmt, typ)
    m = G.load(path)
    refs[(fmt, typ)] = full = G.forward(m, ids)
    if typ == "f32":
        layout(what, m)
    if (fmt, typ) == ("hf", "f32"):
        effects(what, m, full)
    if (fmt, typ) == ("gguf", "f32"):
        c.close_logits(full, refs[("hf", "f32")], TOL["f32"],
                       "%s: reference on the GGUF (rope_freqs, per-layer KV heads) vs on the HF directory" % what)
    got = engine[(fmt, typ)] = C.logits(path, ids, all_positions=True)
    c.close_logits(got, full, TOL[typ], "%s: logits at %d positions" % (what, N_TOKENS))

c.close_logits(engine[("gguf", "f32")], engine[("hf", "f32")], TOL["f32"], "%s: engine logits GGUF f32 vs HF f32" % PRESET)

# Greedy decode after a prefill in chunks of several sizes, against the reference's continuation.
ref_tokens = None
for fmt in ("hf", "gguf"):
    for chunk in (64, 7, 1):
        g = C.run_json("generate", "-m", paths[(fmt, "f32")], "-p", "the cat sat on a mat and then the dog came in", "-n",
                       12, "--temp", 0, "--ignore-eos", "--prefill-chunk", chunk, "--json")
        if ref_tokens is None:
            ref_tokens = G.greedy(G.load(paths[("hf", "f32")]), g["prompt_token_ids"], len(g["tokens"]))
        c.same_ids(g["tokens"], ref_tokens, "%s %s: greedy tokens after a prefill in chunks of %d vs reference"
                   % (PRESET, fmt, chunk))

c.finish()
