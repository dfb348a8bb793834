"""Independent numpy reference of the Gemma 4 text decoder (tests only).

Written from the published definition (Hugging Face transformers models/gemma4/modeling_gemma4.py,
configuration_gemma4.py, convert_gemma4_weights.py and modeling_rope_utils.py's "proportional"
RoPE; llama.cpp's src/models/gemma4-iswa.cpp and its converter's Gemma4Model in
conversion/gemma.py, gguf-py constants for the GGUF names and keys), sharing no code with the
C++ engine. float64 throughout. Only the file readers (safetensors, GGUF dequantization) come
from ref_model.

    m = load(path)                    # HF directory (Gemma4ForConditionalGeneration as released,
                                      # or a text-only Gemma4ForCausalLM) or a .gguf (llama.cpp)
    logits = forward(m, ids)          # [n_tokens, vocab]
    forward(m, ids, kv_share=False, proportional=False, k_eq_v="normed", v_norm=False,
            layer_scalar=False, ple=False, moe=False, window=False)
                                      # each switch replaces one piece by a plausible mistake,
                                      # so a test can show that piece matters (see forward)
    kv_source(m.cfg)                  # layer -> layer whose K/V it attends to
    readers(m.cfg)                    # owning layer -> the layers that attend to its K/V
    forward(m, ids, kv_keep={4: keep})  # evict from layer 4's cache once, for all its readers

The model (HF names; every RMSNorm is x / sqrt(mean(x^2) + eps) * w -- NOT Gemma 2/3's (1 + w);
the converter adds nothing, so GGUF stores the same w):
    h = embed(ids) * sqrt(hidden)
    PLE (when hidden_size_per_layer_input P > 0), per token, per layer l:
        tok_l  = embed_tokens_per_layer(ids)[l*P:(l+1)*P] * sqrt(P)
        ctx_l  = norm(per_layer_model_projection(h) / sqrt(hidden))[l*P:(l+1)*P]  (norm over P)
        ple_l  = (ctx_l + tok_l) / sqrt(2)
    per layer l (sliding or full, from layer_types):
        x = norm_in(h)
        q = q_norm(q_proj(x) per head);  RoPE
        if l reads its own KV:  k = k_proj(x); v = v_proj(x), or on full layers with
            attention_k_eq_v the raw k_proj(x) (before k_norm and RoPE); k = RoPE(k_norm(k));
            v = rms(v) (no weight)
        else (l >= n_layers - num_kv_shared_layers): k, v of the last non-shared layer of the
            same type (sliding/full), already normed and rotated
        a = softmax(q.k * 1.0 + causal/sliding mask) v   (scale 1.0; no soft-cap; GQA)
        h = h + post_attention_norm(o_proj(a))
        f = post_ffn_norm(mlp(pre_ffn_norm(h)))                          dense layers
        f = post_ffn_norm(post_ffn_norm_1(mlp(pre_ffn_norm(h)))
                          + post_ffn_norm_2(moe(pre_ffn_norm_2(h), router(h))))   MoE layers
        h = h + f
        if PLE: h = h + post_per_layer_input_norm(per_layer_projection(
                        gelu_tanh(per_layer_input_gate(h)) * ple_l))
        h = h * layer_scalar
    logits = norm(h) @ embed.T; tanh soft-cap final_logit_softcapping
    mlp(x) = down(gelu_tanh(gate(x)) * up(x)); on KV-shared layers with use_double_wide_mlp the
        intermediate size is doubled
    router(h): p = softmax(proj(rms(h) * scale / sqrt(hidden))); top_k_experts largest,
        renormalised to sum 1, then times per_expert_scale[e]
    moe(x) = sum_e w_e * down_e(gelu_tanh(gate_e(x)) * up_e(x)); gate_up_proj [E, 2I, H] holds
        gate in rows [0, I), up in [I, 2I)
    RoPE (rotate_half: coordinate i pairs with i + d/2): sliding layers d = head_dim, theta
        rope_parameters.sliding_attention.rope_theta, inv_i = theta^(-2i/d); full layers
        "proportional": d = global_head_dim, inv_i = theta^(-2i/d) for i < int(p * d // 2) and 0
        (no rotation) for the rest. GGUF expresses that as rope.dimension_count = d and the
        rope_freqs tensor [d/2] = 1 then 1e30 (inv_i / rope_freqs_i).
"""

import json
import math
import os

import numpy as np

import ref_model as R


class Gemma4Model:
    def __init__(self, cfg, g, layers):
        self.cfg, self.g, self.layers = cfg, g, layers


# ----------------------------------------------------------------------------------------------
# Names. HF (within a layer, after the "model.language_model.layers.N." or "model.layers.N."
# prefix) -> (our key, GGUF name within "blk.N.").

_LAYER = [
    ("input_layernorm.weight", "attn_norm", "attn_norm.weight"),
    ("self_attn.q_proj.weight", "wq", "attn_q.weight"),
    ("self_attn.k_proj.weight", "wk", "attn_k.weight"),
    ("self_attn.v_proj.weight", "wv", "attn_v.weight"),
    ("self_attn.o_proj.weight", "wo", "attn_output.weight"),
    ("self_attn.q_norm.weight", "q_norm", "attn_q_norm.weight"),
    ("self_attn.k_norm.weight", "k_norm", "attn_k_norm.weight"),
    ("post_attention_layernorm.weight", "post_attn_norm", "post_attention_norm.weight"),
    ("pre_feedforward_layernorm.weight", "ffn_norm", "ffn_norm.weight"),
    ("mlp.gate_proj.weight", "gate", "ffn_gate.weight"),
    ("mlp.up_proj.weight", "up", "ffn_up.weight"),
    ("mlp.down_proj.weight", "down", "ffn_down.weight"),
    ("post_feedforward_layernorm.weight", "post_ffn_norm", "post_ffw_norm.weight"),
    ("layer_scalar", "layer_scalar", "layer_output_scale.weight"),
    # MoE
    ("router.proj.weight", "router", "ffn_gate_inp.weight"),
    ("router.scale", "router_scale", "ffn_gate_inp.scale"),
    ("router.per_expert_scale", "expert_scale", "ffn_down_exps.scale"),
    ("experts.gate_up_proj", "gate_up_exps", "ffn_gate_up_exps.weight"),
    ("experts.down_proj", "down_exps", "ffn_down_exps.weight"),
    ("pre_feedforward_layernorm_2.weight", "ffn_norm_2", "pre_ffw_norm_2.weight"),
    ("post_feedforward_layernorm_1.weight", "post_ffn_norm_1", "post_ffw_norm_1.weight"),
    ("post_feedforward_layernorm_2.weight", "post_ffn_norm_2", "post_ffw_norm_2.weight"),
    # per-layer embeddings
    ("per_layer_input_gate.weight", "ple_gate", "inp_gate.weight"),
    ("per_layer_projection.weight", "ple_proj", "proj.weight"),
    ("post_per_layer_input_norm.weight", "ple_norm", "post_norm.weight"),
]
# Keys a KV-shared layer does not use (HF ignores them on load if a checkpoint has them).
_KV_KEYS = ("wk", "wv", "k_norm")

_GLOBAL = [
    ("embed_tokens.weight", "emb", "token_embd.weight"),
    ("norm.weight", "norm", "output_norm.weight"),
    ("embed_tokens_per_layer.weight", "ple_emb", "per_layer_token_embd.weight"),
    ("per_layer_model_projection.weight", "ple_model_proj", "per_layer_model_proj.weight"),
    ("per_layer_projection_norm.weight", "ple_proj_norm", "per_layer_proj_norm.weight"),
]


def first_shared(cfg):
    return cfg["n_layers"] - cfg["n_kv_shared"]


def kv_source(cfg):
    """Layer l -> the layer whose K/V l attends to: itself, or for the last num_kv_shared_layers
    layers the last layer before them with the same type (HF Gemma4TextAttention's
    store_full_length_kv / is_kv_shared_layer)."""
    f = first_shared(cfg)
    types = cfg["layer_types"]
    out = []
    for i, t in enumerate(types):
        if i < f:
            out.append(i)
        else:
            src = [j for j in range(f) if types[j] == t]
            if not src:
                raise ValueError("gemma4: shared layer %d has no earlier %s layer" % (i, t))
            out.append(src[-1])
    return out


def readers(cfg):
    """Owning layer -> every layer that attends to its K/V (itself first)."""
    out = {}
    for i, s in enumerate(kv_source(cfg)):
        out.setdefault(s, []).append(i)
    return out


def _layer_shape(cfg, i):
    """(head_dim, kv_heads, sliding) of layer i."""
    sliding = cfg["layer_types"][i] == "sliding_attention"
    if sliding:
        return cfg["head_dim"], cfg["kv_heads"], True
    return cfg["head_dim_full"], cfg["kv_heads_full"], False


# ----------------------------------------------------------------------------------------------
# Loading


def _text_config(cj):
    if "text_config" in cj:
        tc = dict(cj["text_config"])
        tc.setdefault("tie_word_embeddings", cj.get("tie_word_embeddings", True))
        return tc
    return cj


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    tc = _text_config(cj)
    assert tc.get("model_type", "gemma4_text") in ("gemma4_text", "gemma4"), tc.get("model_type")
    n = tc["num_hidden_layers"]
    layer_types = list(tc.get("layer_types") or
                       ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)])
    layer_types[-1] = "full_attention"  # configuration_gemma4 forces the last layer to full
    rp = tc.get("rope_parameters") or {}
    rs, rf = rp.get("sliding_attention") or {}, rp.get("full_attention") or {}
    k_eq_v = bool(tc.get("attention_k_eq_v", False))
    kv = tc.get("num_key_value_heads", 4)
    gkv = tc.get("num_global_key_value_heads")
    ff = tc.get("intermediate_size", 9216)
    n_shared = tc.get("num_kv_shared_layers", 0) or 0
    fs = n - n_shared
    double = bool(tc.get("use_double_wide_mlp", False))
    cfg = dict(
        n_layers=n, hidden=tc.get("hidden_size", 2304), heads=tc.get("num_attention_heads", 8),
        kv_heads=kv, kv_heads_full=(gkv if (k_eq_v and gkv) else kv),
        head_dim=tc.get("head_dim", 256), head_dim_full=tc.get("global_head_dim") or tc.get("head_dim", 256),
        eps=tc.get("rms_norm_eps", 1e-6),
        theta_swa=float(rs.get("rope_theta", 10000.0)), theta_full=float(rf.get("rope_theta", 1e6)),
        rope_full=rf.get("rope_type", "proportional"), partial_full=float(rf.get("partial_rotary_factor", 0.25)),
        window=tc.get("sliding_window", 512), layer_types=layer_types,
        final_cap=tc.get("final_logit_softcapping"), ple_dim=tc.get("hidden_size_per_layer_input", 0) or 0,
        n_kv_shared=n_shared, k_eq_v=k_eq_v,
        n_ff=[ff * (2 if double and i >= fs > 0 else 1) for i in range(n)],
        moe=bool(tc.get("enable_moe_block", False)), n_expert=tc.get("num_experts") or 0,
        top_k=tc.get("top_k_experts") or 0, n_ff_exp=tc.get("moe_intermediate_size") or 0,
        vocab=tc.get("vocab_size", 262144), rope_freqs=None)
    t = {}
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            t.update(R.read_safetensors(os.path.join(path, fn))[0])
    pre = "model.language_model." if any(k.startswith("model.language_model.") for k in t) else "model."
    g = {}
    for hf, key, _ in _GLOBAL:
        if pre + hf in t:
            g[key] = t[pre + hf]
    g["head"] = t["lm_head.weight"] if ("lm_head.weight" in t and not tc.get("tie_word_embeddings", True)) else g["emb"]
    layers = []
    for i in range(n):
        p = "%slayers.%d." % (pre, i)
        L = {key: t[p + hf] for hf, key, _ in _LAYER if p + hf in t}
        if i >= fs:
            for k in _KV_KEYS:
                L.pop(k, None)
        if k_eq_v and layer_types[i] == "full_attention":
            L.pop("wv", None)  # HF builds no v_proj there (use_alternative_attention)
        layers.append(L)
    return Gemma4Model(cfg, g, layers)


def _arr(v, n):
    return list(v) if isinstance(v, list) else [v] * n


def load_gguf(path):
    meta, t, _ = R.read_gguf(path)
    a = meta["general.architecture"]
    assert a == "gemma4", a
    n = meta[a + ".block_count"]
    swa = meta.get(a + ".attention.sliding_window_pattern")
    swa = _arr(swa, n) if isinstance(swa, list) else [(i + 1) % 6 != 0 for i in range(n)]
    layer_types = ["sliding_attention" if s else "full_attention" for s in swa]
    heads = meta[a + ".attention.head_count"]
    kvs = _arr(meta.get(a + ".attention.head_count_kv", heads), n)
    full = [i for i in range(n) if not swa[i]]
    sl = [i for i in range(n) if swa[i]]
    hd_full = meta[a + ".attention.key_length"]
    hd_swa = meta.get(a + ".attention.key_length_swa", hd_full)
    n_rot = meta.get(a + ".rope.dimension_count", hd_full)
    assert n_rot == hd_full, "gemma4: rope.dimension_count %d != key_length %d" % (n_rot, hd_full)
    assert meta.get(a + ".rope.dimension_count_swa", hd_swa) == hd_swa
    n_shared = meta.get(a + ".attention.shared_kv_layers", 0)
    ff = _arr(meta[a + ".feed_forward_length"], n)
    cfg = dict(
        n_layers=n, hidden=meta[a + ".embedding_length"], heads=heads,
        kv_heads=kvs[sl[0]] if sl else kvs[0], kv_heads_full=kvs[full[0]] if full else kvs[0],
        head_dim=hd_swa, head_dim_full=hd_full, eps=meta.get(a + ".attention.layer_norm_rms_epsilon", 1e-6),
        theta_swa=float(meta.get(a + ".rope.freq_base_swa", 10000.0)),
        theta_full=float(meta.get(a + ".rope.freq_base", 1e6)),
        rope_full="freq_factors", partial_full=None,
        window=meta.get(a + ".attention.sliding_window", 512), layer_types=layer_types,
        final_cap=meta.get(a + ".final_logit_softcapping"),
        ple_dim=meta.get(a + ".embedding_length_per_layer_input", 0),
        n_kv_shared=n_shared, k_eq_v=False, n_ff=ff,
        moe=meta.get(a + ".expert_count", 0) > 0, n_expert=meta.get(a + ".expert_count", 0),
        top_k=meta.get(a + ".expert_used_count", 0), n_ff_exp=meta.get(a + ".expert_feed_forward_length", 0),
        vocab=t["token_embd.weight"].shape[0], rope_freqs=t.get("rope_freqs.weight"))
    if cfg["rope_freqs"] is not None:  # only for the proportional=False switch
        cfg["partial_full"] = 2.0 * int(np.sum(cfg["rope_freqs"] < 1e29)) / hd_full
    g = {key: t[gg] for _, key, gg in _GLOBAL if gg in t}
    g["head"] = t.get("output.weight", g["emb"])
    fs = n - n_shared
    layers = []
    for i in range(n):
        b = "blk.%d." % i
        L = {key: t[b + gg] for _, key, gg in _LAYER if b + gg in t}
        if i >= fs:
            for k in _KV_KEYS:
                L.pop(k, None)
        elif not swa[i] and "wv" not in L:
            cfg["k_eq_v"] = True  # llama.cpp: no attn_v on a full layer means V = K projection
        layers.append(L)
    return Gemma4Model(cfg, g, layers)


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)


# ----------------------------------------------------------------------------------------------
# Forward


def _rms(x, eps, w=None):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def inv_freq(cfg, sliding, proportional=True):
    """Angular frequency per rotate_half pair (i, i + d/2), i < d/2, of a layer type.
    proportional=False (full layers only): the usual partial-rotary mistake -- rotate the first
    p*d coordinates with frequencies spread over p*d (pairs (i, i + p*d/2))."""
    if sliding:
        d = cfg["head_dim"]
        return cfg["theta_swa"] ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    d = cfg["head_dim_full"]
    base = cfg["theta_full"]
    if cfg["rope_full"] == "freq_factors":  # GGUF: rope_freqs divides each band's frequency
        inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ff = cfg["rope_freqs"]
        return inv / ff if ff is not None else inv
    if cfg["rope_full"] == "proportional":
        n_rot = int(cfg["partial_full"] * d // 2)
        inv = np.zeros(d // 2)
        inv[:n_rot] = base ** (-np.arange(0, 2 * n_rot, 2, dtype=np.float64) / d)
        return inv
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # "default"


def _rope(x, pos, inv):
    d = x.shape[-1]
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


def _rope_partial_wrong(x, pos, cfg):
    # The mistake the proportional=False switch models: rotary_dim = p * d, halves within it.
    d = x.shape[-1]
    p = cfg["partial_full"] if cfg["partial_full"] is not None else 0.25
    rd = int(d * p)
    inv = cfg["theta_full"] ** (-np.arange(0, rd, 2, dtype=np.float64) / rd)
    return np.concatenate([_rope(x[..., :rd], pos, inv), x[..., rd:]], -1)


def route(c, L, h_t):
    """One token's (experts, weights) from the residual stream h_t (Gemma4TextRouter).
    Ties (never seen with random weights) go to the lower index."""
    x = _rms(h_t, c["eps"]) * L["router_scale"] / math.sqrt(c["hidden"])
    s = L["router"] @ x
    p = np.exp(s - s.max())
    p /= p.sum()
    top = np.argsort(-p, kind="stable")[:c["top_k"]]
    w = p[top] / p[top].sum()
    return top, w * L["expert_scale"][top]


def _moe(c, L, h, x, chosen):
    out = np.zeros_like(x)
    I2 = L["gate_up_exps"].shape[1]
    for t in range(x.shape[0]):
        experts, weights = route(c, L, h[t])
        chosen.update(int(e) for e in experts)
        for e, w in zip(experts, weights):
            gu = L["gate_up_exps"][e] @ x[t]
            out[t] += w * (L["down_exps"][e] @ (_gelu_tanh(gu[:I2 // 2]) * gu[I2 // 2:]))
    return out


def forward(m, ids, kv_share=True, proportional=True, k_eq_v="raw", v_norm=True, layer_scalar=True,
            ple=True, moe=True, window=True, chosen=None, kv_keep=None):
    """Logits [n_tokens, vocab] (float64) for one causal sequence from position 0.

    Switches (defaults = the model); each False/alternative is a plausible mistake:
      kv_share=False     shared layers recompute K/V from their own input with the source layer's
                         weights instead of reading the source layer's K/V
      proportional=False full layers rotate the first partial*d coordinates with frequencies
                         spread over that sub-dimension (ordinary partial RoPE)
      k_eq_v="normed"    on K=V layers V is the k_norm-ed, rotated K instead of the raw projection
      v_norm=False       no weightless RMS norm on V
      layer_scalar=False the per-layer output scalar is ignored
      ple=False          no per-layer embeddings
      moe=False          MoE layers drop the expert branch (dense MLP only)
      window=False       sliding layers attend to the whole prefix
    chosen (list, optional): gets per MoE layer the set of experts some token was routed to.
    kv_keep (dict, optional): owning layer -> bool [n] (per key) or [n, n] (query x key) of the
        cache entries that survive an eviction. It applies to that layer and to every layer that
        reads its K/V (readers(cfg)): a shared cache is evicted once, for all of its readers.
        Every query must keep at least one key (inside its window on sliding layers).
    """
    c, g = m.cfg, m.g
    ids = np.asarray(ids)
    n, H, E = len(ids), c["heads"], c["hidden"]
    pos = np.arange(n, dtype=np.float64)
    causal = np.tril(np.ones((n, n), dtype=bool))
    dist = np.arange(n)[:, None] - np.arange(n)[None, :]
    h = g["emb"][ids] * math.sqrt(E)

    P = c["ple_dim"]
    ple_in = None
    if P and ple:
        nl = c["n_layers"]
        tok = g["ple_emb"][ids].reshape(n, nl, P) * math.sqrt(P)
        ctx = (h @ g["ple_model_proj"].T / math.sqrt(E)).reshape(n, nl, P)
        ctx = _rms(ctx, c["eps"], g["ple_proj_norm"])
        ple_in = (ctx + tok) / math.sqrt(2.0)

    src = kv_source(c)
    kv = {}  # layer -> (k, v) after norms and RoPE, for the layers that share it
    for i, L in enumerate(m.layers):
        d, KV, sliding = _layer_shape(c, i)
        inv = inv_freq(c, sliding)

        def rope(x):
            if not sliding and not proportional:
                return _rope_partial_wrong(x, pos, c)
            return _rope(x, pos, inv)

        x = _rms(h, c["eps"], L["attn_norm"])
        q = rope(_rms((x @ L["wq"].T).reshape(n, H, d), c["eps"], L["q_norm"]))
        s_i = src[i]
        if s_i == i or not kv_share:
            W = m.layers[s_i]
            kraw = (x @ W["wk"].T).reshape(n, KV, d)
            k = rope(_rms(kraw, c["eps"], W["k_norm"]))
            if "wv" in W:
                v = (x @ W["wv"].T).reshape(n, KV, d)
            else:
                v = kraw if k_eq_v == "raw" else k
            if v_norm:
                v = _rms(v, c["eps"])
            if s_i == i:
                kv[i] = (k, v)
        else:
            k, v = kv[s_i]
        mask = causal & (dist < c["window"]) if (sliding and window) else causal
        if kv_keep is not None and s_i in kv_keep:
            mask = mask & np.broadcast_to(np.asarray(kv_keep[s_i], dtype=bool), (n, n))
        out = np.zeros((n, H, d))
        for hh in range(H):
            kh = hh // (H // KV)
            s = np.where(mask, q[:, hh] @ k[:, kh].T, -np.inf)  # scale 1.0
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, kh]
        h = h + _rms(out.reshape(n, H * d) @ L["wo"].T, c["eps"], L["post_attn_norm"])

        x = _rms(h, c["eps"], L["ffn_norm"])
        f = (_gelu_tanh(x @ L["gate"].T) * (x @ L["up"].T)) @ L["down"].T
        if "router" in L:
            f = _rms(f, c["eps"], L["post_ffn_norm_1"])
            if moe:
                layer_chosen = set()
                f2 = _moe(c, L, h, _rms(h, c["eps"], L["ffn_norm_2"]), layer_chosen)
                f = f + _rms(f2, c["eps"], L["post_ffn_norm_2"])
                if chosen is not None:
                    chosen.append(layer_chosen)
        h = h + _rms(f, c["eps"], L["post_ffn_norm"])

        if ple_in is not None:
            y = _gelu_tanh(h @ L["ple_gate"].T) * ple_in[:, i]
            h = h + _rms(y @ L["ple_proj"].T, c["eps"], L["ple_norm"])
        if layer_scalar and "layer_scalar" in L:
            h = h * L["layer_scalar"].reshape(-1)[0]
    logits = _rms(h, c["eps"], g["norm"]) @ g["head"].T
    if c["final_cap"]:
        logits = np.tanh(logits / c["final_cap"]) * c["final_cap"]
    return logits


def greedy(m, ids, n_new):
    return R.greedy(m, ids, n_new, forward_fn=forward)
