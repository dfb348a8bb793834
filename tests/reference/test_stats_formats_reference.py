"""`triattn stats` on every statistics format, checked by independent readers and writers.

1. Fixtures from independent writers (stats_formats_ref.py: TRIA v1 and v2 from their own
   writers' layouts, the MLX .npz with numpy; triattention_make_pt.py: the official .pt) ->
   `triattn stats info --json` reports the shape, the identity fields the format records (the
   rest null) and the mean R per layer computed here in numpy.
2. Each fixture -> `stats convert` to ours -> the safetensors file, parsed here, holds the
   fixture's values bit for bit, with metadata 'source_format'.
3. Ours -> `stats convert` to each format -> read back here (numpy; torch.load for the .pt) ->
   the same values; and -> back to ours -> bit-identical query statistics.
"""

import json
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ref_cli as C  # noqa: E402
import stats_formats_ref as F  # noqa: E402

C.binary()
work = C.work_dir("stats_formats")
c = C.Checks("statistics formats")
L, H, KV, D = 2, 4, 2, 8


def py(name, *args, check=True):
    """Runs tests/reference/NAME with this python; returns its exit status."""
    return subprocess.run([sys.executable, os.path.join(HERE, name)] + [str(a) for a in args], check=check).returncode


def safetensors(path):
    """(metadata, {name: float32 array}) of a safetensors file, parsed here."""
    with open(path, "rb") as f:
        data = f.read()
    n, = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], np.float32).reshape(t["shape"])
    return meta, out


re, im, ab = F.values(L, H, D // 2)
want_r = (np.hypot(re.astype(np.float64), im) / ab).mean(axis=(1, 2))
paths = {
    "tria-v1": os.path.join(work, "fx.triattention"),
    "tria-v2": os.path.join(work, "fx.bin"),
    "npz": os.path.join(work, "fx.npz"),
    "pt": os.path.join(work, "fx.pt"),
}
for fmt in ("tria-v1", "tria-v2", "npz"):
    py("stats_formats_ref.py", "make", fmt, paths[fmt], "--theta", 500000, "--name", "Tiny-Llama")
py("triattention_make_pt.py", paths["pt"], "--layers", L, "--heads", H, "--head-dim", D)

# 1. info
records = {"tria-v1": dict(n_kv_heads=KV, rope_theta=500000.0, model_name="Tiny-Llama", rope_attn_factor=None),
           "tria-v2": dict(n_kv_heads=KV, rope_theta=500000.0, model_name=None, rope_attn_factor=1.0),
           "npz": dict(n_kv_heads=None, rope_theta=None, model_name=None, rope_attn_factor=None),
           "pt": dict(n_kv_heads=None, rope_theta=None, model_name=None, rope_attn_factor=None)}
for fmt, path in paths.items():
    j = C.run_json("stats", "info", path, "--json")
    c.check(j["format"] == fmt, "%s: info names the format (%s)" % (fmt, j["format"]))
    c.check((j["n_layers"], j["n_heads"], j["head_dim"], j["bands"]) == (L, H, D, D // 2), "%s: shape" % fmt)
    for k, v in records[fmt].items():
        c.check(j[k] == v, "%s: %s is %r (want %r)" % (fmt, k, j[k], v))
    c.check(j["architecture"] is None and j["token_count"] is None and not j["weights_fingerprint"],
            "%s: what the format does not record is null" % fmt)
    if fmt != "pt":  # the .pt fixture has its own values (triattention_make_pt.py)
        c.check(np.allclose(j["mean_r_per_layer"], want_r, rtol=1e-6), "%s: mean R per layer %s (numpy %s)"
                % (fmt, j["mean_r_per_layer"], want_r.tolist()))

# 2. each fixture -> ours
for fmt in ("tria-v1", "tria-v2", "npz"):
    out = os.path.join(work, "from_%s.safetensors" % fmt)
    C.run("stats", "convert", paths[fmt], out)
    meta, t = safetensors(out)
    c.check(meta.get("source_format") == fmt, "%s -> ours: source_format %r" % (fmt, meta.get("source_format")))
    c.check(all(np.array_equal(t[n], v) for n, v in [("q_mean_real", re), ("q_mean_imag", im), ("q_abs_mean", ab)]),
            "%s -> ours: query statistics bit for bit" % fmt)
    c.check(not any(n.startswith("k_") for n in t), "%s -> ours: no key statistics invented" % fmt)

# 3. ours -> each format -> (independent reader) -> ours
ours = os.path.join(work, "from_tria-v1.safetensors")
for fmt, ext in (("tria-v1", ".triattention"), ("tria-v2", ".bin"), ("npz", ".npz"), ("pt", ".pt")):
    mid = os.path.join(work, "rt" + ext)
    C.run("stats", "convert", ours, mid, "--rope-attn-factor", 1)
    if fmt == "pt":
        import torch  # noqa: E402
        d = torch.load(mid, weights_only=True)
        ok = d["metadata"]["head_dim"] == D and d["metadata"]["rope_style"] == "half"
        for l in range(L):
            for h in range(H):
                s = d["stats"]["layer%02d_head%02d" % (l, h)]
                ok = ok and all(np.array_equal(s[n].numpy(), v[l, h]) for n, v in
                                [("q_mean_real", re), ("q_mean_imag", im), ("q_abs_mean", ab)])
        c.check(ok, "ours -> pt: torch.load reads the same values")
    else:
        rc = py("stats_formats_ref.py", "check", fmt, mid, "--theta", 500000, "--name", "Tiny-Llama", check=False)
        c.check(rc == 0, "ours -> %s: the independent reader finds the same values and fields" % fmt)
    back = os.path.join(work, "back_%s.safetensors" % fmt)
    C.run("stats", "convert", mid, back)
    _, t = safetensors(back)
    c.check(all(np.array_equal(t[n], v) for n, v in [("q_mean_real", re), ("q_mean_imag", im), ("q_abs_mean", ab)]),
            "ours -> %s -> ours: query statistics bit for bit" % fmt)

c.finish()
