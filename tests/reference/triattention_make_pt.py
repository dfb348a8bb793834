#!/usr/bin/env python3
"""Writes a stats file in the official TriAttention .pt format without torch (stdlib only).

torch.save(obj, "x.pt") writes a zip whose entries are stored (not compressed) under a
folder named after the archive: x/data.pkl (pickle protocol 2), x/byteorder, x/data/<key>
(raw little-endian storages), x/version. Tensors pickle as
    torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())
with each storage a persistent id ('storage', torch.FloatStorage, key, 'cpu', numel).
Here stand-in `torch` modules make the standard pickler emit exactly those opcodes.

The official calibrate script saves `complex_mean.real` / `.imag`, i.e. strided views into one
complex storage; layer 0 head 0 reproduces that (stride 2, offsets 0 and 1).

Values: q_mean_real = l + 0.1*h + 0.01*f, q_mean_imag = -(l + 0.1*h) - 0.02*f,
q_abs_mean = 2 + l + 0.1*h + 0.01*f (float32). Layer 1 head 1's q_abs_mean is a HalfStorage of
value 0.5 + f/8 (exact in half).

usage: triattention_make_pt.py OUT.pt [--layers L] [--heads H] [--head-dim D] [--mode MODE]
MODE: good | deflate | evil_global | missing_head | truncated | bad_crc | not_stats
"""
import argparse
import collections
import io
import os
import pickle
import struct
import sys
import types
import zipfile

# Stand-ins for the torch globals torch.save references.
_torch = types.ModuleType("torch")
_torch_utils = types.ModuleType("torch._utils")


def _rebuild_tensor_v2(*args):  # never called: only pickled by reference
    raise RuntimeError("stand-in")


_rebuild_tensor_v2.__module__ = "torch._utils"
_rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
_torch_utils._rebuild_tensor_v2 = _rebuild_tensor_v2


def _storage_class(name):
    cls = type(name, (), {})
    cls.__module__ = "torch"
    cls.__qualname__ = name
    setattr(_torch, name, cls)
    return cls


FloatStorage = _storage_class("FloatStorage")
HalfStorage = _storage_class("HalfStorage")
_torch._utils = _torch_utils
sys.modules.setdefault("torch", _torch)
sys.modules.setdefault("torch._utils", _torch_utils)


class Storage:
    def __init__(self, key, kind, values):
        self.key, self.kind, self.values = key, kind, values

    def raw(self):
        fmt = "<%d%s" % (len(self.values), "f" if self.kind is FloatStorage else "e")
        return struct.pack(fmt, *self.values)


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    def __reduce_ex__(self, proto):
        return (_rebuild_tensor_v2,
                (self.storage, self.offset, (self.size,), (self.stride,), False, collections.OrderedDict()))


class EvilTensor(Tensor):
    def __reduce_ex__(self, proto):
        return (os.system, ("echo pwned",))


class TorchPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.kind, obj.key, "cpu", len(obj.values))
        return None


def build(layers, heads, half, mode):
    storages = []

    def storage(kind, values):
        s = Storage(str(len(storages)), kind, values)
        storages.append(s)
        return s

    stats = {}
    for l in range(layers):
        for h in range(heads):
            if mode == "missing_head" and (l, h) == (layers - 1, heads - 1):
                continue
            re = [l + 0.1 * h + 0.01 * f for f in range(half)]
            im = [-(l + 0.1 * h) - 0.02 * f for f in range(half)]
            ab = [2 + l + 0.1 * h + 0.01 * f for f in range(half)]
            if (l, h) == (0, 0):
                inter = [v for pair in zip(re, im) for v in pair]
                cs = storage(FloatStorage, inter)
                t_re, t_im = Tensor(cs, 0, half, 2), Tensor(cs, 1, half, 2)
            else:
                t_re = Tensor(storage(FloatStorage, re), 0, half, 1)
                t_im = Tensor(storage(FloatStorage, im), 0, half, 1)
            if (l, h) == (1, 1):
                t_ab = Tensor(storage(HalfStorage, [0.5 + f / 8 for f in range(half)]), 0, half, 1)
            else:
                t_ab = Tensor(storage(FloatStorage, ab), 0, half, 1)
            if mode == "evil_global" and (l, h) == (0, 1):
                t_ab = EvilTensor(None, 0, 0, 0)
            stats["layer%02d_head%02d" % (l, h)] = {"q_mean_real": t_re, "q_mean_imag": t_im, "q_abs_mean": t_ab}
    metadata = {
        "num_traces": 1,
        "head_dim": 2 * half,
        "dtype": "bfloat16",
        "use_chat_template": False,
        "system_prompt": "",
        "attn_implementation": "flash_attention_2",
        "rope_style": "half",
        "rope_type": "default",
        "sampled_heads": [[l, h] for l in range(layers) for h in range(heads)],
    }
    root = {"metadata": metadata, "stats": stats}
    if mode == "not_stats":
        root = {"metadata": metadata, "weights": [1, 2.5, None, True]}
    buf = io.BytesIO()
    TorchPickler(buf, protocol=2).dump(root)
    return buf.getvalue(), storages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=8)
    ap.add_argument("--mode", default="good")
    a = ap.parse_args()
    pkl, storages = build(a.layers, a.heads, a.head_dim // 2, a.mode)
    name = os.path.splitext(os.path.basename(a.out))[0]
    with zipfile.ZipFile(a.out, "w", zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo(name + "/data.pkl"), pkl,
                   compress_type=zipfile.ZIP_DEFLATED if a.mode == "deflate" else zipfile.ZIP_STORED)
        z.writestr(zipfile.ZipInfo(name + "/byteorder"), b"little")
        for s in storages:
            z.writestr(zipfile.ZipInfo(name + "/data/" + s.key), s.raw())
        z.writestr(zipfile.ZipInfo(name + "/version"), b"3\n")
    if a.mode == "truncated":
        with open(a.out, "r+b") as f:
            f.truncate(os.path.getsize(a.out) * 2 // 3)
    if a.mode == "bad_crc":
        with open(a.out, "rb") as f:
            data = bytearray(f.read())
        # Flip a byte inside the first storage's payload (right after its local header).
        marker = (name + "/data/0").encode()
        at = data.index(marker) + len(marker)
        data[at + 1] ^= 0xFF
        with open(a.out, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
