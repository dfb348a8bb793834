"""TriAttention under partial RoPE: the numpy reference's fixture and its definition.

1. tests/data/triattention_partial_reference.json is what triattention_partial_ref.py produces
   now, so the GoogleTest that replays it (tests/kv/test_triattention_partial.cpp) compares the
   C++ scorer with the reference, not with a stale copy.
2. The reference's score against the logit itself: with the norm terms switched off, it equals
   the mean over the offsets D of the actual dot product of the RoPE'd mean query (rotated at
   p + δ, first r coordinates only) with the RoPE'd key; the norm terms on a zero mean query are
   Σ_f a_f|k_f| + a_p‖k_pass‖; and with r = d it is the full-RoPE position form.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import triattention_partial_ref as P  # noqa: E402
import triattention_ref as T  # noqa: E402
import ref_cli as C  # noqa: E402

c = C.Checks("partial-RoPE reference")
check = c.check

with open(P.FIXTURE) as f:
    check(f.read() == P.fixture_text(),
          "tests/data/triattention_partial_reference.json equals the reference's output "
          "(else run triattention_partial_ref.py --write)")

rng = np.random.default_rng(7)
d, r, n, p, fs = 24, 8, 6, 3000, 1.2
h = r // 2
omega = 10000.0 ** (-2.0 * np.arange(h) / r)
qre, qim, pm = rng.normal(size=h), rng.normal(size=h), rng.normal(size=d - r)
k_pre = rng.normal(size=(n, d))
pos = rng.integers(0, p, size=n)

# 2a. Mean query only: the reference equals the literal mean logit over D.
got = T.partial_rope_scores(qre, qim, np.hypot(qre, qim), pm, np.linalg.norm(pm), k_pre, pos, p, omega, r, fs)
qbar = np.concatenate([qre, qim, pm])  # halves layout within the rotated part, then the pass part
want = np.array([np.mean([fs * fs * T.rope_partial(qbar, p + 2 ** e, omega, r) @ T.rope_partial(k_pre[i], pos[i],
                                                                                                  omega, r)
                          for e in range(17)]) for i in range(n)])
check(np.allclose(got, want, rtol=1e-9, atol=1e-9), "mean-query score = mean over D of the actual partial-RoPE logit")

# 2b. Zero mean query: only the norm terms, by hand.
a, ap = rng.uniform(0, 1, size=h), 0.7
got = T.partial_rope_scores(np.zeros(h), np.zeros(h), a, np.zeros(d - r), ap, k_pre, pos, p, omega, r, fs)
want = fs * fs * ((a * np.hypot(k_pre[:, :h], k_pre[:, h:r])).sum(axis=1) + ap * np.linalg.norm(k_pre[:, r:], axis=1))
check(np.allclose(got, want, rtol=1e-12), "zero mean query: Σ_f a_f|k_f| + a_p‖k_pass‖")

# 2c. r = d: the full-RoPE position form.
hf = d // 2
om = 10000.0 ** (-2.0 * np.arange(hf) / d)
re_, im_, ab = rng.normal(size=hf), rng.normal(size=hf), rng.uniform(2, 3, size=hf)
got = T.partial_rope_scores(re_, im_, ab, np.zeros(0), 0.0, k_pre, pos, p, om, d, fs)
want = T.position_form_scores(re_, im_, ab, k_pre, pos, p, om, fs)
check(np.array_equal(got, want), "rotary_dim = head_dim: exactly the full-RoPE position form")

c.finish()
