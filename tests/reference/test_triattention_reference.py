"""TriAttention calibration and scoring: triattn vs the numpy reference on TinyStories-656K.

1. `triattn calibrate` on tests/data/calibration_stories.txt (about 900 tokens: two windows of
   the model's 512-token context) -> every statistic equals the reference's (numpy forward in
   float64, from the same token ids) within 1e-5 relative to the tensor's largest value. The
   engine runs in f32; 2 layers of f32 rounding leave ~1e-6.
2. `triattn scores` after a prompt -> every key score equals the paper's position form computed
   from the reference's PRE-RoPE keys and explicit positions, within 1e-4 relative to the largest
   |score| of that query head (engine: closed form on f32 post-RoPE cache keys).
3. The same through an official-format .pt stats file (written without torch by
   triattention_make_pt.py), so the .pt loader is checked end to end.
"""

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ref_cli as C  # noqa: E402
import ref_model as R  # noqa: E402
import triattention_ref as T  # noqa: E402

TOL_STATS = 1e-5
TOL_SCORES = 1e-4

C.binary()
TS = os.path.join(C.shared_dir(), "models", "tinystories-656k")
TEXT = os.path.normpath(os.path.join(HERE, "..", "data", "calibration_stories.txt"))
# About 170 tokens.
PROMPT = " ".join(["Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
                   "One day, she saw a big red ball under a tree. She ran to get it, but a dog took it first.",
                   "Lily was sad, so her mom gave her a cookie and a hug."] * 4)
work = C.work_dir("triattention")
c = C.Checks("TriAttention reference")
model = R.load(TS)
cfg = model.config

# ---- 1. calibration ----------------------------------------------------------------------------
stats_path = os.path.join(work, "tinystories.safetensors")
tokens_path = os.path.join(work, "calibration_tokens.txt")
C.run("calibrate", "-m", TS, "--input", TEXT, "-o", stats_path, "--dump-tokens", tokens_path)
ids = [int(x) for x in open(tokens_path).read().split()]
c.check(len(ids) > cfg.context_length, "calibration text spans more than one window (%d tokens, context %d)"
        % (len(ids), cfg.context_length))
c.check(ids[0] == cfg.bos_id, "calibration tokens start with BOS (%d)" % ids[0])

got, meta = R.read_safetensors(stats_path)
c.check(meta.get("format") == "triattn-stats", "metadata format %r" % meta.get("format"))
c.check(meta.get("token_count") == str(len(ids)), "metadata token_count %r == %d" % (meta.get("token_count"), len(ids)))
want_hash = "fnv1a64:%016x" % T.fnv1a64_tokens(ids)
c.check(meta.get("input_hash") == want_hash, "metadata input_hash %r == %s" % (meta.get("input_hash"), want_hash))
for key, val in (("n_layers", cfg.n_layers), ("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads),
                 ("head_dim", cfg.head_dim)):
    c.check(meta.get(key) == str(val), "metadata %s %r == %d" % (key, meta.get(key), val))
omega = R.rope_freqs(cfg)
c.check(np.allclose(got["rope_freqs"], omega, rtol=1e-6, atol=0), "rope_freqs tensor equals the model's ω_f")

ref = T.calibration_stats(model, ids, cfg.context_length)
for name, want in ref.items():
    g = got.get(name)
    if g is None or g.shape != want.shape:
        c.check(False, "%s: shape %s, reference %s" % (name, None if g is None else g.shape, want.shape))
        continue
    r = C.rel_diff(g, want)
    c.check(r <= TOL_STATS, "%s %s: rel diff %.3g (tol %.0e)" % (name, list(want.shape), r, TOL_STATS))
mrl = np.hypot(ref["q_mean_real"], ref["q_mean_imag"]) / ref["q_abs_mean"]
c.check(C.rel_diff(got["q_mrl"], mrl) <= TOL_STATS, "q_mrl = |q_mean| / q_abs_mean (R_f)")
c.check(bool((got["q_mrl"] <= 1 + 1e-6).all()), "R_f <= 1 everywhere")


# ---- 2. scores ---------------------------------------------------------------------------------
def check_scores(stats_file, stats, what):
    j = C.run_json("scores", "-m", TS, "--stats", stats_file, "-p", PROMPT, "--json")
    toks = j["tokens"]
    n, p = len(toks), j["p"]
    c.check(p == n, "%s: p %d == prompt length %d" % (what, p, n))
    cap = {}
    R.forward(model, toks, capture=cap)
    G = cfg.n_heads // cfg.n_kv_heads
    worst = 0.0
    for l in range(cfg.n_layers):
        for hq in range(cfg.n_heads):
            hk = hq // G
            pos = np.asarray(j["positions"][l][hk])
            if not np.array_equal(pos, np.arange(n)):
                c.check(False, "%s: layer %d KV head %d positions are 0..%d" % (what, l, hk, n - 1))
                continue
            want = T.position_form_scores(stats["q_mean_real"][l, hq], stats["q_mean_imag"][l, hq],
                                          stats["q_abs_mean"][l, hq], cap["k"][l][:, hk, :], pos, p, omega,
                                          fs=R.rope_attn_factor(cfg), max_log2=16)
            worst = max(worst, C.rel_diff(np.asarray(j["scores"][l][hq]), want))
    c.check(worst <= TOL_SCORES, "%s: %d layers x %d heads x %d keys, worst rel diff %.3g (tol %.0e)"
            % (what, cfg.n_layers, cfg.n_heads, n, worst, TOL_SCORES))


check_scores(stats_path, got, "scores (triattn stats)")

# ---- 3. official .pt stats -----------------------------------------------------------------------
pt_path = os.path.join(work, "official.pt")
subprocess.run([sys.executable, os.path.join(HERE, "triattention_make_pt.py"), pt_path, "--layers",
                str(cfg.n_layers), "--heads", str(cfg.n_heads), "--head-dim", str(cfg.head_dim)], check=True)
half = cfg.head_dim // 2
L_, H_, F_ = np.meshgrid(np.arange(cfg.n_layers), np.arange(cfg.n_heads), np.arange(half), indexing="ij")
f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)  # noqa: E731  (the file stores float32)
pt = {"q_mean_real": f32(L_ + 0.1 * H_ + 0.01 * F_), "q_mean_imag": f32(-(L_ + 0.1 * H_) - 0.02 * F_),
      "q_abs_mean": f32(2 + L_ + 0.1 * H_ + 0.01 * F_)}
pt["q_abs_mean"][1, 1] = 0.5 + np.arange(half) / 8.0  # the fixture's HalfStorage head
check_scores(pt_path, pt, "scores (official .pt stats)")

c.finish()
