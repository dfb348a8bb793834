"""Helpers for reference tests that drive the triattn binary (tests only).

Environment (set by CTest): TRIATTN_BINARY, TRIATTN_SHARED_DIR, TRIATTN_WORK_DIR.
Importing this module has no side effects.
"""

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def shared_dir():
    return os.environ.get("TRIATTN_SHARED_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared"))


def work_dir(name):
    base = os.environ.get("TRIATTN_WORK_DIR") or os.path.join("/tmp", "triattn_pywork_%d" % os.getuid())
    d = os.path.join(base, name)
    os.makedirs(d, exist_ok=True)
    return d


def binary():
    """Path of the triattn executable; exits with a failure (never a pass) if it is missing."""
    b = os.environ.get("TRIATTN_BINARY")
    if not b:
        fail("TRIATTN_BINARY is not set (run through ctest, or export the path of the triattn executable)")
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        fail("triattn binary not found or not executable: %s (build the 'triattn' target first)" % b)
    return b


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(*args, timeout=600):
    """Run `triattn args...`; returns stdout. A non-zero exit is a test failure with stderr shown."""
    cmd = [binary()] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        fail("command failed (exit %d): %s\nstderr:\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode(errors="replace")[-4000:]))
    return p.stdout.decode("utf-8", errors="replace")


def run_json(*args):
    out = run(*args)
    try:
        return json.loads(out)
    except ValueError as e:
        fail("output of `triattn %s` is not one JSON object (%s); first 500 chars:\n%s" % (" ".join(map(str, args)), e, out[:500]))


def generate(model, prompt, n):
    return run_json("generate", "-m", model, "-p", prompt, "-n", n, "--temp", 0, "--json")


def calibrate_stories(model, out):
    """`triattn calibrate` on 600 tokens of the committed calibration text; returns out."""
    run("calibrate", "-m", model, "--input", os.path.join(HERE, "..", "data", "calibration_stories.txt"),
        "--max-tokens", 600, "-o", out)
    return out


def check_triattention_bound(c, label, models, stats):
    """40 greedy tokens under triattention (default mode; B 8, beta 4, W 4) from each of
    `models` ({name: path}): it prunes, and no (layer, KV head) ever holds more than B + beta."""
    for name, model in models.items():
        g = run_json("generate", "-m", model, "-p", "the cat sat on the mat", "-n", 40, "--temp", 0,
                     "--ignore-eos", "--kv-policy", "triattention", "--stats", stats, "--kv-budget", 8,
                     "--divide-length", 4, "--window", 4, "--json")
        st = g["stats"]
        c.check(len(g["tokens"]) == 40 and st["prune_events"] > 0 and st["kv_peak_tokens"] <= 12,
                "%s %s: triattention B 8 + beta 4: %d tokens, %d prune events, KV peak %d tokens/stream (<= 12)"
                % (label, name, len(g["tokens"]), st["prune_events"], st["kv_peak_tokens"]))


def logits(model, tokens, all_positions=False):
    """np.array [n_positions, vocab] (one row unless all_positions)."""
    args = ["logits", "-m", model, "--tokens", ",".join(str(int(t)) for t in tokens)]
    if all_positions:
        args.append("--all")
    j = run_json(*args)
    if "logits" not in j:
        fail("`triattn logits` JSON has no 'logits' key: keys %s" % sorted(j))
    arr = np.asarray(j["logits"], dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    return arr


def rel_diff(a, b):
    """max |a - b| / max |b|: the error relative to the size of the reference logits."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


class Checks:
    """Collects failures so that one run reports every mismatch, then exits non-zero."""

    def __init__(self, name):
        self.name, self.failures, self.passed = name, [], 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
            print("ok   " + what)
        else:
            self.failures.append(what)
            print("FAIL " + what)

    def close_logits(self, got, ref, tol, what):
        if got.shape != ref.shape:
            self.check(False, "%s: logits shape %s, reference %s" % (what, got.shape, ref.shape))
            return
        r = rel_diff(got, ref)
        worst = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
        self.check(r <= tol, "%s: rel diff %.3g (tol %.3g; worst at position %d, token %d: got %.6g, ref %.6g)"
                   % (what, r, tol, worst[0], worst[-1], got[worst], ref[worst]))

    def same_ids(self, got, ref, what, at_least=None):
        got, ref = list(got), list(ref)
        n = len(ref) if at_least is None else at_least
        first = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
        ok = first >= n and (at_least is not None or len(got) == len(ref))
        self.check(ok, "%s: %d/%d ids agree before the first difference (need %d)%s"
                   % (what, first, len(ref), n, "" if ok else "\n     got %s\n     ref %s" % (got, ref)))

    def finish(self):
        print("%s: %d checks passed, %d failed" % (self.name, self.passed, len(self.failures)))
        if self.failures:
            print("FAILURES:\n  " + "\n  ".join(f.split("\n")[0] for f in self.failures), file=sys.stderr)
            sys.exit(1)
