"""`triattn analyze` vs the numpy reference (tests/reference/analyze_ref.py).

1. TinyStories-656K (F32 safetensors), statistics from the input itself, 600 tokens of
   tests/data/calibration_stories.txt: two windows of the 512-token context, default heads.
2. stories260K (llama2.c), statistics from a stats file calibrated by `triattn calibrate` on
   a longer part of the text, 300 tokens analysed, --heads chosen by hand.
3. bytelm-2k (Qwen3-style: q_norm/k_norm, head_dim 64, GQA 2), 300 tokens of its validation
   text, statistics from the input.
Every figure in analysis.json must equal the reference within 1e-4 relative (per-band and
per-distance arrays: relative to the array's largest magnitude; scalars: to themselves), r̄
within 1e-3 absolute. The engine computes the vectors in f32, the reference in f64.
The histogram of r̄ must be that of the reported r̄ values (bins over [-1, 1]).
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze_ref as A  # noqa: E402
import ref_cli as C  # noqa: E402
import ref_model as R  # noqa: E402

TOL = 1e-4
TOL_RBAR = 1e-3

C.binary()
MODELS = os.path.join(C.shared_dir(), "models")
TS = os.path.join(MODELS, "tinystories-656k")
S260 = os.path.join(MODELS, "stories260k", "stories260K.bin")
BYTELM = os.path.join(MODELS, "bytelm-2k")
TEXT = os.path.normpath(os.path.join(HERE, "..", "data", "calibration_stories.txt"))
for p in (TS, S260, BYTELM, TEXT):
    if not os.path.exists(p):
        C.fail("missing test data: %s" % p)
work = C.work_dir("analyze")
c = C.Checks("analyze reference")


def nums(v):
    return np.array([np.nan if x is None else x for x in v], np.float64)


def close_scalar(got, want, what, tol=TOL):
    got = np.nan if got is None else float(got)
    ok = (np.isnan(got) and np.isnan(want)) or abs(got - want) <= tol * max(abs(want), 1e-12)
    c.check(ok, "%s: %.8g vs reference %.8g" % (what, got, want))


def close_array(got, want, what, tol=TOL):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        c.check(False, "%s: shape %s, reference %s" % (what, got.shape, want.shape))
        return 0.0
    scale = max(np.nanmax(np.abs(want)) if want.size else 0.0, 1e-30)
    same_nan = np.array_equal(np.isnan(got), np.isnan(want))
    err = float(np.nanmax(np.abs(got - want)) / scale) if want.size and same_nan else (0.0 if same_nan else np.inf)
    return err


class Worst:
    """The largest relative error over many arrays of one kind, reported once."""

    def __init__(self):
        self.err, self.where = 0.0, ""

    def add(self, err, where):
        if err > self.err:
            self.err, self.where = err, where

    def report(self, what, tol):
        c.check(self.err <= tol, "%s: worst rel diff %.3g (tol %.0e)%s" % (what, self.err, tol, self.where and " at " + self.where))


def compare(j, ref, what):
    s, rs = j["summary"], ref["summary"]
    close_array(nums(j["rope_freqs"]), ref["omega"], what + " rope_freqs")
    for side in ("query", "key"):
        for key in ("band_mean_R", "weighted_R", "top_band_R", "fraction_weighted_R_above"):
            close_scalar(s[side][key], rs[side][key], "%s summary.%s.%s" % (what, side, key))
    c.check(abs(s["rbar_mean"] - rs["rbar_mean"]) <= TOL_RBAR, "%s summary.rbar_mean %.6f vs reference %.6f (tol %.0e abs)"
            % (what, s["rbar_mean"], rs["rbar_mean"], TOL_RBAR))
    c.check(s["rbar_heads"] == rs["rbar_heads"], "%s summary.rbar_heads %d == %d" % (what, s["rbar_heads"], rs["rbar_heads"]))
    for key in ("mean_top1_share", "mean_topk_share", "mean_norm_term_share"):
        close_scalar(s[key], rs[key], "%s summary.%s" % (what, key))
    hist = s["rbar_histogram"]
    rb = nums([h["rbar"] for h in j["query_heads"]])
    want_counts, _ = np.histogram(rb[np.isfinite(rb)], bins=len(hist["counts"]), range=(hist["lo"], hist["hi"]))
    c.check(hist["lo"] == -1 and hist["hi"] == 1 and list(want_counts) == hist["counts"],
            "%s r̄ histogram %s is that of the reported r̄ values %s" % (what, hist["counts"], list(want_counts)))

    worst_R, worst_scalar, worst_rbar = Worst(), Worst(), 0.0
    c.check(len(j["query_heads"]) == len(ref["query_heads"]) and len(j["key_heads"]) == len(ref["key_heads"]),
            "%s: %d query heads, %d KV heads" % (what, len(j["query_heads"]), len(j["key_heads"])))
    for kind in ("query_heads", "key_heads"):
        for g, r in zip(j[kind], ref[kind]):
            where = "%s L%dH%d" % (kind, r["layer"], r["head"])
            if (g["layer"], g["head"]) != (r["layer"], r["head"]):
                c.check(False, "%s: head order %s vs %s" % (what, (g["layer"], g["head"]), (r["layer"], r["head"])))
            worst_R.add(close_array(nums(g["R"]), r["R"], where), where + " R_f")
            for key in ("band_mean_R", "weighted_R", "top_band_R"):
                worst_scalar.add(abs(g[key] - r[key]) / max(abs(r[key]), 1e-12), where + " " + key)
            if g["top_band"] != r["top_band"]:
                c.check(False, "%s %s top_band %d vs reference %d" % (what, where, g["top_band"], r["top_band"]))
            if kind == "key_heads":
                continue
            worst_R.add(close_array(nums(g["dominant_contribution"]), r["contribution"], where), where + " contribution")
            # Ranks must agree wherever the reference's contributions are told apart by more than the tolerance.
            rc = r["contribution"]
            for i in range(len(rc)):
                distinct = all(abs(rc[i] - rc[m]) > TOL * rc[0] for m in range(len(rc)) if m != i)
                if distinct and g["dominant_bands"][i] != r["ranked"][i]:
                    c.check(False, "%s %s dominant band #%d: %d vs reference %d" % (what, where, i, g["dominant_bands"][i], r["ranked"][i]))
            for key in ("top1_share", "topk_share", "norm_term_share"):
                worst_scalar.add(abs(g[key] - r[key]) / max(abs(r[key]), 1e-12), where + " " + key)
            if g["rbar"] is None or np.isnan(r["rbar"]):
                c.check(g["rbar"] is None and np.isnan(r["rbar"]), "%s %s r̄ defined on both sides" % (what, where))
            else:
                worst_rbar = max(worst_rbar, abs(g["rbar"] - r["rbar"]))
            if g["rbar_positions"] != r["rbar_positions"]:
                c.check(False, "%s %s r̄ over %d positions, reference %d" % (what, where, g["rbar_positions"], r["rbar_positions"]))
    worst_R.report(what + " per-band R_f and dominant contributions", TOL)
    worst_scalar.report(what + " per-head summaries and shares", TOL)
    c.check(worst_rbar <= TOL_RBAR, "%s per-head r̄: worst abs diff %.3g (tol %.0e)" % (what, worst_rbar, TOL_RBAR))
    for g, r in zip(j["layers"], ref["layers"]):
        for key in ("query_weighted_R", "key_weighted_R", "norm_term_share"):
            close_scalar(g[key], r[key], "%s layer %d %s" % (what, r["layer"], key))
        c.check(abs(g["rbar"] - r["rbar"]) <= TOL_RBAR, "%s layer %d r̄ %.6f vs %.6f" % (what, r["layer"], g["rbar"], r["rbar"]))

    got_heads = [(h["layer"], h["head"]) for h in j["chosen_heads"]]
    want_heads = [(h["layer"], h["head"]) for h in ref["chosen_heads"]]
    c.check(got_heads == want_heads, "%s chosen heads %s == %s" % (what, got_heads, want_heads))
    worst_curve, worst_scatter = Worst(), Worst()
    for g, r in zip(j["chosen_heads"], ref["chosen_heads"]):
        where = "L%dH%d" % (r["layer"], r["head"])
        gc, rc = g["curve"], r["curve"]
        c.check(list(gc["delta"]) == list(rc["delta"]) and list(gc["pairs"]) == list(rc["pairs"]),
                "%s %s curve at Δ = 1..%d with the reference's pair counts" % (what, where, rc["delta"][-1]))
        worst_curve.add(close_array(nums(gc["actual_mean"]), rc["actual_mean"], where), where + " actual")
        worst_curve.add(close_array(nums(gc["predicted"]), rc["predicted"], where), where + " predicted")
        gs, rsc = g["scatter"], r["scatter"]
        c.check(gs["band"] == rsc["band"] and list(gs["positions"]) == list(rsc["positions"]),
                "%s %s scatter of band %d (reference %d), %d points" % (what, where, gs["band"], rsc["band"], len(gs["positions"])))
        for key in ("q_raw", "k_raw", "q_rope", "k_rope"):
            pts = np.asarray(gs[key], np.float64)
            want = np.stack([rsc[key].real, rsc[key].imag], axis=1)
            worst_scatter.add(close_array(pts, want, where), where + " " + key)
    worst_curve.report(what + " distance curves (actual mean and predicted)", TOL)
    worst_scatter.report(what + " band scatters (raw and after RoPE)", TOL)


def run_analyze(model_path, out, *extra, text=TEXT):
    C.run("analyze", "-m", model_path, "--input", text, "-o", out, "-t", 2, *extra)
    with open(os.path.join(out, "analysis.json")) as f:
        j = json.load(f)
    for fig in j["figures"]:
        p = os.path.join(out, fig["file"])
        c.check(os.path.isfile(p) and os.path.getsize(p) > 0, "figure %s written" % fig["file"])
    c.check(os.path.getsize(os.path.join(out, "index.html")) > 0, "index.html written")
    return j


# ---- 1. TinyStories-656K, statistics from the input ----------------------------------------------
out = os.path.join(work, "tinystories")
j = run_analyze(TS, out, "--max-tokens", 600)
model = R.load(TS)
ids = j["input"]["tokens"]
c.check(len(ids) == 600 and ids[0] == model.config.bos_id, "600 tokens starting with BOS (%d tokens)" % len(ids))
c.check(j["input"]["windows"] == 2 and j["stats"]["source"] == "input", "two windows, statistics from the input")
ref = A.analyze(model, ids, model.config.context_length)
compare(j, ref, "TinyStories")

# ---- 2. stories260K, statistics from a stats file, --heads -----------------------------------------
stats_path = os.path.join(work, "stories260k.safetensors")
C.run("calibrate", "-m", S260, "--input", TEXT, "--max-tokens", 800, "-o", stats_path)
out = os.path.join(work, "stories260k")
heads = [(4, 7), (0, 1), (2, 2)]
j = run_analyze(S260, out, "--max-tokens", 300, "--stats", stats_path, "--heads", ",".join("%d:%d" % h for h in heads),
                "--scatter-points", 100)
model = R.load(S260)
ids = j["input"]["tokens"]
c.check(len(ids) == 300 and j["stats"]["source"] == stats_path and j["stats"]["token_count"] == 800,
        "300 tokens analysed, statistics from the 800-token stats file")
tensors, _ = R.read_safetensors(stats_path)
ref = A.analyze(model, ids, model.config.context_length, stats=A.file_stats(tensors), heads=heads, scatter_points=100)
compare(j, ref, "stories260K")

# ---- 3. bytelm-2k (qwen3 shape), statistics from the input -----------------------------------------
out = os.path.join(work, "bytelm")
j = run_analyze(BYTELM, out, "--max-tokens", 300, text=os.path.join(BYTELM, "valid_sample.txt"))
model = R.load(BYTELM)
ref = A.analyze(model, j["input"]["tokens"], model.config.context_length)
compare(j, ref, "bytelm-2k")

c.finish()
