"""Independent numpy reference of the Gemma 2 and Gemma 3 (text) decoders (tests only).

Written from the published definitions (Hugging Face transformers modeling_gemma2.py and
modeling_gemma3.py; llama.cpp's GGUF tensor names and its converter, which stores Gemma norm
weights as 1 + w), sharing no code with the C++ engine. float64 throughout. Only the file
readers (safetensors, GGUF dequantization) come from ref_model.

    m = load(path)              # HF directory or .gguf
    logits = forward(m, ids)    # [n_tokens, vocab]
    forward(m, ids, window=False)   # the same with every layer full attention (for effect checks)

The block (both versions):
    h = embed(ids) * sqrt(hidden_size)
    per layer:  x = h; a = attn(norm_in(x)); h = x + norm_post_attn(a)
                x = h; f = mlp(norm_pre_ffn(x)); h = x + norm_post_ffn(f)
    logits = norm(h) @ embed.T   (Gemma 2: tanh soft-cap)
    norm(x) = x / sqrt(mean(x^2) + eps) * (1 + w)
    mlp(x) = down(gelu_tanh(gate(x)) * up(x))
    attn: scores = q.k * query_pre_attn_scalar^-1/2 (Gemma 2: tanh soft-cap), causal, and on
          sliding layers only keys with i - j < sliding_window; Gemma 3: RMSNorm (1 + w) of each
          q and k head before RoPE, local RoPE base on sliding layers, rope_scaling on full ones.
"""

import json
import math
import os

import numpy as np

import ref_model as R


class GemmaModel:
    def __init__(self, cfg, emb, layers, norm):
        self.cfg, self.emb, self.layers, self.norm = cfg, emb, layers, norm


# HF name (within a layer) -> GGUF name, as llama.cpp's converter writes Gemma 2/3.
_LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def _default_layer_types(version, n):
    # transformers: Gemma 2 layer i is sliding when i is even; Gemma 3 every 6th layer is full.
    if version == 2:
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    return ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    version = {"gemma2": 2, "gemma3_text": 3}[cj["model_type"]]
    t = {}
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            t.update(R.read_safetensors(os.path.join(path, fn))[0])
    n = cj["num_hidden_layers"]
    cfg = dict(
        version=version, n_layers=n, hidden=cj["hidden_size"], heads=cj["num_attention_heads"],
        kv_heads=cj["num_key_value_heads"], head_dim=cj["head_dim"], eps=cj.get("rms_norm_eps", 1e-6),
        rope_theta=cj.get("rope_theta", 10000.0), rope_local=cj.get("rope_local_base_freq", 10000.0),
        rope_scaling=cj.get("rope_scaling"), qpas=cj.get("query_pre_attn_scalar", cj["head_dim"]),
        attn_cap=cj.get("attn_logit_softcapping"), final_cap=cj.get("final_logit_softcapping"),
        window=cj.get("sliding_window"),
        layer_types=cj.get("layer_types") or _default_layer_types(version, n))
    layers = []
    for i in range(n):
        p = "model.layers.%d." % i
        layers.append({k: t[p + k] for k in _LAYER if p + k in t})
    emb = t["model.embed_tokens.weight"]
    return GemmaModel(cfg, emb, layers, t["model.norm.weight"])


def load_gguf(path):
    meta, t, _ = R.read_gguf(path)
    a = meta["general.architecture"]
    version = {"gemma2": 2, "gemma3": 3}[a]
    n = meta[a + ".block_count"]
    hd = meta.get(a + ".attention.key_length", meta[a + ".embedding_length"] // meta[a + ".attention.head_count"])
    scale = meta.get(a + ".attention.scale")
    st = meta.get(a + ".rope.scaling.type")
    cfg = dict(
        version=version, n_layers=n, hidden=meta[a + ".embedding_length"], heads=meta[a + ".attention.head_count"],
        kv_heads=meta.get(a + ".attention.head_count_kv", meta[a + ".attention.head_count"]), head_dim=hd,
        eps=meta.get(a + ".attention.layer_norm_rms_epsilon", 1e-6), rope_theta=meta.get(a + ".rope.freq_base", 10000.0),
        rope_local=meta.get(a + ".rope.freq_base_swa", 10000.0),
        rope_scaling={"rope_type": st, "factor": meta[a + ".rope.scaling.factor"]} if st and st != "none" else None,
        qpas=(1.0 / scale ** 2) if scale else hd,
        attn_cap=meta.get(a + ".attn_logit_softcapping"), final_cap=meta.get(a + ".final_logit_softcapping"),
        window=meta.get(a + ".attention.sliding_window"), layer_types=_default_layer_types(version, n))
    layers = []
    for i in range(n):
        L = {}
        for hf, gg in _LAYER.items():
            name = "blk.%d.%s" % (i, gg)
            if name in t:
                # GGUF norms hold 1 + w; the forward below applies (1 + w) as HF does.
                L[hf] = t[name] - 1.0 if hf.endswith("norm.weight") or hf.endswith("layernorm.weight") else t[name]
        layers.append(L)
    return GemmaModel(cfg, t["token_embd.weight"], layers, t["output_norm.weight"] - 1.0)


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)


def _norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _rope(x, pos, base, d, factor):
    # rotate_half convention: coordinate i pairs with i + d/2; inv_freq_i = base^(-2i/d) / factor.
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d) / factor
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    half = d // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def _act_q8(x):
    # Emulates how an integer matmul path sees its input (Q8_0 files): each row in blocks of 32,
    # d = max|x| / 127, x -> round(x / d) * d. Not part of the model definition; tests use it to
    # separate the engine's activation rounding from errors in the architecture.
    shape = x.shape
    b = x.reshape(-1, 32)
    d = np.abs(b).max(-1, keepdims=True) / 127.0
    safe = np.where(d == 0, 1.0, d)
    return (np.where(d == 0, 0.0, np.round(b / safe) * d)).reshape(shape)


def forward(m, ids, window=True, act_q8=False):
    """act_q8: round every matrix input as a Q8_0 integer matmul does (_act_q8)."""
    c = m.cfg
    aq = _act_q8 if act_q8 else (lambda x: x)
    ids = np.asarray(ids)
    n, d, H, KV = len(ids), c["head_dim"], c["heads"], c["kv_heads"]
    pos = np.arange(n, dtype=np.float64)
    h = m.emb[ids] * math.sqrt(c["hidden"])
    causal = np.tril(np.ones((n, n), dtype=bool))
    dist = np.arange(n)[:, None] - np.arange(n)[None, :]
    for i, L in enumerate(m.layers):
        sliding = c["layer_types"][i] == "sliding_attention"
        x = aq(_norm(h, L["input_layernorm.weight"], c["eps"]))
        q = (x @ L["self_attn.q_proj.weight"].T).reshape(n, H, d)
        k = (x @ L["self_attn.k_proj.weight"].T).reshape(n, KV, d)
        v = (x @ L["self_attn.v_proj.weight"].T).reshape(n, KV, d)
        if c["version"] == 3:
            q = _norm(q, L["self_attn.q_norm.weight"], c["eps"])
            k = _norm(k, L["self_attn.k_norm.weight"], c["eps"])
        if c["version"] == 3 and sliding:
            base, factor = c["rope_local"], 1.0
        else:
            rs = c["rope_scaling"]
            base = c["rope_theta"]
            factor = rs["factor"] if rs and rs.get("rope_type", rs.get("type")) == "linear" else 1.0
        q, k = _rope(q, pos, base, d, factor), _rope(k, pos, base, d, factor)
        mask = causal & (dist < c["window"]) if (sliding and window) else causal
        out = np.zeros((n, H, d))
        for hh in range(H):
            kv = hh // (H // KV)
            s = (q[:, hh] @ k[:, kv].T) * c["qpas"] ** -0.5
            if c["attn_cap"]:
                s = np.tanh(s / c["attn_cap"]) * c["attn_cap"]
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            out[:, hh] = s @ v[:, kv]
        a = aq(out.reshape(n, H * d)) @ L["self_attn.o_proj.weight"].T
        h = h + _norm(a, L["post_attention_layernorm.weight"], c["eps"])
        x = aq(_norm(h, L["pre_feedforward_layernorm.weight"], c["eps"]))
        f = aq(_gelu_tanh(x @ L["mlp.gate_proj.weight"].T) * (x @ L["mlp.up_proj.weight"].T)) @ L["mlp.down_proj.weight"].T
        h = h + _norm(f, L["post_feedforward_layernorm.weight"], c["eps"])
    logits = aq(_norm(h, m.norm, c["eps"])) @ m.emb.T
    if c["final_cap"]:
        logits = np.tanh(logits / c["final_cap"]) * c["final_cap"]
    return logits


def greedy(m, ids, n_new):
    return R.greedy(m, ids, n_new, forward_fn=forward)
