#!/usr/bin/python3
"""Why TriAttention loses the needle on bytelm-2k: which keys each score ranks high.

Runs the independent numpy model (tests/reference/ref_model.py, full attention, float64) over the
first N prompts of needle_eval.jsonl and, at p = the position where the question line starts
(the last pruning event before the question is seen), ranks every key outside the recent window
of each (layer, KV head) stream by:
  tri     the paper's score S_h (trig + norm term), z-scored per query head, max over the group
  trig    its trig term alone          norm   its norm term alone
  spread  sqrt(Σ_f max(0, a_f² − |q̄_f|²)|K_f|²) (kv/triattention_score.h, ScoreTerms::Spread)
  split   triattention-split's score: max-pool 7 of max over the group of max(z trig, z spread)
  snap    the attention of the last 32 queries (SnapKV's importance, before pooling)
and reports, per stream, the mean over prompts of the answer digits' lowest percentile (the
digit most likely to be evicted; 1 = ranked above every other key), and which share of the raw
score's spread over keys comes from each term. Per query head, it also gives the attention mass
the last prompt token (the query `passkey ID-k = `) puts on the six answer digits: the retrieval
heads. Last, for the retrieval stream, which distances a budget of 256 keeps (top 128 candidates
+ the 128-token window) under tri and split, and whether each keeps all six digits.

Usage: /usr/bin/python3 scripts/needle_diagnosis.py STATS [N]   (STATS from `triattn calibrate`;
docs/results.md used the calibration of scripts/results.sh and N = 12). Slow: numpy, float64.
"""

import json
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import ref_model as R  # noqa: E402
import triattention_ref as T  # noqa: E402

MODEL = os.path.join(ROOT, "..", "shared", "models", "bytelm-2k")
WINDOW, OBS, POOL, BUDGET = 128, 32, 7, 256


def z(v):
    return (v - v.mean()) / max(v.std(), 1e-6)


def max_pool(x, k):
    r = k // 2
    return np.array([x[max(0, i - r):i + r + 1].max() for i in range(len(x))])


def percentile(scores, idx):
    return min(float(np.mean(scores < scores[i])) for i in idx)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    stats = R.read_safetensors(sys.argv[1])[0]
    n_prompts = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    model = R.load(MODEL)
    cfg = model.config
    omega = R.rope_freqs(cfg)
    L, H, Hkv, d = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    G = H // Hkv
    with open(os.path.join(MODEL, "needle_eval.jsonl")) as f:
        items = [json.loads(line) for line in f][:n_prompts]
    attn_mass = np.zeros((L, H))
    pct = {}      # (l, kvh, score) -> [min digit percentile per prompt]
    share = {}    # (l, kvh) -> [(trig share, norm share)]
    kept = {}     # score -> [distance histogram], digits kept count
    for it in items:
        text = it["text"]
        ids = [256] + list(text.encode())  # byte tokens after <bos>
        n = len(ids)
        at = text.index("= ", it["needle_offset"]) + 2
        digits = [1 + j for j in range(at, at + 6)]
        p = n - len("passkey ID-%d = " % it["key"])
        cap = {}
        R.forward(model, ids, capture=cap)
        cand_end = p - WINDOW  # keys [0, cand_end) compete; the window is kept anyway
        for l in range(L):
            q = R.apply_rope(cap["q"][l], np.arange(n), cfg)
            k = R.apply_rope(cap["k"][l], np.arange(n), cfg)
            for kvh in range(Hkv):
                per = {s: [] for s in ("tri", "trig", "norm", "spread", "snap")}
                for g in range(G):
                    h = kvh * G + g
                    logit = q[n - 1, h] @ k[:, kvh].T / math.sqrt(d)
                    a = np.exp(logit - logit.max())
                    attn_mass[l, h] += (a / a.sum())[digits].sum() / len(items)
                    qm_re, qm_im, qa = stats["q_mean_real"][l, h], stats["q_mean_imag"][l, h], stats["q_abs_mean"][l, h]
                    kb = T.bands(cap["k"][l][:p, kvh])
                    tri = T.position_form_scores(qm_re, qm_im, qa, cap["k"][l][:p, kvh], np.arange(p), p, omega)
                    qbar = np.abs(qm_re + 1j * qm_im)
                    norm = ((qa - qbar)[None, :] * np.abs(kb)).sum(axis=1)
                    spread = np.sqrt((np.maximum(0, qa ** 2 - qbar ** 2)[None, :] * np.abs(kb) ** 2).sum(axis=1))
                    lq = q[p - OBS:p, h] @ k[:p, kvh].T / math.sqrt(d)
                    lq[np.arange(p)[None, :] > np.arange(p - OBS, p)[:, None]] = -np.inf
                    w = np.exp(lq - lq.max(axis=1, keepdims=True))
                    snap = (w / w.sum(axis=1, keepdims=True)).sum(axis=0)
                    trig = tri - norm
                    sd = max(tri[:cand_end].std(), 1e-12)
                    share.setdefault((l, kvh), []).append((trig[:cand_end].std() / sd, norm[:cand_end].std() / sd))
                    for name, v in (("tri", tri), ("trig", trig), ("norm", norm), ("spread", spread), ("snap", snap)):
                        per[name].append(z(v[:cand_end]))
                scores = {name: np.max(np.stack(v), axis=0) for name, v in per.items()}
                split = np.max(np.maximum(np.stack(per["trig"]), np.stack(per["spread"])), axis=0)
                scores["split"] = max_pool(split, POOL)
                competing = [i for i in digits if i < cand_end]  # digits inside the window are kept anyway
                for name, v in scores.items():
                    if competing:
                        pct.setdefault((l, kvh, name), []).append(percentile(v, competing))
                if (l, kvh) == (L - 1, 1) and cand_end > BUDGET and competing:
                    for name in ("tri", "split"):
                        top = np.argsort(-scores[name], kind="stable")[:BUDGET - WINDOW]
                        hist = np.histogram(p - top, bins=[0, 256, 512, 1024, 4096])[0]
                        e = kept.setdefault(name, [np.zeros(4), 0, 0])
                        e[0] += hist
                        e[1] += all(i in set(top) for i in digits if i < cand_end)
                        e[2] += 1
        print("prompt at line %d done (%d tokens, needle at byte %d)" % (items.index(it) + 1, n, it["needle_offset"]),
              file=sys.stderr)

    print("## Attention of the question's last token on the six answer digits (mean over %d prompts)\n" % len(items))
    print("| layer | " + " | ".join("q head %d" % h for h in range(H)) + " |")
    print("|---" * (H + 1) + "|")
    for l in range(L):
        print("| %d | " % l + " | ".join("%.3f" % attn_mass[l, h] for h in range(H)) + " |")
    names = ("tri", "trig", "norm", "spread", "snap", "split")
    print("\n## Lowest answer-digit percentile among the candidates, per stream (1 = ranked first)\n")
    print("| layer | KV head | " + " | ".join(names) + " | trig / norm share of S's spread |")
    print("|---" * (len(names) + 3) + "|")
    for l in range(L):
        for kvh in range(Hkv):
            sh = np.mean(np.array(share[(l, kvh)]), axis=0)
            print("| %d | %d | " % (l, kvh) + " | ".join("%.2f" % np.mean(pct[(l, kvh, s)]) for s in names) +
                  " | %.2f / %.2f |" % (sh[0], sh[1]))
    print("\n## Retrieval stream (layer %d, KV head 1) at B = %d: kept candidates by distance from p\n" % (L - 1, BUDGET))
    print("| score | 0-255 | 256-511 | 512-1023 | 1024+ | all six digits kept |")
    print("|---|---|---|---|---|---|")
    for name, (hist, ok, total) in kept.items():
        print("| %s | " % name + " | ".join("%.0f" % (x / total) for x in hist) + " | %d / %d |" % (ok, total))


if __name__ == "__main__":
    main()
