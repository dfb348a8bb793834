"""The numpy reference checked on its own (no triattn binary needed).

Real models: greedy decoding reproduces the coherent texts recorded in ../shared/models/*/SOURCE.md,
and the Q8_0 GGUF copy of TinyStories (permuted q/k rows, quantized) decodes the same 60 tokens as
the F32 safetensors. Synthetic checks: RoPE is a rotation whose q·k depends only on the relative
position, the rope scalings behave as their definitions say, the row un-permutation is the inverse
of llama.cpp's, and sharded BF16 safetensors load.
"""

import json
import math
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cli  # noqa: E402
import ref_expected as E  # noqa: E402
import ref_model as R  # noqa: E402
import ref_vocab as V  # noqa: E402

c = ref_cli.Checks("reference self-check")
S = os.path.join(ref_cli.shared_dir(), "models")
TS = os.path.join(S, "tinystories-656k")

# --- real models ---------------------------------------------------------------------------
hf = R.load(TS)
pieces = V.pieces_from_tokenizer_json(os.path.join(TS, "tokenizer.json"))
c.check(hf.config.tied_embeddings and hf.tok_emb is hf.lm_head, "TinyStories: embedding tied to lm_head.weight")
g = R.greedy(hf, E.TINYSTORIES_PROMPT_IDS, 60)
c.same_ids(g, E.TINYSTORIES_GREEDY_60, "TinyStories HF F32 greedy 60")
text = V.decode(pieces, g).strip()
c.check(text.startswith(E.TINYSTORIES_GREEDY_TEXT_START), "TinyStories text: %r" % text[:100])

gg = R.load(os.path.join(TS, "TinyStories-656K-Q8_0.gguf"))
for name in ("wq", "wk", "wv", "w_down"):
    a, b = gg.layers[1][name], hf.layers[1][name]
    r = np.abs(a - b).max() / np.abs(b).max()
    c.check(r < 0.01, "TinyStories GGUF layer 1 %s dequantized+unpermuted vs safetensors: rel %.4f < 0.01" % (name, r))
c.same_ids(R.greedy(gg, E.TINYSTORIES_PROMPT_IDS, 60), E.TINYSTORIES_GREEDY_60, "TinyStories GGUF Q8_0 greedy 60")

st = R.load(os.path.join(S, "stories260k", "stories260K.bin"))
g2 = R.greedy(st, [1], 100)
c.same_ids(g2, E.STORIES260K_GREEDY_100, "stories260K greedy 100 from BOS")
text2 = V.decode(V.pieces_from_llama2c(os.path.join(S, "stories260k", "tok512.bin")), g2).strip()
c.check(text2.startswith(E.STORIES260K_GREEDY_TEXT_START), "stories260K text: %r" % text2[:100])

# capture: shapes, and the captured pre-RoPE vectors reproduce the layer's projections.
cap = {}
ids = E.TINYSTORIES_PROMPT_IDS
R.forward(hf, ids, capture=cap)
c.check(len(cap["q"]) == 2 and cap["q"][0].shape == (7, 8, 16) and cap["k"][1].shape == (7, 4, 16),
        "capture shapes q %s k %s" % (cap["q"][0].shape, cap["k"][1].shape))
h0 = R.rms_norm(hf.tok_emb[ids], hf.layers[0]["attn_norm"], hf.config.rms_eps)
c.check(np.allclose(cap["k"][0], (h0 @ hf.layers[0]["wk"].T).reshape(7, 4, 16)), "capture k[0] = pre-RoPE k projection")

# --- RoPE ----------------------------------------------------------------------------------
cfg = R.Config(head_dim=16, rope_theta=10000.0, context_length=4096)
rng = np.random.default_rng(0)
q, k = rng.standard_normal((1, 1, 16)), rng.standard_normal((1, 1, 16))
c.check(abs(np.linalg.norm(R.apply_rope(q, [123], cfg)) - np.linalg.norm(q)) < 1e-12, "RoPE preserves norm")
dots = [float(R.apply_rope(q, [m + 7], cfg).ravel() @ R.apply_rope(k, [m], cfg).ravel()) for m in (0, 50, 999)]
c.check(max(dots) - min(dots) < 1e-9, "RoPE q·k depends only on the relative position: %s" % dots)
# Band f rotates the pair (f, f + d/2) by ω_f: a unit vector on coordinate 3 moves into 3 + 8.
e = np.zeros((1, 1, 16)); e[0, 0, 3] = 1.0
rot = R.apply_rope(e, [5], cfg).ravel()
w3 = 10000.0 ** (-6 / 16)
c.check(abs(rot[3] - math.cos(5 * w3)) < 1e-12 and abs(rot[11] - math.sin(5 * w3)) < 1e-12, "RoPE halves pairing")

base = R.rope_freqs(cfg)
lin = R.Config(head_dim=16, rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 4.0})
c.check(np.allclose(R.rope_freqs(lin), base / 4), "linear scaling divides every ω by the factor")
l3 = R.Config(head_dim=64, rope_theta=500000.0, rope_scaling={
    "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192})
b3, s3 = R.rope_freqs(R.Config(head_dim=64, rope_theta=500000.0)), R.rope_freqs(l3)
wl = 2 * math.pi / b3
hi_band, lo_band, mid = wl < 8192 / 4, wl > 8192, (wl >= 8192 / 4) & (wl <= 8192)
c.check(np.allclose(s3[hi_band], b3[hi_band]) and np.allclose(s3[lo_band], b3[lo_band] / 8)
        and np.all((s3[mid] <= b3[mid]) & (s3[mid] >= b3[mid] / 8)) and hi_band.any() and lo_band.any() and mid.any(),
        "llama3: short wavelengths kept, long divided by factor, medium in between")
yc = R.Config(head_dim=128, rope_theta=1000000.0, context_length=131072, rope_scaling={
    "type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
by, sy = R.rope_freqs(R.Config(head_dim=128, rope_theta=1000000.0)), R.rope_freqs(yc)
c.check(abs(sy[0] - by[0]) < 1e-15 and abs(sy[-1] - by[-1] / 4) < 1e-15 and np.all(np.diff(sy) < 0),
        "yarn: fastest band extrapolated, slowest interpolated, monotone")
c.check(abs(R.rope_attn_factor(yc) - (0.1 * math.log(4) + 1)) < 1e-12, "yarn attention factor 0.1 ln(s) + 1")

# --- layout and formats --------------------------------------------------------------------
# llama.cpp's converter: w.reshape(n_head, 2, d/2, in).swapaxes(1, 2) -> interleaved rows.
w = rng.standard_normal((2 * 8, 5))
interleaved = w.reshape(2, 2, 4, 5).swapaxes(1, 2).reshape(16, 5)
c.check(np.array_equal(R.halves_from_interleaved(interleaved, 2), w), "un-permutation inverts llama.cpp's permutation")
c.check(np.array_equal(interleaved[2], w[1]) and np.array_equal(interleaved[3], w[1 + 4]), "GGUF row 2i = HF i, 2i+1 = HF i+d/2")

blk = struct.pack("<e", 0.5) + bytes((np.arange(32) - 16).astype(np.int8).tobytes())
c.check(np.array_equal(R._dequant_q8_0(blk, 32), 0.5 * (np.arange(32) - 16)), "Q8_0 block = f16 scale × int8")


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        if dtype == "BF16":
            raw = (np.asarray(a, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        else:
            raw = np.asarray(a, "<f2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# The TinyStories weights re-saved as BF16 in two shards: loader handles index + BF16 + explicit tie.
full, _ = R.read_safetensors(os.path.join(TS, "model.safetensors"))
full["model.embed_tokens.weight"] = full.pop("lm_head.weight")
names = sorted(full)
with tempfile.TemporaryDirectory() as d:
    shards = {"a.safetensors": names[: len(names) // 2], "b.safetensors": names[len(names) // 2:]}
    wmap = {}
    for fn, ns in shards.items():
        write_safetensors(os.path.join(d, fn), {n: full[n] for n in ns}, "BF16")
        wmap.update({n: fn for n in ns})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": wmap}, f)
    with open(os.path.join(TS, "config.json")) as f:
        cj = json.load(f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cj, f)
    bf = R.load(d)
    r = np.abs(bf.layers[0]["wq"] - hf.layers[0]["wq"]).max() / np.abs(hf.layers[0]["wq"]).max()
    c.check(r < 2 ** -7 and bf.lm_head is bf.tok_emb, "sharded BF16 safetensors load (wq rel err %.2g)" % r)
    # The TinyStories F32 weights happen to be bf16-exact, so this copy is lossless.
    gb = R.greedy(bf, E.TINYSTORIES_PROMPT_IDS, 20)
    c.same_ids(gb, E.TINYSTORIES_GREEDY_60[:20], "BF16 copy greedy 20")

c.finish()
