"""Independent numpy reference of TriAttention's calibration statistics and key scores (tests only).

Written from docs/design.md (The algorithm), sharing no code with the C++ engine:
- calibration_stats(model, ids, window): per-band mean of the complex pre-RoPE query/key and
  mean modulus, over windows of `window` tokens each run from position 0.
- position_form_scores(...): the paper's form, from PRE-RoPE keys and explicit key positions,
      S_h(k) = mean_{δ∈D} Σ_f fs²|q̄_f||k_f| cos(ω_f (p − p_k + δ) + arg q̄_f − arg k_f)
             + Σ_f fs²(E|q_f| − |q̄_f|)|k_f|,           D = {1, 2, 4, ..., 2^max_log2}
  (the engine uses the equivalent closed form on post-RoPE keys).
- partial_rope_scores(...): the same under partial RoPE (docs/design.md, "Partial RoPE"): the
  form above over the rotated bands f < r/2 of k_pre[:, :r], plus the pass coordinates' term
      fs²·(q_pass_mean·k_pass + (q_pass_abs_mean − ‖q_pass_mean‖)·‖k_pass‖);
  rope_partial(x, pos, omega, r) rotates the first r coordinates of x by pos (halves layout).
- fnv1a64_tokens(ids): FNV-1a 64 of the ids as little-endian int32.
Importing this module has no side effects.
"""

import struct

import numpy as np

import ref_model as R


def bands(x):
    """[..., d] halves layout -> complex [..., d/2]: band f = x[f] + i·x[f + d/2]."""
    h = x.shape[-1] // 2
    return x[..., :h] + 1j * x[..., h:]


def calibration_stats(model, ids, window):
    """Dict of float64 arrays: q_mean_real/imag, q_abs_mean [L, H, d/2], k_* [L, Hkv, d/2]."""
    cfg = model.config
    L, H, Hkv, h = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim // 2
    qs, qa = np.zeros((L, H, h), complex), np.zeros((L, H, h))
    ks, ka = np.zeros((L, Hkv, h), complex), np.zeros((L, Hkv, h))
    for w0 in range(0, len(ids), window):
        cap = {}
        R.forward(model, ids[w0:w0 + window], capture=cap)
        for l in range(L):
            q, k = bands(cap["q"][l]), bands(cap["k"][l])  # [n, heads, h]
            qs[l] += q.sum(axis=0)
            qa[l] += np.abs(q).sum(axis=0)
            ks[l] += k.sum(axis=0)
            ka[l] += np.abs(k).sum(axis=0)
    n = float(len(ids))
    return {
        "q_mean_real": qs.real / n, "q_mean_imag": qs.imag / n, "q_abs_mean": qa / n,
        "k_mean_real": ks.real / n, "k_mean_imag": ks.imag / n, "k_abs_mean": ka / n,
    }


def position_form_scores(q_mean_real, q_mean_imag, q_abs_mean, k_pre, key_pos, p, omega, fs=1.0, max_log2=16):
    """Scores of keys k_pre [n, d] (pre-RoPE, halves) at positions key_pos [n] for one query head
    whose statistics are [d/2] arrays; at p tokens processed. Returns [n] float64."""
    qbar = np.asarray(q_mean_real, np.float64) + 1j * np.asarray(q_mean_imag, np.float64)
    kb = bands(np.asarray(k_pre, np.float64))                       # [n, h]
    amp = np.abs(qbar)[None, :] * np.abs(kb)                        # |q̄_f||k_f|
    phi = np.angle(qbar)[None, :] - np.angle(kb)                    # arg q̄_f − arg k_f
    offsets = 2.0 ** np.arange(max_log2 + 1)                        # D
    delta = (p - np.asarray(key_pos, np.float64))[:, None, None] + offsets[None, :, None]  # [n, |D|, 1]
    trig = (amp[:, None, :] * np.cos(np.asarray(omega, np.float64)[None, None, :] * delta + phi[:, None, :]))
    trig = trig.sum(axis=2).mean(axis=1)
    norm = ((np.asarray(q_abs_mean, np.float64) - np.abs(qbar))[None, :] * np.abs(kb)).sum(axis=1)
    return fs * fs * (trig + norm)


def rope_partial(x, pos, omega, r):
    """RoPE of x [..., d] at position pos: pairs (i, i + r/2) for i < r/2 rotate by pos·ω_i, the
    coordinates from r on stay. float64."""
    x = np.asarray(x, np.float64)
    h = r // 2
    a = float(pos) * np.asarray(omega, np.float64)
    c, s = np.cos(a), np.sin(a)
    out = x.copy()
    out[..., :h] = x[..., :h] * c - x[..., h:r] * s
    out[..., h:r] = x[..., h:r] * c + x[..., :h] * s
    return out


def partial_rope_scores(q_mean_real, q_mean_imag, q_abs_mean, q_pass_mean, q_pass_abs_mean, k_pre, key_pos, p,
                        omega, r, fs=1.0, max_log2=16):
    """Scores of pre-RoPE keys k_pre [n, d] under partial RoPE (first r coordinates rotate); band
    statistics [r/2], q_pass_mean [d − r], q_pass_abs_mean a number. Returns [n] float64."""
    k_pre = np.asarray(k_pre, np.float64)
    rotated = position_form_scores(q_mean_real, q_mean_imag, q_abs_mean, k_pre[:, :r], key_pos, p, omega, fs,
                                   max_log2)
    m = np.asarray(q_pass_mean, np.float64)
    kp = k_pre[:, r:]
    return rotated + fs * fs * (kp @ m + (float(q_pass_abs_mean) - np.linalg.norm(m)) * np.linalg.norm(kp, axis=1))


def fnv1a64_tokens(ids):
    h = 0xcbf29ce484222325
    for b in struct.pack("<%di" % len(ids), *ids):
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
