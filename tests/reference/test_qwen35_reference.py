"""triattn vs the independent Qwen3.5 / Qwen3.6 numpy reference (qwen35_ref.py) on random-weight
models written by `triattn make-model --preset tiny-qwen35|tiny-qwen35moe`: 8 layers, 3 and 7 full
attention (gated output, q/k norms, RoPE on 8 of 32 head coordinates, 4 query / 2 KV heads), the
other six Gated DeltaNet (2 key heads, 4 value heads, dk = dv = 16, conv kernel 4); tiny-qwen35
has a dense SwiGLU (n_ff 128), tiny-qwen35moe an MoE in every layer (8 experts of 32, 2 used,
renormalised, plus a sigmoid-gated shared expert of 64).

Checks, per preset:
- the files' layout: layers 3 and 7 full attention, the others DeltaNet; 2 key / 4 value heads
  (so the HF grouped and the GGUF tiled value-head orders differ); rotary_dim 8 < head_dim 32;
- the reference itself: the DeltaNet in chunks of 16 (and 7: a partial last chunk) equals the
  per-token recurrence within 1e-10; the pieces matter to the logits: reading the value heads
  in the other order (HF and GGUF files), dropping the attention output gate, or rotating all of
  head_dim moves the reference logits by more than 10x the f32 tolerance; for the MoE preset the
  64 tokens choose at least half of the experts in each layer;
- the reference reads the GGUF f32 file (llama.cpp conventions: tiled value heads, 1 + w norms,
  ssm_a = -exp(A_log)) to the logits it reads from the HF f32 directory, within 1e-4;
- engine logits at all 64 positions for GGUF f32, f16 and q8_0 and HF f32; tolerance relative to
  the largest |logit| as in test_qwen3moe_reference.py: f32 1e-4, f16 1e-3, q8_0 3e-2 or, if
  larger, twice the change that rounding every matrix input to 8 bits (as the engine's Q8_0 dot
  products do; qwen35_ref.act_q8) makes to the reference's logits. Eight layers amplify that
  rounding: on the self-check's random checkpoints (below) it moves the logits by 19% (dense)
  and 33% (MoE: some routing flips), so a fixed 3e-2 would fail a correct engine there;
- GGUF f32 and HF f32 engine logits agree within 1e-4, and their greedy tokens (the decode path:
  one token a step through the recurrent state) agree with each other and with the reference's
  greedy continuation;
- `calibrate` then `generate --kv-policy triattention` (B 8, beta 4): the KV peak stays within
  B + beta per stream over 40 tokens (only the full-attention layers hold KV).

Self-check of the reference (a script outside the repository, on random tiny HF checkpoints of
both shapes): a float64 torch implementation written from transformers' modeling_qwen3_5.py /
modeling_qwen3_5_moe.py agrees to 2e-14, both with its recurrent and its chunked rule; a GGUF
converted as llama.cpp's converter does reads back to the HF logits within 3e-6 (f32 rounding).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen35_ref as Q  # noqa: E402
import ref_cli as C  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-3, "q8_0": 3e-2}
FILES = (("gguf", "f32"), ("gguf", "f16"), ("gguf", "q8_0"), ("hf", "f32"))
PRESETS = ("tiny-qwen35", "tiny-qwen35moe")
SEED = 3579
N_TOKENS = 64

C.binary()
work = C.work_dir("qwen35_reference")
c = C.Checks("qwen35 reference")


def make(preset, fmt, typ):
    path = os.path.join(work, "%s-%s-%s%s" % (preset, typ, fmt, ".gguf" if fmt == "gguf" else ""))
    C.run("make-model", "--preset", preset, "--format", fmt, "--type", typ, "-o", path, "--seed", SEED)
    return path


def effects(what, ref, base):
    """The reference with one piece changed or removed moves the logits by > 10x the f32 tolerance."""
    cfg = ref.cfg
    for key, value in (("v_order", "tiled" if cfg["v_order"] == "grouped" else "grouped"), ("out_gate", False),
                       ("rotary_dim", cfg["head_dim"])):
        saved, cfg[key] = cfg[key], value
        effect = C.rel_diff(Q.forward(ref, ids), base)
        cfg[key] = saved
        c.check(effect > 10 * TOL["f32"], "%s: %s = %s moves the reference logits by %.3g" % (what, key, value, effect))


ids = np.random.default_rng(13).integers(3, 512, N_TOKENS)
ids[0] = 1
for preset in PRESETS:
    paths, engine, refs = {}, {}, {}
    for fmt, typ in sorted(FILES, key=lambda f: f != ("hf", "f32")):
        what = "%s %s %s" % (preset, fmt, typ)
        path = paths[(fmt, typ)] = make(preset, fmt, typ)
        ref = Q.load(path)
        refs[(fmt, typ)] = full = Q.forward(ref, ids)
        cfg = ref.cfg
        if (fmt, typ) == ("hf", "f32"):  # first: the GGUF checks below compare with it
            hf_cfg = cfg
            full_layers = [i for i, f in enumerate(cfg["full"]) if f]
            c.check(full_layers == [3, 7] and cfg["n_layers"] == 8 and (cfg["n_k"], cfg["n_v"]) == (2, 4)
                    and cfg["rotary_dim"] < cfg["head_dim"] and cfg["moe"] == preset.endswith("moe"),
                    "%s: full attention layers %s of %d, %d key / %d value heads, rotary_dim %d of %d, MoE %s"
                    % (what, full_layers, cfg["n_layers"], cfg["n_k"], cfg["n_v"], cfg["rotary_dim"], cfg["head_dim"],
                       cfg["moe"]))
            for chunk in (16, 7):
                c.close_logits(Q.forward(ref, ids, chunk=chunk), full, 1e-10,
                               "%s: reference DeltaNet in chunks of %d vs per token" % (what, chunk))
            effects(what, ref, full)
            if cfg["moe"]:
                chosen = []
                Q.forward(ref, ids, chosen=chosen)
                c.check(all(2 * len(s) >= cfg["n_expert"] for s in chosen),
                        "%s: distinct experts the %d tokens chose in each layer: %s (at least half of %d)"
                        % (what, N_TOKENS, [len(s) for s in chosen], cfg["n_expert"]))
        if (fmt, typ) == ("gguf", "f32"):
            c.check(cfg["full"] == hf_cfg["full"] and cfg["rotary_dim"] == hf_cfg["rotary_dim"],
                    "%s: the GGUF keys give the HF layer types and rotary_dim %d" % (what, cfg["rotary_dim"]))
            c.close_logits(full, refs[("hf", "f32")], TOL["f32"],
                           "%s: reference on the GGUF (tiled value heads, 1 + w norms, ssm_a) vs on the HF directory"
                           % what)
            saved, cfg["v_order"] = cfg["v_order"], "grouped"
            effect = C.rel_diff(Q.forward(ref, ids), full)
            cfg["v_order"] = saved
            c.check(effect > 10 * TOL["f32"], "%s: reading the GGUF value heads in HF's grouped order moves the "
                    "reference logits by %.3g" % (what, effect))
        tol, note = TOL[typ], ""
        if typ == "q8_0":
            # 8 layers amplify the engine's 8-bit activation rounding: allow twice what the same
            # rounding does to the reference (Q.act_q8 on every matrix input), at least 3e-2.
            rounding = C.rel_diff(Q.forward(ref, ids, act_q8_inputs=True), full)
            tol, note = max(tol, 2 * rounding), " [8-bit activations move the reference by %.3g]" % rounding
        got = engine[(fmt, typ)] = C.logits(path, ids, all_positions=True)
        c.close_logits(got, full, tol, "%s: logits at %d positions%s" % (what, N_TOKENS, note))

    c.close_logits(engine[("gguf", "f32")], engine[("hf", "f32")], TOL["f32"],
                   "%s: engine logits GGUF f32 vs HF f32" % preset)

    # Greedy decode (one token per step after the prompt), both formats and the reference.
    gens = {fmt: C.generate(paths[(fmt, "f32")], "the cat sat on a mat", 12) for fmt in ("gguf", "hf")}
    c.same_ids(gens["gguf"]["tokens"], gens["hf"]["tokens"], "%s: greedy tokens GGUF vs HF" % preset)
    ref = Q.load(paths[("hf", "f32")])
    prompt_ids = gens["hf"]["prompt_token_ids"]
    c.same_ids(gens["hf"]["tokens"], Q.greedy(ref, prompt_ids, len(gens["hf"]["tokens"])),
               "%s: greedy tokens engine vs reference" % preset)

    stats = C.calibrate_stories(paths[("gguf", "f32")], os.path.join(work, preset + ".stats"))
    C.check_triattention_bound(c, preset, {fmt: paths[(fmt, "f32")] for fmt in ("gguf", "hf")}, stats)

c.finish()
