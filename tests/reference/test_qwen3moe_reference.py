"""triattn vs the independent Qwen3-MoE numpy reference (qwen3moe_ref.py) on random-weight models
written by `triattn make-model --preset tiny-qwen3moe`: 3 layers (0 and 2 MoE, 1 dense through
config.json mlp_only_layers / the absence of a router in the GGUF), 8 experts of 32, 2 used per
token, top-k weights renormalised (norm_topk_prob), Qwen3 q/k norms.

Checks:
- logits at all 20 positions for GGUF f32, f16 and q8_0 and HF f32 and f16; tolerance relative to
  the largest |logit| as in test_random_models_reference.py: f32 1e-4, f16 1e-3, q8_0 3e-2 (the
  engine rounds activations to 8 bits for Q8_0 dot products; the q8_0 file also runs the experts
  through the load-time Q8_0x4 repacking, one expert's slice at a time). Measured: f32 2.3e-7,
  f16 2.1e-7 (GGUF) and 1.8e-7 (HF), q8_0 1.1e-2;
- the mixture matters to those logits: the reference with one expert per token, or without
  renormalisation, differs by more than 10x the f32 tolerance; the 20 tokens choose at least
  half of the experts in each MoE layer (measured 8 and 5 of 8), so prefill runs several
  per-expert products, most over more than one token;
- norm_topk_prob false (config.json edited): engine vs reference again;
- GGUF f32 and HF f32 engine logits agree within 1e-4, and their greedy tokens (the decode path:
  one token a step, only the selected experts read) agree with each other and with the
  reference's greedy continuation;
- `calibrate` then `generate --kv-policy triattention` (B 8, beta 4, the default per_head mode:
  every layer is full attention): the KV peak stays within B + beta per stream over 40 tokens.
"""

import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen3moe_ref as M  # noqa: E402
import ref_cli as C  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-3, "q8_0": 3e-2}
FILES = (("gguf", "f32"), ("gguf", "f16"), ("gguf", "q8_0"), ("hf", "f32"), ("hf", "f16"))
PRESET = "tiny-qwen3moe"
SEED = 2468
N_TOKENS = 20

C.binary()
work = C.work_dir("qwen3moe_reference")
c = C.Checks("qwen3moe reference")


def make(fmt, typ):
    path = os.path.join(work, "%s-%s-%s%s" % (PRESET, typ, fmt, ".gguf" if fmt == "gguf" else ""))
    C.run("make-model", "--preset", PRESET, "--format", fmt, "--type", typ, "-o", path, "--seed", SEED)
    return path


ids = np.random.default_rng(7).integers(3, 512, N_TOKENS)
ids[0] = 1
paths, engine = {}, {}
for fmt, typ in FILES:
    what = "%s %s %s" % (PRESET, fmt, typ)
    path = paths[(fmt, typ)] = make(fmt, typ)
    ref = M.load(path)
    if (fmt, typ) == ("hf", "f32"):
        cfg = ref.cfg
        moe = [i for i, L in enumerate(ref.layers) if "router" in L]
        c.check(moe == [0, 2] and cfg["k"] == 2 and cfg["n_expert"] == 8 and cfg["norm_topk"],
                "%s: MoE layers %s of %d, %d of %d experts used, renormalised %s"
                % (what, moe, cfg["n_layers"], cfg["k"], cfg["n_expert"], cfg["norm_topk"]))
        full = M.forward(ref, ids)
        for key, value in (("k", 1), ("norm_topk", False)):
            saved, cfg[key] = cfg[key], value
            effect = C.rel_diff(M.forward(ref, ids), full)
            cfg[key] = saved
            c.check(effect > 10 * TOL["f32"], "%s: %s = %s moves the reference logits by %.3g" % (what, key, value, effect))
        chosen = []
        M.forward(ref, ids, chosen=chosen)
        c.check(all(2 * len(s) >= cfg["n_expert"] for s in chosen),
                "%s: distinct experts the %d tokens chose in each MoE layer: %s (at least half of %d)"
                % (what, N_TOKENS, [len(s) for s in chosen], cfg["n_expert"]))
    got = engine[(fmt, typ)] = C.logits(path, ids, all_positions=True)
    c.close_logits(got, M.forward(ref, ids), TOL[typ], "%s: logits at %d positions" % (what, N_TOKENS))

c.close_logits(engine[("gguf", "f32")], engine[("hf", "f32")], TOL["f32"], "%s: engine logits GGUF f32 vs HF f32" % PRESET)

# norm_topk_prob false: the raw softmax probabilities weight the experts.
raw = os.path.join(work, "%s-f32-hf-no-norm" % PRESET)
shutil.rmtree(raw, ignore_errors=True)
shutil.copytree(paths[("hf", "f32")], raw)
with open(os.path.join(raw, "config.json")) as f:
    cj = json.load(f)
cj["norm_topk_prob"] = False
with open(os.path.join(raw, "config.json"), "w") as f:
    json.dump(cj, f, indent=1)
c.close_logits(C.logits(raw, ids, all_positions=True), M.forward(M.load(raw), ids), TOL["f32"],
               "%s hf f32, norm_topk_prob false: logits at %d positions" % (PRESET, N_TOKENS))

# Greedy decode (one token per step after the prompt), both formats and the reference.
gens = {fmt: C.generate(paths[(fmt, "f32")], "the cat sat on a mat", 12) for fmt in ("gguf", "hf")}
c.same_ids(gens["gguf"]["tokens"], gens["hf"]["tokens"], "%s: greedy tokens GGUF vs HF" % PRESET)
ref = M.load(paths[("hf", "f32")])
prompt_ids = gens["hf"]["prompt_token_ids"]
c.same_ids(gens["hf"]["tokens"], M.greedy(ref, prompt_ids, len(gens["hf"]["tokens"])),
           "%s: greedy tokens engine vs reference" % PRESET)

stats = C.calibrate_stories(paths[("gguf", "f32")], os.path.join(work, PRESET + ".stats"))
C.check_triattention_bound(c, PRESET, {fmt: paths[(fmt, "f32")] for fmt in ("gguf", "hf")}, stats)

c.finish()
