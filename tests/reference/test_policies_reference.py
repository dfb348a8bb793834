"""The baseline KV policies' numpy reference (policies_ref.py): its fixture and its definitions.

1. tests/data/policies_reference.json is exactly what the reference produces now, so the keep
   sets the GoogleTest (tests/kv/test_baseline_policies.cpp) compares the C++ policies with
   are the reference's, not a stale copy (regenerate with `policies_ref.py --write`).
2. The reference's definitions on cases small enough to check by hand: each policy keeps what
   its definition says, so that a wrong reference cannot make the comparison pass.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import policies_ref as P  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# 1. The committed fixture is the reference's output.
with open(P.FIXTURE) as f:
    committed = f.read()
check(committed == P.fixture_text(P.generate_cases()),
      "tests/data/policies_reference.json equals the reference's output (else run policies_ref.py --write)")


# 2. Hand-checked definitions. A tiny case: one layer, one KV head, d = 2, no window.
def tiny(policy, keys, queries, budget, **params):
    """The reference's keep set after feeding keys one at a time then one more step."""
    T = len(keys)
    prm = dict(budget=budget, divide_length=1, window=0, sink=0, protect_prompt=False, mode=None,
               obs_window=2, pool_kernel=1, rkv_lambda=0.1, rkv_threshold=0.5, seed=0)
    prm.update(params)
    case = {"name": "tiny", "policy": policy, "seed": 0, "shape": dict(n_layers=1, n_kv_heads=1, group=1, head_dim=2),
            "key_scale": 1.0, "query_scale": 1.0, "clusters": 0, "params": prm, "prompt_len": 0,
            "chunks": [1] * (T + 1)}
    sim = P.Sim(case)
    sim.K = np.zeros((T + 1, 1, 1, 2), np.float32)
    sim.Q = np.zeros((T + 1, 1, 1, 2), np.float32)
    sim.K[:T, 0, 0] = keys
    sim.Q[:T, 0, 0] = queries
    events = sim.run()
    return events[-1]["keep"][0] if events else None


keys = [[1, 0], [0, 1], [3, 0], [0, 0.5], [2, 2]]
# knorm: norms 1, 1, 3, 0.5, 2.83: budget 3 keeps tokens 3, 0 and 1
check(tiny("knorm", keys, [[0, 0]] * 5, 3, divide_length=2) == [0, 1, 3], "knorm keeps the smallest norms")
# streaming: sinks + most recent
check(tiny("streaming", keys, [[0, 0]] * 5, 3, sink=1, divide_length=2) == [0, 3, 4], "streaming keeps S sinks + recent")
# tova: the last query (token 4) points along x: keys 2 (x=3) then 4 (x=2) get the most weight
q_x = [[0, 0]] * 4 + [[4, 0]]
check(tiny("tova", keys, q_x, 2, divide_length=3) == [2, 4], "tova keeps what the current query attends to")
# h2o: every query points along y. Accumulated over the 5 steps, key 1 (y=1) gets ~2.63 and
# key 0 ~1.16 (all of token 0's own attention, then a little from every later step), more than
# key 4 (y=2, ~0.93 from the one step that saw it): H2O's known lean to old tokens.
q_y = [[0, 4]] * 5
check(tiny("h2o", keys, q_y, 2, divide_length=3) == [0, 1], "h2o keeps the heaviest accumulated attention")
# snapkv with pooling: kernel 3 spreads key 2's weight onto 1 and 3 (older first on ties)
check(tiny("snapkv", keys, q_x, 2, divide_length=3, obs_window=1, pool_kernel=3) == [1, 2],
      "snapkv max-pools over neighbouring candidates (ties keep the older)")
# max_pool itself
check(list(P.max_pool(np.array([1.0, 5, 2, 0, 0, 0, 3, 1]), 3)) == [5, 5, 5, 2, 0, 3, 3, 3], "max_pool centred, clipped")
# rkv redundancy: three copies of one direction and one orthogonal key. Each copy's last similar
# copy is zeroed, so a copy sees one other copy: mean 1/4; the orthogonal key sees none: 0.
red = P.redundancy(np.array([[1, 0], [2, 0], [1, 0], [0, 1]], np.float32), 0.5)
e = np.exp([0.25, 0.25, 0.25, 0.0])
check(np.allclose(red, e / e.sum()), "rkv redundancy: softmax of the mean similarity, the last similar key zeroed")
# rkv with lambda 0 ranks by redundancy alone: of three x-copies each still sees one other
# (mean 1/5), of the two y-copies each has its only similar key zeroed (mean 0): keeps 3 and 4.
red_keys = [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1]]
check(tiny("rkv", red_keys, [[0, 0]] * 5, 2, divide_length=3, rkv_lambda=0.0) == [3, 4],
      "rkv with lambda 0 keeps the least redundant keys")
# ... and with lambda 1 by importance alone, as snapkv averaged (same keep set as snapkv)
check(tiny("rkv", keys, q_x, 2, divide_length=3, rkv_lambda=1.0, obs_window=1, pool_kernel=3)
      == tiny("snapkv", keys, q_x, 2, divide_length=3, obs_window=1, pool_kernel=3), "rkv with lambda 1 is snapkv")
# random: reproducible from the seed, different seeds differ somewhere
r1 = [tiny("random", keys * 4, [[0, 0]] * 20, 6, divide_length=3, seed=s) for s in (1, 1, 2)]
check(r1[0] == r1[1] and r1[0] != r1[2], "random is reproducible from its seed")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all policy reference checks passed")
