"""Independent numpy reference of `triattn analyze` (tests only, never the product).

Written from the figures' definitions (docs/design.md, The algorithm), sharing no code with
the C++ engine (which works on post-RoPE vectors for the curves and loops position by position
for r̄; this works per distance on pre-RoPE bands, vectorised over positions):

    stats = input_stats(model, ids, window)          # E q_f, E|q_f|, E k_f, E|k_f| (complex / float64)
    a = analyze(model, ids, window, stats, heads, scatter_points)

a mirrors analysis.json: per query head R_f, band-mean / weighted / top-band R, dominant bands,
norm-term share, r̄; per KV head the R figures; model summaries; for the chosen heads the
distance curve and the dominant band's scatter. float64 throughout.
Importing this module has no side effects.
"""

import numpy as np

import ref_model as R

THRESHOLD = 0.95      # a head is concentrated when its weighted R exceeds this (the paper's)
TOP_K = 3             # dominant-band share of the top 3 bands
MIN_POINTS = 3        # r̄: at least Δ = 1, 2, 4
CONSTANT_TOL = 1e-9   # a vector with max - min <= CONSTANT_TOL * max|v| is constant (no correlation)


def to_bands(x):
    """[..., d] halves layout -> complex [..., d/2]."""
    half = x.shape[-1] // 2
    return x[..., :half] + 1j * x[..., half:]


def capture(model, ids, window):
    """Pre-RoPE bands of every token: (q [L][T, H, F], k [L][T, KV, F], windows [(start, length)])."""
    L = model.config.n_layers
    qs, ks, wins = [[] for _ in range(L)], [[] for _ in range(L)], []
    for start in range(0, len(ids), window):
        part = ids[start:start + window]
        cap = {}
        R.forward(model, part, capture=cap)
        wins.append((start, len(part)))
        for l in range(L):
            qs[l].append(to_bands(cap["q"][l]))
            ks[l].append(to_bands(cap["k"][l]))
    return [np.concatenate(x) for x in qs], [np.concatenate(x) for x in ks], wins


def input_stats(q, k):
    """Means over every captured token: dict of [L, heads, F] arrays (centres complex)."""
    return {"q_centre": np.stack([x.mean(axis=0) for x in q]), "q_norm": np.stack([np.abs(x).mean(axis=0) for x in q]),
            "k_centre": np.stack([x.mean(axis=0) for x in k]), "k_norm": np.stack([np.abs(x).mean(axis=0) for x in k])}


def file_stats(tensors):
    """The same dict from a stats file read by ref_model.read_safetensors."""
    return {"q_centre": tensors["q_mean_real"] + 1j * tensors["q_mean_imag"], "q_norm": tensors["q_abs_mean"],
            "k_centre": tensors["k_mean_real"] + 1j * tensors["k_mean_imag"], "k_norm": tensors["k_abs_mean"]}


def concentration(centre, norm):
    """R figures of one head from its [F] centre and mean norm."""
    Rf = np.abs(centre) / norm
    top = int(np.argmax(norm))  # first maximum on ties, like the engine
    return {"R": Rf, "band_mean_R": Rf.mean(), "weighted_R": np.abs(centre).sum() / norm.sum(),
            "top_band": top, "top_band_R": Rf[top]}


def summary(heads):
    w = np.array([h["weighted_R"] for h in heads])
    return {"band_mean_R": np.mean([h["band_mean_R"] for h in heads]), "weighted_R": w.mean(),
            "top_band_R": np.mean([h["top_band_R"] for h in heads]), "fraction_weighted_R_above": float((w > THRESHOLD).mean())}


def dominant(q_centre, q_norm, k_norm):
    contrib = q_norm * k_norm
    order = sorted(range(len(contrib)), key=lambda f: (-contrib[f], f))
    total = contrib.sum()
    k = min(TOP_K, len(contrib))
    return {"ranked": order, "contribution": contrib[order], "top1_share": contrib[order[0]] / total,
            "topk_share": contrib[order[:k]].sum() / total,
            "norm_term_share": ((q_norm - np.abs(q_centre)) * k_norm).sum() / total}


def predicted(q_centre, k_centre, omega, deltas):
    """p(Δ) = Σ_f |E q_f||E k_f| cos(ω_f Δ + arg E q_f − arg E k_f), for an array of Δ."""
    amp = np.abs(q_centre) * np.abs(k_centre)
    phase = np.angle(q_centre) - np.angle(k_centre)
    return (amp[None, :] * np.cos(np.outer(deltas, omega) + phase[None, :])).sum(axis=1)


def actual_at(qb, kb, omega, delta):
    """a(t, Δ) for t = Δ .. n-1 of one window: Re Σ_f q_f(t) conj(k_f(t−Δ)) e^{iω_f Δ}."""
    return np.real((qb[delta:] * np.conj(kb[:len(kb) - delta]) * np.exp(1j * omega * delta)[None, :]).sum(axis=1))


def constant(v):
    return v.max() - v.min() <= CONSTANT_TOL * np.abs(v).max()


def rbar(qh, kh, wins, q_centre, k_centre, omega):
    """Mean over positions t (t >= 4 inside its window) of corr_Δ(a(t, Δ), p(Δ)), Δ = 1, 2, 4, … <= t."""
    rs = []
    for start, n in wins:
        qb, kb = qh[start:start + n], kh[start:start + n]
        deltas = [1 << j for j in range(64) if (1 << j) < n]
        if not deltas:
            continue
        pred = predicted(q_centre, k_centre, omega, np.array(deltas, float))
        rows = np.full((len(deltas), n), np.nan)  # rows[j, t] = a(t, 2^j)
        for j, d in enumerate(deltas):
            rows[j, d:] = actual_at(qb, kb, omega, d)
        for t in range(1, n):
            m = sum(1 for d in deltas if d <= t)
            if m < MIN_POINTS:
                continue
            a, p = rows[:m, t], pred[:m]
            if constant(a) or constant(p):
                continue
            rs.append(np.corrcoef(a, p)[0, 1])
    return (float(np.mean(rs)) if rs else float("nan")), len(rs)


def curve(qh, kh, wins, q_centre, k_centre, omega):
    """Mean a(t, Δ) over all pairs at Δ = 1 … longest window − 1, and p(Δ)."""
    longest = max(n for _, n in wins)
    deltas = np.arange(1, longest)
    sums, pairs = np.zeros(len(deltas)), np.zeros(len(deltas), int)
    for start, n in wins:
        qb, kb = qh[start:start + n], kh[start:start + n]
        for d in range(1, n):
            v = actual_at(qb, kb, omega, d)
            sums[d - 1] += v.sum()
            pairs[d - 1] += len(v)
    return {"delta": deltas, "actual_mean": sums / pairs, "predicted": predicted(q_centre, k_centre, omega, deltas.astype(float)),
            "pairs": pairs}


def default_heads(weighted):
    """Head 0 of the first, middle and last layer; the most and least concentrated (first on ties)."""
    L, H = weighted.shape
    out = []
    for h in [(0, 0), (L // 2, 0), (L - 1, 0), np.unravel_index(np.argmax(weighted), weighted.shape),
              np.unravel_index(np.argmin(weighted), weighted.shape)]:
        h = (int(h[0]), int(h[1]))
        if h not in out:
            out.append(h)
    return out


def analyze(model, ids, window, stats=None, heads=None, scatter_points=512):
    cfg = model.config
    L, H, KV = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads
    G = H // KV
    omega = np.asarray(R.rope_freqs(cfg), np.float64)
    q, k, wins = capture(model, ids, window)
    st = stats if stats is not None else input_stats(q, k)
    out = {"omega": omega, "windows": wins, "query_heads": [], "key_heads": []}
    for l in range(L):
        for h in range(KV):
            c = concentration(st["k_centre"][l, h], st["k_norm"][l, h])
            c.update(layer=l, head=h)
            out["key_heads"].append(c)
        for h in range(H):
            g = h // G
            c = concentration(st["q_centre"][l, h], st["q_norm"][l, h])
            c.update(layer=l, head=h, kv_head=g)
            c.update(dominant(st["q_centre"][l, h], st["q_norm"][l, h], st["k_norm"][l, g]))
            c["rbar"], c["rbar_positions"] = rbar(q[l][:, h], k[l][:, g], wins, st["q_centre"][l, h], st["k_centre"][l, g], omega)
            out["query_heads"].append(c)
    qh, kh = out["query_heads"], out["key_heads"]
    rb = np.array([x["rbar"] for x in qh])
    out["summary"] = {"query": summary(qh), "key": summary(kh), "rbar_mean": float(np.nanmean(rb)),
                      "rbar_heads": int(np.isfinite(rb).sum()),
                      "mean_top1_share": np.mean([x["top1_share"] for x in qh]),
                      "mean_topk_share": np.mean([x["topk_share"] for x in qh]),
                      "mean_norm_term_share": np.mean([x["norm_term_share"] for x in qh])}
    out["layers"] = []
    for l in range(L):
        ql, kl = qh[l * H:(l + 1) * H], kh[l * KV:(l + 1) * KV]
        out["layers"].append({"layer": l, "query_weighted_R": np.mean([x["weighted_R"] for x in ql]),
                              "key_weighted_R": np.mean([x["weighted_R"] for x in kl]),
                              "rbar": float(np.nanmean([x["rbar"] for x in ql])),
                              "norm_term_share": np.mean([x["norm_term_share"] for x in ql])})
    weighted = np.array([x["weighted_R"] for x in qh]).reshape(L, H)
    chosen = heads if heads is not None else default_heads(weighted)
    positions = np.concatenate([np.arange(n) for _, n in wins])
    out["chosen_heads"] = []
    for l, h in chosen:
        g = h // G
        band = qh[l * H + h]["ranked"][0]
        cv = curve(q[l][:, h], k[l][:, g], wins, st["q_centre"][l, h], st["k_centre"][l, g], omega)
        n = min(scatter_points, len(positions))
        rot = np.exp(1j * omega[band] * positions[:n])
        qz, kz = q[l][:n, h, band], k[l][:n, g, band]
        out["chosen_heads"].append({"layer": l, "head": h, "kv_head": g, "curve": cv,
                                    "scatter": {"band": band, "positions": positions[:n], "q_raw": qz, "k_raw": kz,
                                                "q_rope": qz * rot, "k_rope": kz * rot}})
    return out
