"""Independent numpy reference of the gpt-oss decoder (tests only).

Written from the published definition (Hugging Face transformers modeling_gpt_oss.py,
configuration_gpt_oss.py and the rope utilities' YaRN; transformers' MXFP4 integration for
the checkpoint layout; llama.cpp's GGUF names and keys), sharing no code with the C++ engine.
float64 throughout. Only the file readers (safetensors, GGUF dequantization incl. MXFP4) and
the RMSNorm one-liner come from ref_model.

    m = load(path)              # HF directory or .gguf
    logits = forward(m, ids)    # [n_tokens, vocab]

The block (every layer a mixture of experts):
    h = embed(ids)
    per layer:
        x = norm_in(h); q, k, v = x W^T + b (all biased); RoPE (halves pairing) with YaRN
        frequencies, cos/sin multiplied by the attention factor 0.1 ln(factor) + 1;
        per head: softmax over [q.k / sqrt(d) (causal; sliding layers: q - k < window), sink_h],
        the sink's column dropped; h = h + (attn W_o^T + b_o)
        x = norm_post_attn(h); logits_r = x W_r^T + b_r; top-k of logits_r, softmax over those k;
        expert e: gu = x @ gate_up_proj[e] + gate_up_proj_bias[e] (input major!),
        gate = gu[::2], up = gu[1::2], gate = min(gate, limit), up = clip(up, -limit, limit),
        y = ((up + 1) * gate * sigmoid(1.702 gate)) @ down_proj[e] + down_proj_bias[e]
        h = h + sum_e w_e y_e
    logits = norm(h) @ lm_head^T
layer_types from config.json (transformers' default: sliding on even layers); GGUF: llama.cpp's
swa pattern 2 (even layers sliding). HF MXFP4 experts: *_blocks [E, rows, cols/32, 16] and
*_scales [E, rows, cols/32], rows = outputs; byte j of a group holds element 2j (low nibble) and
2j+1 (high), value E2M1 * 2^(scale - 127); the dense parameter is its transpose.
GGUF: ffn_{gate,up,down}_exps [E, out, in] (gate and up split), ffn_*_exps.bias [E, n],
attn_sinks, post_attention_norm as the FFN's input norm; YaRN truncate is not stored in GGUF:
gpt-oss's config says false.
"""

import json
import math
import os
import types

import numpy as np

import ref_model as R


class GptOss:
    def __init__(self, cfg, emb, layers, norm, head):
        self.cfg, self.emb, self.layers, self.norm, self.head = cfg, emb, layers, norm, head


def _hf_mxfp4(blocks, scales):
    """[E, rows, G, 16] u8 + [E, rows, G] u8 -> dense [E, cols, rows] (the parameter's layout)."""
    b = blocks.astype(np.int64)
    E, rows, G, _ = b.shape
    vals = np.empty((E, rows, G, 32))
    vals[..., 0::2] = R.e2m1(b & 15)
    vals[..., 1::2] = R.e2m1(b >> 4)
    vals *= np.exp2(scales.astype(np.float64) - 127.0)[..., None]
    return vals.reshape(E, rows, G * 32).transpose(0, 2, 1)


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    assert cj["model_type"] == "gpt_oss", cj["model_type"]
    t = {}
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            t.update(R.read_safetensors(os.path.join(path, fn))[0])
    n = cj["num_hidden_layers"]
    rs = cj.get("rope_scaling") or {}
    cfg = dict(
        n_layers=n, heads=cj["num_attention_heads"], kv_heads=cj["num_key_value_heads"], head_dim=cj["head_dim"],
        eps=cj.get("rms_norm_eps", 1e-5), rope_theta=cj.get("rope_theta", 150000.0),
        n_expert=cj["num_local_experts"], k=cj["num_experts_per_tok"], limit=cj.get("swiglu_limit", 7.0),
        window=cj.get("sliding_window"),
        layer_types=cj.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)],
        yarn=None if rs.get("rope_type", rs.get("type")) != "yarn" else dict(
            factor=rs["factor"], orig=rs.get("original_max_position_embeddings", cj["max_position_embeddings"]),
            beta_fast=rs.get("beta_fast", 32.0), beta_slow=rs.get("beta_slow", 1.0),
            truncate=rs.get("truncate", True), attention_factor=rs.get("attention_factor")))
    layers = []
    for i in range(n):
        p = "model.layers.%d." % i
        a, e = p + "self_attn.", p + "mlp.experts."
        L = dict(attn_norm=t[p + "input_layernorm.weight"], ffn_norm=t[p + "post_attention_layernorm.weight"],
                 sinks=t[a + "sinks"], router=t[p + "mlp.router.weight"], router_b=t[p + "mlp.router.bias"],
                 gate_up_b=t[e + "gate_up_proj_bias"], down_b=t[e + "down_proj_bias"])
        for proj in "qkvo":
            L["w" + proj], L["b" + proj] = t[a + proj + "_proj.weight"], t[a + proj + "_proj.bias"]
        for proj in ("gate_up_proj", "down_proj"):
            if e + proj + "_blocks" in t:
                L[proj] = _hf_mxfp4(t[e + proj + "_blocks"], t[e + proj + "_scales"])
            else:
                L[proj] = t[e + proj]
        layers.append(L)
    emb = t["model.embed_tokens.weight"]
    head = emb if cj.get("tie_word_embeddings", False) else t["lm_head.weight"]
    return GptOss(cfg, emb, layers, t["model.norm.weight"], head)


def load_gguf(path):
    meta, t, _ = R.read_gguf(path)
    a = meta["general.architecture"]
    assert a == "gpt-oss", a
    n = meta[a + ".block_count"]
    heads = meta[a + ".attention.head_count"]
    yarn = None
    if meta.get(a + ".rope.scaling.type") == "yarn":
        yarn = dict(factor=meta[a + ".rope.scaling.factor"], orig=meta[a + ".rope.scaling.original_context_length"],
                    beta_fast=meta.get(a + ".rope.scaling.yarn_beta_fast", 32.0),
                    beta_slow=meta.get(a + ".rope.scaling.yarn_beta_slow", 1.0), truncate=False,
                    attention_factor=meta.get(a + ".rope.scaling.attn_factor"))
    cfg = dict(
        n_layers=n, heads=heads, kv_heads=meta[a + ".attention.head_count_kv"], head_dim=meta[a + ".attention.key_length"],
        eps=meta[a + ".attention.layer_norm_rms_epsilon"], rope_theta=meta[a + ".rope.freq_base"],
        n_expert=meta[a + ".expert_count"], k=meta[a + ".expert_used_count"], limit=7.0,
        window=meta[a + ".attention.sliding_window"],
        layer_types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)], yarn=yarn)
    layers = []
    for i in range(n):
        b = "blk.%d." % i
        gate, up = t[b + "ffn_gate_exps.weight"], t[b + "ffn_up_exps.weight"]  # [E, F, D]
        E, F, D = gate.shape
        gate_up = np.empty((E, D, 2 * F))  # back to HF's interleaved, input-major layout
        gate_up[..., 0::2], gate_up[..., 1::2] = gate.transpose(0, 2, 1), up.transpose(0, 2, 1)
        gate_up_b = np.empty((E, 2 * F))
        gate_up_b[:, 0::2], gate_up_b[:, 1::2] = t[b + "ffn_gate_exps.bias"], t[b + "ffn_up_exps.bias"]
        L = dict(attn_norm=t[b + "attn_norm.weight"], ffn_norm=t[b + "post_attention_norm.weight"],
                 sinks=t[b + "attn_sinks.weight"], router=t[b + "ffn_gate_inp.weight"], router_b=t[b + "ffn_gate_inp.bias"],
                 gate_up_proj=gate_up, gate_up_b=gate_up_b, down_proj=t[b + "ffn_down_exps.weight"].transpose(0, 2, 1),
                 down_b=t[b + "ffn_down_exps.bias"])
        for proj, name in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
            L["w" + proj], L["b" + proj] = t[b + name + ".weight"], t[b + name + ".bias"]
        layers.append(L)
    emb = t["token_embd.weight"]
    return GptOss(cfg, emb, layers, t["output_norm.weight"], t.get("output.weight", emb))


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)


def inv_freq(c):
    """(inverse frequencies [d/2], attention factor): transformers' default or YaRN parameters
    (YaRN by ref_model's implementation of transformers' _compute_yarn_parameters)."""
    d, base = c["head_dim"], c["rope_theta"]
    y = c["yarn"]
    if y is None:
        return 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d), 1.0
    sc = dict(factor=y["factor"], original_max_position_embeddings=y["orig"],
              attention_factor=y["attention_factor"] or None, beta_fast=y["beta_fast"],
              beta_slow=y["beta_slow"], truncate=y["truncate"])
    return R._rope_yarn(types.SimpleNamespace(rope_theta=base, context_length=y["orig"]), sc, d)


def _rope(x, pos, inv, att):
    ang = pos[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], -1)) * att
    sin = np.sin(np.concatenate([ang, ang], -1)) * att
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def route(logits, k):
    """One token: the k largest router logits (ties to the lower index), softmax over them."""
    top = np.argsort(-logits, kind="stable")[:k]
    w = np.exp(logits[top] - logits[top].max())
    return top, w / w.sum()


def act_q8(x):
    """How an integer matmul path sees its input: blocks of 32, d = max|x| / 127, x ->
    round(x / d) * d. Not part of the model; it lets a test tell the engine's 8-bit activations
    (its MXFP4 kernels' input, as llama.cpp's) apart from an error in the architecture."""
    b = x.reshape(-1, 32)
    d = np.abs(b).max(-1, keepdims=True) / 127.0
    safe = np.where(d == 0, 1.0, d)
    return np.where(d == 0, 0.0, np.round(b / safe) * d).reshape(x.shape)


def _experts(c, L, x, aq, gaps):
    out = np.zeros_like(x)
    lim = c["limit"]
    for t in range(x.shape[0]):
        logits = x[t] @ L["router"].T + L["router_b"]
        if gaps is not None:  # how far the k-th choice is from the first one left out
            top = np.sort(logits)[::-1]
            gaps.append((float(top[c["k"] - 1] - top[c["k"]]), t))
        experts, weights = route(logits, c["k"])
        for e, w in zip(experts, weights):
            gu = aq(x[t]) @ L["gate_up_proj"][e] + L["gate_up_b"][e]
            gate, up = np.minimum(gu[0::2], lim), np.clip(gu[1::2], -lim, lim)
            glu = gate / (1.0 + np.exp(-1.702 * gate))
            out[t] += w * (aq((up + 1) * glu) @ L["down_proj"][e] + L["down_b"][e])
    return out


def forward(m, ids, sinks=True, window=True, experts_act_q8=False, router_gaps=None):
    """sinks / window False: the same model without its attention sinks / sliding windows (to
    show that a comparison exercises them). experts_act_q8: the experts' inputs through act_q8.
    router_gaps (list, optional): gets (gap between the k-th and (k+1)-th router logit, token)
    for every layer and token."""
    c = m.cfg
    aq = act_q8 if experts_act_q8 else (lambda v: v)
    ids = np.asarray(ids)
    n, d, H, KV = len(ids), c["head_dim"], c["heads"], c["kv_heads"]
    pos = np.arange(n, dtype=np.float64)
    inv, att = inv_freq(c)
    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    h = m.emb[ids].astype(np.float64)
    for li, L in enumerate(m.layers):
        visible = ki <= qi
        if window and c["layer_types"][li] == "sliding_attention":
            visible = visible & (qi - ki < c["window"])
        x = R.rms_norm(h, L["attn_norm"], c["eps"])
        q = (x @ L["wq"].T + L["bq"]).reshape(n, H, d)
        k = (x @ L["wk"].T + L["bk"]).reshape(n, KV, d)
        v = (x @ L["wv"].T + L["bv"]).reshape(n, KV, d)
        q, k = _rope(q, pos, inv, att), _rope(k, pos, inv, att)
        out = np.zeros((n, H, d))
        for hh in range(H):
            kv = hh // (H // KV)
            s = np.where(visible, (q[:, hh] @ k[:, kv].T) / math.sqrt(d), -np.inf)
            sink = np.full((n, 1), L["sinks"][hh] if sinks else -np.inf)
            full = np.concatenate([s, sink], axis=1)
            p = np.exp(full - full.max(-1, keepdims=True))
            p = p / p.sum(-1, keepdims=True)
            out[:, hh] = p[:, :n] @ v[:, kv]
        h = h + out.reshape(n, H * d) @ L["wo"].T + L["bo"]
        h = h + _experts(c, L, R.rms_norm(h, L["ffn_norm"], c["eps"]), aq, router_gaps)
    return R.rms_norm(h, m.norm, c["eps"]) @ m.head.T


def greedy(m, ids, n_new):
    return R.greedy(m, ids, n_new, forward_fn=forward)
