"""triattn vs the independent Gemma 2 / Gemma 3 numpy reference (gemma_ref.py) on random-weight
models written by `triattn make-model --preset tiny-gemma2|tiny-gemma3`.

tiny-gemma2: 2 layers (0 sliding, 1 full), window 4, query_pre_attn_scalar 32 (not head_dim 16),
attention soft-cap 0.1 and final soft-cap 0.2 (small, so they bite on random weights).
tiny-gemma3: 6 layers (five sliding, one full), window 4, q/k norms, local RoPE base 10000 and
global 1e6 with linear scaling x8 on the full layer only.

Checks, per preset:
- logits at all 20 positions (so every sliding layer sees more than its window) for GGUF and HF
  copies in f32 and f16; tolerance relative to the largest |logit| as in
  test_random_models_reference.py: f32 1e-4, f16 1e-3 (measured 1.2e-6 to 3.1e-6 for all
  eight). No Q8_0 comparison: these tiny random Gemmas are chaotic (post-norms rescale the
  small random block outputs to full size), so rounding the weights to Q8_0 alone moves the
  reference's logits by 10-13%, and the engine's 8-bit activations (measured 4-8% against the
  reference with them emulated, gemma_ref._act_q8) cannot be told apart from an error; Q8_0
  kernels are covered by the llama/qwen references;
- the reference with the window switched off differs by more than 10x the f32 tolerance, so
  the comparison exercises the sliding window (and, for Gemma 2, the soft-caps likewise);
- GGUF f32 and HF f32 engine logits agree within 1e-4, and their greedy tokens (decode path:
  one token a step, the sliding layers' caches trimmed to their window) agree with each other
  and with the reference's greedy continuation;
- `calibrate` then `generate --kv-policy triattention` (B 8, beta 4, per_layer_per_head): the
  KV peak stays within B + beta per stream while 36 + 40 tokens pass (sliding streams hold at
  most window - 1 + chunk by construction; model/test_arch.cpp checks them step by step).
  The default triattention mode per_head refuses mixed-layer models for now (its one keep set
  assumes every stream holds the same tokens; src/kv/policies is not layer-aware yet).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemma_ref as G  # noqa: E402
import ref_cli as C  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-3}
FILES = (("gguf", "f32"), ("gguf", "f16"), ("hf", "f32"), ("hf", "f16"))
SEED = 4321
N_TOKENS = 20

C.binary()
work = C.work_dir("gemma_reference")
c = C.Checks("gemma reference")


def make(preset, fmt, typ, *extra):
    path = os.path.join(work, "%s-%s-%s%s" % (preset, typ, fmt, ".gguf" if fmt == "gguf" else ""))
    C.run("make-model", "--preset", preset, "--format", fmt, "--type", typ, "-o", path, "--seed", SEED, *extra)
    return path


for preset in ("tiny-gemma2", "tiny-gemma3"):
    paths, engine = {}, {}
    ids = None
    for fmt, typ in FILES:
        what = "%s %s %s" % (preset, fmt, typ)
        path = paths[(fmt, typ)] = make(preset, fmt, typ)
        ref = G.load(path)
        if ids is None:
            ids = np.random.default_rng(11).integers(3, 512, N_TOKENS)
            ids[0] = 1
            cfg = ref.cfg
            n_sliding = sum(t == "sliding_attention" for t in cfg["layer_types"])
            c.check(0 < n_sliding < cfg["n_layers"] and cfg["window"] < N_TOKENS,
                    "%s: %d of %d layers sliding (window %d < %d tokens)" % (what, n_sliding, cfg["n_layers"], cfg["window"], N_TOKENS))
            full = G.forward(ref, ids)
            effect = C.rel_diff(G.forward(ref, ids, window=False), full)
            c.check(effect > 10 * TOL["f32"], "%s: the sliding window moves the reference logits by %.3g" % (what, effect))
            if cfg["version"] == 2:
                for key in ("attn_cap", "final_cap"):
                    saved = cfg[key]
                    cfg[key] = None
                    effect = C.rel_diff(G.forward(ref, ids), full)
                    cfg[key] = saved
                    c.check(effect > 10 * TOL["f32"], "%s: %s moves the reference logits by %.3g" % (what, key, effect))
        got = engine[(fmt, typ)] = C.logits(path, ids, all_positions=True)
        c.close_logits(got, G.forward(ref, ids), TOL[typ], "%s: logits at %d positions" % (what, N_TOKENS))

    c.close_logits(engine[("gguf", "f32")], engine[("hf", "f32")], TOL["f32"], "%s: engine logits GGUF f32 vs HF f32" % preset)

    # Greedy decode (one token per step after the prompt), both formats and the reference.
    gens = {fmt: C.generate(paths[(fmt, "f32")], "the cat sat on a mat", 12) for fmt in ("gguf", "hf")}
    c.same_ids(gens["gguf"]["tokens"], gens["hf"]["tokens"], "%s: greedy tokens GGUF vs HF" % preset)
    ref = G.load(paths[("hf", "f32")])
    prompt_ids = gens["hf"]["prompt_token_ids"]
    c.check(len(prompt_ids) > ref.cfg["window"], "%s: prompt of %d tokens, more than the window" % (preset, len(prompt_ids)))
    c.same_ids(gens["hf"]["tokens"], G.greedy(ref, prompt_ids, len(gens["hf"]["tokens"])), "%s: greedy tokens engine vs reference" % preset)

    # triattention's default per_head mode shares its keep set across the full layers only.
    stats = C.calibrate_stories(paths[("gguf", "f32")], os.path.join(work, preset + ".stats"))
    C.check_triattention_bound(c, preset, {fmt: paths[(fmt, "f32")] for fmt in ("gguf", "hf")}, stats)

c.finish()
