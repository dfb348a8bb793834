"""Independent numpy reference of the llama / qwen2 / qwen3 decoder (tests only, never the product).

Written from the public definitions (Hugging Face transformers modeling code, the GGUF spec,
llama2.c's checkpoint layout), sharing no code with the C++ engine, so agreement between the two
means something. float64 throughout; the weights are dequantized exactly as stored.

    model = load(path)                 # HF directory, .gguf file or llama2.c .bin
    logits = forward(model, ids)       # [n_tokens, vocab]
    cap = {}; forward(model, ids, capture=cap)   # cap["q"][layer] [n, n_heads, d], cap["k"][layer]
    rope_freqs(model.config)           # angular frequency per RoPE band (after scaling)

Layout: q/k rows are always in Hugging Face "halves" order (coordinate i pairs with i + d/2).
Files that store them interleaved (llama GGUF, llama2.c) are permuted at load time.
Importing this module has no side effects.
"""

import json
import math
import os
import struct

import numpy as np

# ----------------------------------------------------------------------------------------------
# Configuration


class Config:
    """Everything the forward pass needs. Field names follow the C++ ModelConfig on purpose."""

    def __init__(self, **kw):
        self.arch = "llama"
        self.n_layers = 0
        self.n_embd = 0
        self.n_ff = 0
        self.n_heads = 0
        self.n_kv_heads = 0
        self.head_dim = 0
        self.vocab_size = 0
        self.context_length = 0
        self.rms_eps = 1e-5
        self.rope_theta = 10000.0
        # rope_scaling: None or dict with "type" in {"linear", "llama3", "yarn"} and that type's
        # parameters under their Hugging Face names (factor, low_freq_factor, high_freq_factor,
        # original_max_position_embeddings, beta_fast, beta_slow, attention_factor, mscale,
        # mscale_all_dim, truncate).
        self.rope_scaling = None
        # Per-band divisors of the base frequency (GGUF "rope_freqs.weight", how llama.cpp stores
        # llama3 scaling); None when absent.
        self.rope_freq_factors = None
        self.qk_norm = False
        self.tied_embeddings = False
        self.bos_id = 1
        self.add_bos = True
        self.__dict__.update(kw)

    def __repr__(self):
        return "Config(%s)" % ", ".join("%s=%r" % kv for kv in sorted(self.__dict__.items()))


class Model:
    """config + weights (numpy float64 arrays, shapes [out, in]).

    weights: tok_emb [V, E], norm [E], lm_head [V, E], layers: list of dicts with keys
    attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down and optionally
    bq, bk, bv, bo (biases), q_norm, k_norm ([head_dim], qwen3).
    """

    def __init__(self, config, tok_emb, layers, norm, lm_head, source=""):
        self.config = config
        self.tok_emb = tok_emb
        self.layers = layers
        self.norm = norm
        self.lm_head = lm_head
        self.source = source


# ----------------------------------------------------------------------------------------------
# RoPE frequencies (Hugging Face rope_init_fn definitions)


def _yarn_mscale(scale, mscale=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _rope_yarn(cfg, sc, d):
    # Current transformers semantics: the explicit factor is used (some 4.4x versions replaced it
    # by max_position_embeddings / original_max_position_embeddings; configs normally agree).
    base = cfg.rope_theta
    factor = float(sc["factor"])
    orig = sc.get("original_max_position_embeddings") or cfg.context_length
    attn = sc.get("attention_factor")
    mscale, mscale_all = sc.get("mscale"), sc.get("mscale_all_dim")
    if attn is None:
        if mscale and mscale_all:
            attn = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all)
        else:
            attn = _yarn_mscale(factor)
    beta_fast = sc.get("beta_fast") or 32.0
    beta_slow = sc.get("beta_slow") or 1.0

    def correction_dim(n_rot):
        # The band index whose wavelength fits n_rot times into the original context.
        return d * math.log(orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if sc.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrapolation_weight = 1.0 - ramp
    pos = base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    inv_extra = 1.0 / pos
    inv_inter = 1.0 / (factor * pos)
    inv = inv_inter * (1 - extrapolation_weight) + inv_extra * extrapolation_weight
    return inv, float(attn)


def _rope_llama3(inv, sc):
    factor = float(sc["factor"])
    lo = float(sc.get("low_freq_factor", 1.0))
    hi = float(sc.get("high_freq_factor", 4.0))
    old = float(sc["original_max_position_embeddings"])
    lo_wavelen, hi_wavelen = old / lo, old / hi
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > lo_wavelen, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = (wavelen >= hi_wavelen) & (wavelen <= lo_wavelen)
    return np.where(medium, smoothed, out)


def rope_params(cfg):
    """(ω_f for f = 0..d/2-1, attention factor). The attention factor (YaRN mscale) multiplies
    cos and sin, so it enters q·k as its square; it is 1 for other scalings."""
    d = cfg.head_dim
    inv = 1.0 / (cfg.rope_theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    attn = 1.0
    sc = cfg.rope_scaling
    kind = (sc or {}).get("type") or (sc or {}).get("rope_type") or "default"
    if kind in ("default", "none"):
        pass
    elif kind == "linear":
        inv = inv / float(sc["factor"])
    elif kind == "llama3":
        inv = _rope_llama3(inv, sc)
    elif kind == "yarn":
        inv, attn = _rope_yarn(cfg, sc, d)
    else:
        raise ValueError("ref_model: unsupported rope scaling %r" % kind)
    if cfg.rope_freq_factors is not None:
        inv = inv / np.asarray(cfg.rope_freq_factors, dtype=np.float64)
    return inv, attn


def rope_freqs(cfg):
    """Angular frequency ω_f of each RoPE band, after rope scaling."""
    return rope_params(cfg)[0]


def rope_attn_factor(cfg):
    return rope_params(cfg)[1]


def apply_rope(x, positions, cfg):
    """x [n, heads, d] in halves layout; rotates pair (i, i + d/2) by position·ω_i."""
    inv, attn = rope_params(cfg)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]  # [n, d/2]
    cos = (np.cos(ang) * attn)[:, None, :]
    sin = (np.sin(ang) * attn)[:, None, :]
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


# ----------------------------------------------------------------------------------------------
# Forward pass


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def forward(model, token_ids, capture=None):
    """Logits [n_tokens, vocab] for one causal sequence starting at position 0.

    capture (dict, optional): filled with capture["q"][l] [n, n_heads, d] and capture["k"][l]
    [n, n_kv_heads, d], the pre-RoPE query/key of layer l (after q_norm/k_norm), halves layout.
    """
    cfg = model.config
    ids = np.asarray(token_ids, dtype=np.int64)
    n = len(ids)
    d, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    group = nh // nkv
    pos = np.arange(n)
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    if capture is not None:
        capture["q"], capture["k"] = [], []

    x = model.tok_emb[ids].astype(np.float64)
    for L in model.layers:
        h = rms_norm(x, L["attn_norm"], cfg.rms_eps)
        q = _linear(h, L["wq"], L.get("bq")).reshape(n, nh, d)
        k = _linear(h, L["wk"], L.get("bk")).reshape(n, nkv, d)
        v = _linear(h, L["wv"], L.get("bv")).reshape(n, nkv, d)
        if "q_norm" in L:
            q = rms_norm(q, L["q_norm"], cfg.rms_eps)
            k = rms_norm(k, L["k_norm"], cfg.rms_eps)
        if capture is not None:
            capture["q"].append(q.copy())
            capture["k"].append(k.copy())
        q = apply_rope(q, pos, cfg)
        k = apply_rope(k, pos, cfg)
        out = np.empty((n, nh, d))
        for hq in range(nh):
            hk = hq // group  # GQA: consecutive query heads share one KV head
            s = q[:, hq, :] @ k[:, hk, :].T / math.sqrt(d) + mask
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            out[:, hq, :] = s @ v[:, hk, :]
        x = x + _linear(out.reshape(n, nh * d), L["wo"], L.get("bo"))
        h = rms_norm(x, L["ffn_norm"], cfg.rms_eps)
        g = _linear(h, L["w_gate"])
        u = _linear(h, L["w_up"])
        x = x + _linear(g / (1 + np.exp(-g)) * u, L["w_down"])
    x = rms_norm(x, model.norm, cfg.rms_eps)
    return x @ model.lm_head.T


def greedy(model, prompt_ids, n_new, stop_ids=(), forward_fn=None):
    """Greedy continuation (full recompute per step: slow but obviously right). Returns new ids.
    forward_fn: another architecture's forward(model, ids) (default: this module's)."""
    ids = list(prompt_ids)
    out = []
    for _ in range(n_new):
        nxt = int(np.argmax((forward_fn or forward)(model, ids)[-1]))
        out.append(nxt)
        ids.append(nxt)
        if nxt in stop_ids:
            break
    return out


# ----------------------------------------------------------------------------------------------
# Shared helpers for loaders


def halves_from_interleaved(w, n_heads):
    """Undo llama.cpp / llama2.c q/k row order: within each head, stored row 2i is HF row i and
    stored row 2i+1 is HF row i + d/2. Works for weights [rows, in] and biases [rows]."""
    rows = w.shape[0]
    d = rows // n_heads
    rest = w.shape[1:]
    return w.reshape((n_heads, d // 2, 2) + rest).swapaxes(1, 2).reshape((rows,) + rest)


def _f16(raw):
    return np.frombuffer(raw, dtype="<f2").astype(np.float64)


def _bf16(raw):
    u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


# ----------------------------------------------------------------------------------------------
# Hugging Face directory: config.json + safetensors (single file or sharded)

_ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": (None, 2), "F64": ("<f8", 8), "U8": ("<u1", 1)}


def read_safetensors(path):
    """{name: float64 array}, metadata dict."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        raw = blob[base + a: base + b]
        dt = info["dtype"]
        if dt not in _ST_DTYPES:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        arr = _bf16(raw) if dt == "BF16" else np.frombuffer(raw, dtype=_ST_DTYPES[dt][0]).astype(np.float64)
        out[name] = arr.reshape(info["shape"])
    return out, meta


def _hf_rope_scaling(cj):
    params = cj.get("rope_parameters")  # newer transformers nest theta + scaling here
    sc = cj.get("rope_scaling") or (params if params and params.get("rope_type", "default") != "default" else None)
    if not sc:
        return None
    sc = dict(sc)
    sc["type"] = sc.get("rope_type") or sc.get("type")
    return sc if sc["type"] not in (None, "default") else None


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    arch = cj.get("model_type", "llama")
    nh = cj["num_attention_heads"]
    theta = cj.get("rope_theta") or (cj.get("rope_parameters") or {}).get("rope_theta") or 10000.0
    cfg = Config(
        arch=arch,
        n_layers=cj["num_hidden_layers"],
        n_embd=cj["hidden_size"],
        n_ff=cj["intermediate_size"],
        n_heads=nh,
        n_kv_heads=cj.get("num_key_value_heads") or nh,
        head_dim=cj.get("head_dim") or cj["hidden_size"] // nh,
        vocab_size=cj["vocab_size"],
        context_length=cj.get("max_position_embeddings", 0),
        rms_eps=cj.get("rms_norm_eps", 1e-6),
        rope_theta=float(theta),
        rope_scaling=_hf_rope_scaling(cj),
        tied_embeddings=bool(cj.get("tie_word_embeddings", False)),
        bos_id=cj.get("bos_token_id", 1),
    )
    t, meta = {}, {}
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        for s in shards:
            part, m = read_safetensors(os.path.join(path, s))
            t.update(part)
            meta.update(m)
    else:
        t, meta = read_safetensors(os.path.join(path, "model.safetensors"))

    emb = t.get("model.embed_tokens.weight")
    head = t.get("lm_head.weight")
    if emb is None and head is not None:
        # TinyStories-656K stores only lm_head.weight; its __metadata__ names embed_tokens as an
        # alias of it (torch's shared-tensor dedup). Accept that alias, or an explicit tie.
        if meta.get("model.embed_tokens.weight") != "lm_head.weight" and not cfg.tied_embeddings:
            raise ValueError("%s: no model.embed_tokens.weight and no tie recorded" % path)
        emb = head
        cfg.tied_embeddings = True
    if head is None:
        head = emb
        cfg.tied_embeddings = True

    layers = []
    for i in range(cfg.n_layers):
        p = "model.layers.%d." % i
        L = {
            "attn_norm": t[p + "input_layernorm.weight"],
            "wq": t[p + "self_attn.q_proj.weight"],
            "wk": t[p + "self_attn.k_proj.weight"],
            "wv": t[p + "self_attn.v_proj.weight"],
            "wo": t[p + "self_attn.o_proj.weight"],
            "ffn_norm": t[p + "post_attention_layernorm.weight"],
            "w_gate": t[p + "mlp.gate_proj.weight"],
            "w_up": t[p + "mlp.up_proj.weight"],
            "w_down": t[p + "mlp.down_proj.weight"],
        }
        for short, name in (("bq", "q_proj"), ("bk", "k_proj"), ("bv", "v_proj"), ("bo", "o_proj")):
            if p + "self_attn.%s.bias" % name in t:
                L[short] = t[p + "self_attn.%s.bias" % name]
        if p + "self_attn.q_norm.weight" in t:
            L["q_norm"] = t[p + "self_attn.q_norm.weight"]
            L["k_norm"] = t[p + "self_attn.k_norm.weight"]
            cfg.qk_norm = True
        layers.append(L)
    return Model(cfg, emb, layers, t["model.norm.weight"], head, source=path)


# ----------------------------------------------------------------------------------------------
# GGUF v2/v3

_GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
GGML_F32, GGML_F16, GGML_Q8_0, GGML_Q4_K, GGML_BF16 = 0, 1, 8, 12, 30
GGML_MXFP4 = 39


class _Reader:
    def __init__(self, blob):
        self.b, self.p = blob, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.p:self.p + n].decode("utf-8", errors="surrogateescape")
        self.p += n
        return s

    def value(self, typ):
        if typ == 8:
            return self.string()
        if typ == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(_GGUF_SCALAR[typ])


def _dequant_q8_0(raw, n):
    # Block of 32: f16 scale d, then 32 int8 q; value = d * q.
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("q", "i1", 32)]), count=n // 32)
    return (blocks["d"].astype(np.float64)[:, None] * blocks["q"].astype(np.float64)).reshape(-1)


def _q4k_scale_min(sc, j):
    # 12 bytes hold eight 6-bit scales and eight 6-bit mins (ggml's K-quant packing).
    if j < 4:
        return sc[:, j] & 63, sc[:, j + 4] & 63
    s = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
    m = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
    return s, m


def _dequant_q4_k(raw, n):
    # Super-block of 256: f16 d, f16 dmin, 12 bytes scales/mins, 128 bytes of 4-bit quants.
    # Each 64-value chunk c uses bytes qs[32c:32c+32]: low nibbles are sub-block 2c, high 2c+1.
    bt = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("sc", "u1", 12), ("qs", "u1", 128)])
    b = np.frombuffer(raw, dtype=bt, count=n // 256)
    d = b["d"].astype(np.float64)[:, None]
    dmin = b["dmin"].astype(np.float64)[:, None]
    sc = b["sc"].astype(np.int64)
    out = np.empty((len(b), 256), dtype=np.float64)
    for c in range(4):
        q = b["qs"][:, 32 * c: 32 * c + 32].astype(np.float64)
        for half, vals in ((0, np.fmod(q, 16)), (1, np.floor(q / 16))):
            s, m = _q4k_scale_min(sc, 2 * c + half)
            lo = 64 * c + 32 * half
            out[:, lo:lo + 32] = d * s[:, None] * vals - dmin * m[:, None]
    return out.reshape(-1)


def e2m1(codes):
    """OCP E2M1 (FP4) from its definition: sign bit 3, exponent bits 1-2, mantissa bit 0;
    exponent 0 is subnormal (0.5 * m), otherwise (1 + m/2) * 2^(exponent - 1)."""
    codes = np.asarray(codes, dtype=np.int64)
    ex, m = (codes >> 1) & 3, (codes & 1).astype(np.float64)
    mag = np.where(ex == 0, 0.5 * m, (1.0 + 0.5 * m) * np.exp2(ex - 1.0))
    return np.where(codes & 8, -mag, mag)


def _dequant_mxfp4(raw, n):
    # GGML block: scale byte e (value 2^(e-127) per E2M1 unit), then 16 bytes: element j in
    # the low nibble of byte j, element j + 16 in the high nibble.
    b = np.frombuffer(raw, dtype=np.uint8, count=n // 32 * 17).reshape(-1, 17)
    scale = np.exp2(b[:, 0].astype(np.float64) - 127.0)
    q = b[:, 1:]
    vals = np.concatenate([e2m1(q & 15), e2m1(q >> 4)], axis=1)
    return (vals * scale[:, None]).reshape(-1)


def _dequant(typ, raw, n, name):
    if typ == GGML_F32:
        return np.frombuffer(raw, dtype="<f4", count=n).astype(np.float64)
    if typ == GGML_F16:
        return _f16(raw[:2 * n])
    if typ == GGML_BF16:
        return _bf16(raw[:2 * n])
    if typ == GGML_Q8_0:
        return _dequant_q8_0(raw, n)
    if typ == GGML_Q4_K:
        return _dequant_q4_k(raw, n)
    if typ == GGML_MXFP4:
        return _dequant_mxfp4(raw, n)
    raise ValueError("ref_model: tensor %s has unsupported ggml type %d" % (name, typ))


_GGML_BYTES = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_BF16: (1, 2), GGML_Q8_0: (32, 34), GGML_Q4_K: (256, 144),
               GGML_MXFP4: (32, 17)}


def read_gguf(path):
    """(metadata dict, {name: float64 array shaped outermost-first}, {name: ggml type})."""
    with open(path, "rb") as f:
        blob = f.read()
    r = _Reader(blob)
    if blob[:4] != b"GGUF":
        raise ValueError("%s: not a GGUF file" % path)
    r.p = 4
    version = r.take("<I")
    if version not in (2, 3):
        raise ValueError("%s: GGUF version %d unsupported" % (path, version))
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        meta[k] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]  # innermost first
        typ, off = r.take("<I"), r.take("<Q")
        infos.append((name, ne, typ, off))
    align = meta.get("general.alignment", 32)
    start = (r.p + align - 1) // align * align
    tensors, types = {}, {}
    for name, ne, typ, off in infos:
        n = int(np.prod(ne))
        if typ not in _GGML_BYTES:
            raise ValueError("%s: tensor %s has unsupported ggml type %d" % (path, name, typ))
        per, nbytes = _GGML_BYTES[typ]
        raw = blob[start + off: start + off + n // per * nbytes]
        tensors[name] = _dequant(typ, raw, n, name).reshape(list(reversed(ne)))
        types[name] = typ
    return meta, tensors, types


def _gguf_rope_scaling(meta, a):
    kind = meta.get(a + ".rope.scaling.type")
    factor = meta.get(a + ".rope.scaling.factor")
    if kind is None and factor is None:
        return None
    kind = kind or "linear"
    if kind == "none" or (factor is not None and float(factor) == 1.0 and kind == "linear"):
        return None
    sc = {"type": kind, "factor": float(factor if factor is not None else 1.0)}
    orig = meta.get(a + ".rope.scaling.original_context_length")
    if orig:
        sc["original_max_position_embeddings"] = int(orig)
    for gk, hk in (("attn_factor", "attention_factor"), ("yarn_beta_fast", "beta_fast"),
                   ("yarn_beta_slow", "beta_slow"), ("low_freq_factor", "low_freq_factor"),
                   ("high_freq_factor", "high_freq_factor")):
        v = meta.get(a + ".rope.scaling." + gk)
        if v is not None and not (gk == "attn_factor" and float(v) == 0.0):
            sc[hk] = float(v)
    return sc


def load_gguf(path):
    meta, t, _ = read_gguf(path)
    a = meta["general.architecture"]
    if a not in ("llama", "qwen2", "qwen3"):
        raise ValueError("%s: architecture %r not supported by the reference" % (path, a))
    nh = int(meta[a + ".attention.head_count"])
    nkv = int(meta.get(a + ".attention.head_count_kv", nh))
    emb = t["token_embd.weight"]
    n_embd = int(meta[a + ".embedding_length"])
    cfg = Config(
        arch=a,
        n_layers=int(meta[a + ".block_count"]),
        n_embd=n_embd,
        n_ff=int(meta[a + ".feed_forward_length"]),
        n_heads=nh,
        n_kv_heads=nkv,
        head_dim=int(meta.get(a + ".attention.key_length", n_embd // nh)),
        vocab_size=emb.shape[0],
        context_length=int(meta.get(a + ".context_length", 0)),
        rms_eps=float(meta[a + ".attention.layer_norm_rms_epsilon"]),
        rope_theta=float(meta.get(a + ".rope.freq_base", 10000.0)),
        rope_scaling=_gguf_rope_scaling(meta, a),
        bos_id=int(meta.get("tokenizer.ggml.bos_token_id", 1)),
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", True)),
    )
    if "rope_freqs.weight" in t:
        cfg.rope_freq_factors = t["rope_freqs.weight"]
    permuted = a == "llama"  # llama.cpp permutes llama q/k for interleaved RoPE; qwen uses NEOX
    layers = []
    for i in range(cfg.n_layers):
        p = "blk.%d." % i
        L = {
            "attn_norm": t[p + "attn_norm.weight"],
            "wq": t[p + "attn_q.weight"],
            "wk": t[p + "attn_k.weight"],
            "wv": t[p + "attn_v.weight"],
            "wo": t[p + "attn_output.weight"],
            "ffn_norm": t[p + "ffn_norm.weight"],
            "w_gate": t[p + "ffn_gate.weight"],
            "w_up": t[p + "ffn_up.weight"],
            "w_down": t[p + "ffn_down.weight"],
        }
        for short, name in (("bq", "attn_q"), ("bk", "attn_k"), ("bv", "attn_v"), ("bo", "attn_output")):
            if p + name + ".bias" in t:
                L[short] = t[p + name + ".bias"]
        if p + "attn_q_norm.weight" in t:
            L["q_norm"] = t[p + "attn_q_norm.weight"]
            L["k_norm"] = t[p + "attn_k_norm.weight"]
            cfg.qk_norm = True
        if permuted:
            L["wq"] = halves_from_interleaved(L["wq"], nh)
            L["wk"] = halves_from_interleaved(L["wk"], nkv)
            if "bq" in L:
                L["bq"] = halves_from_interleaved(L["bq"], nh)
                L["bk"] = halves_from_interleaved(L["bk"], nkv)
        layers.append(L)
    head = t.get("output.weight")
    cfg.tied_embeddings = head is None
    return Model(cfg, emb, layers, t["output_norm.weight"], emb if head is None else head, source=path)


# ----------------------------------------------------------------------------------------------
# llama2.c legacy fp32 checkpoint


def load_llama2c(path):
    with open(path, "rb") as f:
        blob = f.read()
    dim, hidden, n_layers, nh, nkv, vocab, seq_len = struct.unpack_from("<7i", blob, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    d = dim // nh
    w = np.frombuffer(blob, dtype="<f4", offset=28).astype(np.float64)
    pos = [0]

    def take(*shape):
        n = int(np.prod(shape))
        a = w[pos[0]:pos[0] + n].reshape(shape)
        pos[0] += n
        return a

    emb = take(vocab, dim)
    rms_att = take(n_layers, dim)
    wq = take(n_layers, nh * d, dim)
    wk = take(n_layers, nkv * d, dim)
    wv = take(n_layers, nkv * d, dim)
    wo = take(n_layers, dim, nh * d)
    rms_ffn = take(n_layers, dim)
    w1 = take(n_layers, hidden, dim)
    w2 = take(n_layers, dim, hidden)
    w3 = take(n_layers, hidden, dim)
    rms_final = take(dim)
    take(seq_len, d // 2)  # legacy freq_cis_real, unused
    take(seq_len, d // 2)  # legacy freq_cis_imag, unused
    head = emb if shared else take(vocab, dim)
    cfg = Config(arch="llama", n_layers=n_layers, n_embd=dim, n_ff=hidden, n_heads=nh, n_kv_heads=nkv,
                 head_dim=d, vocab_size=vocab, context_length=seq_len, rms_eps=1e-5, rope_theta=10000.0,
                 tied_embeddings=shared, bos_id=1)
    layers = []
    for i in range(n_layers):
        layers.append({
            "attn_norm": rms_att[i],
            "wq": halves_from_interleaved(wq[i], nh),  # llama2.c rotates (2i, 2i+1) pairs
            "wk": halves_from_interleaved(wk[i], nkv),
            "wv": wv[i], "wo": wo[i], "ffn_norm": rms_ffn[i],
            "w_gate": w1[i], "w_up": w3[i], "w_down": w2[i],
        })
    return Model(cfg, emb, layers, rms_final, head, source=path)


# ----------------------------------------------------------------------------------------------


def load(path):
    """Load a Hugging Face directory, a .gguf file or a llama2.c .bin checkpoint."""
    if os.path.isdir(path):
        return load_hf(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"GGUF":
        return load_gguf(path)
    if path.endswith(".bin"):
        return load_llama2c(path)
    raise ValueError("ref_model: cannot tell the format of %s" % path)
