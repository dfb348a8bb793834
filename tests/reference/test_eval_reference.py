"""`triattn eval ppl --policies full` against the numpy reference forward pass (ref_model.py).

The reference computes exp(mean NLL of token t+1 given tokens 0..t) over BOS + the text's
tokens (ids from `triattn tokenize`, cut to N), in float64 from the same weights. The engine
feeds the tokens one at a time through its KV cache (f32 here, so the only difference is f32
arithmetic): the perplexities agree to 1e-6 relative. With the default f16 cache, to 5e-4.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli as C  # noqa: E402
import ref_model as R  # noqa: E402

N = 96
TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "eval_stories.txt")

C.binary()
c = C.Checks("eval ppl reference")


def reference_ppl(model, ids):
    logits = R.forward(model, ids)  # [n, vocab], float64
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    nll = -logp[np.arange(len(ids) - 1), ids[1:]]
    return float(np.exp(nll.mean()))


def engine_ppl(path, kv_type):
    out = C.work_dir("eval_ref_" + os.path.basename(path.rstrip("/")) + "_" + kv_type)
    C.run("eval", "ppl", "-m", path, "--text", TEXT, "--policies", "full", "--max-tokens", N, "--kv-type", kv_type,
          "-q", "-o", out)
    with open(os.path.join(out, "results.json")) as f:
        j = json.load(f)
    full = [r for r in j["results"] if r["policy"] == "full"]
    if len(full) != 1:
        C.fail("results.json has %d 'full' entries" % len(full))
    return j, full[0]


for name, path in [("stories260K", os.path.join(C.shared_dir(), "models", "stories260k", "stories260K.bin")),
                   ("TinyStories-656K (HF)", os.path.join(C.shared_dir(), "models", "tinystories-656k"))]:
    if not os.path.exists(path):
        C.fail("missing model %s (../shared/models)" % path)
    ids = [int(t) for t in C.run("tokenize", "-m", path, "-f", TEXT, "--ids").split()][:N]
    c.check(len(ids) == N, "%s: the text gives at least %d tokens (got %d)" % (name, N, len(ids)))
    ref = reference_ppl(R.load(path), np.asarray(ids))
    j, got = engine_ppl(path, "f32")
    c.check(j["tokens"] == N and got["predictions"] == N - 1,
            "%s: %d tokens, %d predictions (got %s, %s)" % (name, N, N - 1, j["tokens"], got["predictions"]))
    rel = abs(got["ppl"] - ref) / ref
    c.check(rel <= 1e-6, "%s: eval ppl %.8f vs numpy %.8f (rel %.2g, tol 1e-6, f32 cache)" % (name, got["ppl"], ref, rel))
    _, got16 = engine_ppl(path, "f16")
    rel16 = abs(got16["ppl"] - ref) / ref
    c.check(rel16 <= 5e-4, "%s: eval ppl %.6f vs numpy %.6f (rel %.2g, tol 5e-4, f16 cache)" % (name, got16["ppl"], ref, rel16))

c.finish()
