#!/usr/bin/env python3
"""Independent writers and readers of the foreign TriAttention statistics formats, written from
each format's own writer (struct/numpy only), for tests/calib/test_stats_formats.cpp.

  tria-v1  the llama.cpp TurboQuant fork's calibrate-triattention.py: u32 magic 0x54524941,
           u32 version 1, u32 head_dim, num_layers, num_attn_heads, num_kv_heads, f64 rope_theta,
           u32 rope_style, n_sampled, freq_count, name_len, name; per entry u32 layer, head and
           f32 q_mean_real, q_mean_imag, q_abs_mean, R_f [freq_count].
  tria-v2  triattention-ggml's triattention_calibrate.py: 64-byte header (u32 magic, version 2,
           num_layers, num_heads, num_kv_heads, head_dim, freq_count, f32 rope_theta, attn_scale,
           zero padding), f32 layer_budget_scales[num_layers], then every head layer-major:
           f32 q_mean_real, q_mean_imag, q_abs_mean, mrl [freq_count].
  npz      the official MLX port's reader: np.savez with l_{L}_h_{H}_q_mean_real, _q_mean_imag,
           _q_abs_mean, each float32 [head_dim/2].

Values: q_mean_real = l + 0.1*h + 0.01*f, q_mean_imag = -(l + 0.1*h) - 0.02*f,
q_abs_mean = 2 + l + 0.1*h + 0.01*f, as float32.

usage: stats_formats_ref.py make FORMAT OUT [--layers L] [--heads H] [--kv-heads K] [--head-dim D]
                                            [--theta T] [--name N] [--mode MODE]
       stats_formats_ref.py batch FORMAT:MODE:OUT ... (several fixtures of the default shape, one start)
       stats_formats_ref.py check FORMAT FILE [--layers L] [--heads H] [--kv-heads K] [--head-dim D]
                                            [--theta T] [--name N]
MODE (make): good | shuffled (tria-v1: entries in reverse) | scales (tria-v2: budget scales != 1)
           | v1layout (tria-v2: its version-1 layout) | zero_head | interleaved (tria-v1 rope_style 1)
           | missing_head | truncated | reserved (tria-v2) | placeholder (npz: calibrate_mlx.py's)
           | extra_entry (npz)
check reads FILE with this script's own reader and exits 1 naming the first difference.
"""
import argparse
import struct
import sys

import numpy as np

MAGIC = 0x54524941


def values(L, H, fc):
    re = np.zeros((L, H, fc), np.float32)
    im = np.zeros((L, H, fc), np.float32)
    ab = np.zeros((L, H, fc), np.float32)
    for l in range(L):
        for h in range(H):
            for f in range(fc):
                re[l, h, f] = l + 0.1 * h + 0.01 * f
                im[l, h, f] = -(l + 0.1 * h) - 0.02 * f
                ab[l, h, f] = 2 + l + 0.1 * h + 0.01 * f
    return re, im, ab


def mrl(re, im, ab):
    return (np.hypot(re.astype(np.float64), im) / ab).astype(np.float32)


def make_tria_v1(a, re, im, ab):
    L, H, fc = re.shape
    name = a.name.encode()[:255]
    pairs = [(l, h) for l in range(L) for h in range(H)]
    if a.mode == "shuffled":
        pairs.reverse()
    if a.mode == "missing_head":
        pairs = pairs[:-1]
    out = struct.pack("<IIIIII", MAGIC, 1, 2 * fc, L, H, a.kv_heads) + struct.pack("<d", a.theta)
    out += struct.pack("<IIII", 1 if a.mode == "interleaved" else 0, len(pairs), fc, len(name)) + name
    for l, h in pairs:
        z = a.mode == "zero_head" and (l, h) == (L - 1, H - 1)
        rows = [np.zeros(fc, np.float32)] * 4 if z else [re[l, h], im[l, h], ab[l, h], mrl(re[l, h], im[l, h], ab[l, h])]
        out += struct.pack("<II", l, h) + b"".join(r.tobytes() for r in rows)
    return out


def make_tria_v2(a, re, im, ab):
    L, H, fc = re.shape
    version = 1 if a.mode == "v1layout" else 2
    out = struct.pack("<IIIIIII", MAGIC, version, L, H, a.kv_heads, 2 * fc, fc) + struct.pack("<ff", a.theta, 1.0)
    pad = bytearray(64 - 36)
    if a.mode == "reserved":
        pad[3] = 7
    out += bytes(pad)
    if version == 2:
        scales = [1.0 + (0.25 * l if a.mode == "scales" else 0.0) for l in range(L)]
        out += struct.pack("<%df" % L, *scales)
    for l in range(L):
        for h in range(H):
            if a.mode == "zero_head" and (l, h) == (L - 1, H - 1):
                out += b"\0" * (16 * fc)
                continue
            out += b"".join(r.tobytes() for r in [re[l, h], im[l, h], ab[l, h], mrl(re[l, h], im[l, h], ab[l, h])])
    return out


def make_npz(a, re, im, ab, path):
    L, H, fc = re.shape
    if a.mode == "placeholder":  # what calibrate_mlx.py writes
        np.savez(path, model_type=np.array(["llama"]), calibrated=np.array([False]),
                 note=np.array(["Run full calibration with architecture hooks for trig scoring"]))
        return
    arrays = {}
    for l in range(L):
        for h in range(H):
            if a.mode == "missing_head" and (l, h) == (L - 1, H - 1):
                continue
            p = "l_%d_h_%d" % (l, h)
            arrays[p + "_q_mean_real"] = re[l, h]
            arrays[p + "_q_mean_imag"] = im[l, h]
            arrays[p + "_q_abs_mean"] = ab[l, h]
    if a.mode == "extra_entry":
        arrays["model_type"] = np.array(["llama"])
    with open(path, "wb") as f:  # a file object: np.savez would append .npz to the name
        np.savez(f, **arrays)


def read_tria_v1(data):
    magic, version, hd, L, H, kv = struct.unpack_from("<IIIIII", data, 0)
    theta, = struct.unpack_from("<d", data, 24)
    style, n, fc, nl = struct.unpack_from("<IIII", data, 32)
    name = data[48:48 + nl].decode()
    at = 48 + nl
    re, im, ab = (np.zeros((L, H, fc), np.float32) for _ in range(3))
    for _ in range(n):
        l, h = struct.unpack_from("<II", data, at)
        rows = np.frombuffer(data, np.float32, 4 * fc, at + 8).reshape(4, fc)
        re[l, h], im[l, h], ab[l, h] = rows[0], rows[1], rows[2]
        at += 8 + 16 * fc
    assert magic == MAGIC and version == 1 and style == 0 and hd == 2 * fc and at == len(data)
    return dict(L=L, H=H, kv=kv, theta=theta, name=name, re=re, im=im, ab=ab)


def read_tria_v2(data):
    magic, version, L, H, kv, hd, fc = struct.unpack_from("<IIIIIII", data, 0)
    theta, scale = struct.unpack_from("<ff", data, 28)
    assert magic == MAGIC and version == 2 and hd == 2 * fc and data[36:64] == bytes(28)
    scales = struct.unpack_from("<%df" % L, data, 64)
    assert all(s == 1.0 for s in scales), scales
    body = np.frombuffer(data, np.float32, offset=64 + 4 * L).reshape(L, H, 4, fc)
    return dict(L=L, H=H, kv=kv, theta=theta, scale=scale, re=body[:, :, 0], im=body[:, :, 1], ab=body[:, :, 2])


def read_npz(path):
    z = np.load(path)
    keys = {(int(k.split("_")[1]), int(k.split("_")[3])) for k in z.files}
    L = max(k[0] for k in keys) + 1
    H = max(k[1] for k in keys) + 1
    fc = z["l_0_h_0_q_mean_real"].shape[0]
    re, im, ab = (np.zeros((L, H, fc), np.float32) for _ in range(3))
    for l, h in keys:
        p = "l_%d_h_%d_" % (l, h)
        re[l, h], im[l, h], ab[l, h] = z[p + "q_mean_real"], z[p + "q_mean_imag"], z[p + "q_abs_mean"]
        assert z[p + "q_mean_real"].dtype == np.float32
    assert len(z.files) == 3 * L * H, z.files
    return dict(L=L, H=H, re=re, im=im, ab=ab)


def make(a):
    re, im, ab = values(a.layers, a.heads, a.head_dim // 2)
    if a.format == "npz":
        make_npz(a, re, im, ab, a.path)
        return
    data = make_tria_v1(a, re, im, ab) if a.format == "tria-v1" else make_tria_v2(a, re, im, ab)
    if a.mode == "truncated":
        data = data[:-6]
    with open(a.path, "wb") as f:
        f.write(data)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "batch":
        for spec in sys.argv[2:]:
            fmt, mode, path = spec.split(":", 2)
            make(argparse.Namespace(format=fmt, mode=mode, path=path, layers=2, heads=4, kv_heads=2, head_dim=8,
                                    theta=10000.0, name="tiny-llama"))
        return
    p = argparse.ArgumentParser()
    p.add_argument("action", choices=["make", "check"])
    p.add_argument("format", choices=["tria-v1", "tria-v2", "npz"])
    p.add_argument("path")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=8)
    p.add_argument("--theta", type=float, default=10000.0)
    p.add_argument("--name", default="tiny-llama")
    p.add_argument("--mode", default="good")
    a = p.parse_args()
    if a.action == "make":
        make(a)
        return
    re, im, ab = values(a.layers, a.heads, a.head_dim // 2)
    if a.format == "npz":
        got = read_npz(a.path)
    else:
        with open(a.path, "rb") as f:
            data = f.read()
        got = read_tria_v1(data) if a.format == "tria-v1" else read_tria_v2(data)
    want = dict(L=a.layers, H=a.heads, re=re, im=im, ab=ab)
    if a.format != "npz":
        want["kv"] = a.kv_heads
    if a.format == "tria-v1":
        want.update(theta=a.theta, name=a.name)
    if a.format == "tria-v2":
        want.update(theta=float(np.float32(a.theta)), scale=1.0)
    for k, v in want.items():
        same = np.array_equal(got[k], v) if isinstance(v, np.ndarray) else got[k] == v
        if not same:
            print("%s: field %s differs: %r vs %r" % (a.path, k, got[k], v), file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
