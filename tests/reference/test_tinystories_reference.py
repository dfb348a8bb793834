"""triattn vs the numpy reference on the real TinyStories-656K model (F32 safetensors and Q8_0 GGUF).

Tolerances (relative = max |diff| / max |reference logit|):
- F32 safetensors: 1e-4. The engine computes in f32 and the reference in f64 from the same f32
  weights; f32 rounding over 2 layers of width 128-384 stays near 1e-6.
- Q8_0 GGUF: 3e-2, and greedy ids equal for at least the first 30 tokens. The reference uses the
  exactly dequantized Q8_0 weights, so the only legitimate difference is an engine that quantizes
  activations to 8 bit for its Q8_0 dot products (as llama.cpp does). Emulating that in the
  reference moved these logits by 1.1-1.5% relative and kept greedy equal for 40 tokens (the
  engine measured 1.1-1.4% and 47 equal tokens); 3e-2 is twice the effect, still far below what a
  wrong layout or a wrong scale produces (O(1)). The F32 engine measured ~2e-7.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli as C  # noqa: E402
import ref_expected as E  # noqa: E402
import ref_model as R  # noqa: E402

TOL_F32 = 1e-4
TOL_Q8_0 = 3e-2
Q8_0_MIN_EQUAL_IDS = 30

C.binary()  # fail clearly before any work if the engine is missing
TS = os.path.join(C.shared_dir(), "models", "tinystories-656k")
GGUF = os.path.join(TS, "TinyStories-656K-Q8_0.gguf")
c = C.Checks("TinyStories reference")
prompt = E.TINYSTORIES_PROMPT_IDS


def check_generate(model_path, ref_ids, what, at_least=None):
    j = C.generate(model_path, E.TINYSTORIES_PROMPT_TEXT, len(ref_ids))
    pt = j.get("prompt_tokens")
    if isinstance(pt, list):
        c.check(pt == prompt, "%s: prompt tokens %s == %s (BOS + 'Once upon a time,')" % (what, pt, prompt))
    else:
        c.check(pt == len(prompt), "%s: prompt_tokens %r == %d" % (what, pt, len(prompt)))
    c.same_ids(j.get("tokens", []), ref_ids, what + " greedy", at_least=at_least)
    return j


for label, path, tol, n_equal in (("HF F32", TS, TOL_F32, None), ("GGUF Q8_0", GGUF, TOL_Q8_0, Q8_0_MIN_EQUAL_IDS)):
    ref = R.load(path)
    ref_ids = R.greedy(ref, prompt, 60)
    if label == "HF F32":
        c.check(ref_ids == E.TINYSTORIES_GREEDY_60, "reference still gives the recorded 60 ids")
    j = check_generate(path, ref_ids, label, at_least=n_equal)
    if n_equal is None:
        text = j.get("text", "")
        c.check(E.TINYSTORIES_GREEDY_TEXT_START in text, "%s: text contains %r: got %r" % (label, E.TINYSTORIES_GREEDY_TEXT_START[:40], text[:120]))
    for seq_name, seq in (("prompt", prompt), ("prompt+60 generated", prompt + ref_ids)):
        c.close_logits(C.logits(path, seq), R.forward(ref, seq)[-1:], tol, "%s last-position logits, %s" % (label, seq_name))
    c.close_logits(C.logits(path, prompt, all_positions=True), R.forward(ref, prompt), tol, "%s logits --all, prompt" % label)

c.finish()
