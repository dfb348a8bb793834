"""triattn vs the numpy reference on the llama2.c checkpoint stories260K.bin (fp32, interleaved RoPE).

- Logits within 1e-4 relative (max |diff| / max |reference logit|): both sides use the same fp32
  weights; the engine computes in f32, the reference in f64.
- Greedy decoding from BOS (empty prompt) gives the reference's 100 ids exactly.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli as C  # noqa: E402
import ref_expected as E  # noqa: E402
import ref_model as R  # noqa: E402

TOL = 1e-4

C.binary()
BIN = os.path.join(C.shared_dir(), "models", "stories260k", "stories260K.bin")
c = C.Checks("stories260K reference")
ref = R.load(BIN)
ref_ids = R.greedy(ref, [1], 100)
c.check(ref_ids == E.STORIES260K_GREEDY_100, "reference still gives the recorded 100 ids")

j = C.generate(BIN, "", 100)
pt = j.get("prompt_tokens")
c.check(pt == [1] or pt == 1, "prompt_tokens for an empty prompt is just BOS: %r" % (pt,))
c.same_ids(j.get("tokens", []), ref_ids, "greedy 100 from BOS")
text = j.get("text", "")
c.check(E.STORIES260K_GREEDY_TEXT_START in text, "text contains %r: got %r" % (E.STORIES260K_GREEDY_TEXT_START[:40], text[:120]))

c.close_logits(C.logits(BIN, [1]), R.forward(ref, [1])[-1:], TOL, "last-position logits, BOS")
seq = [1] + ref_ids
c.close_logits(C.logits(BIN, seq), R.forward(ref, seq)[-1:], TOL, "last-position logits, BOS + 100 generated")
c.close_logits(C.logits(BIN, seq[:40], all_positions=True), R.forward(ref, seq[:40]), TOL, "logits --all, first 40 positions")

c.finish()
