"""Independent numpy reference of the Qwen3-MoE decoder (tests only).

Written from the published definition (Hugging Face transformers modeling_qwen3_moe.py and
configuration_qwen3_moe.py; llama.cpp's GGUF names for its tensors and keys), sharing no code
with the C++ engine. float64 throughout. Only the file readers (safetensors, GGUF
dequantization) and the RMSNorm one-liner come from ref_model.

    m = load(path)              # HF directory or .gguf
    logits = forward(m, ids)    # [n_tokens, vocab]
    forward(m, ids, chosen=[])  # also lists, per MoE layer, the experts the tokens chose

The block (Qwen3 attention: q/k RMSNorm per head before RoPE, halves pairing, GQA):
    h = embed(ids)
    per layer:  h = h + o(attn(norm_in(h)));  h = h + ffn(norm_post_attn(h))
    logits = norm(h) @ lm_head.T
    ffn, dense layers (in mlp_only_layers, or (l + 1) % decoder_sparse_step != 0):
        down(silu(gate(x)) * up(x))
    ffn, MoE layers, per token:
        p = softmax(router(x)) over num_experts; S = the num_experts_per_tok largest p;
        w_e = p_e (/ sum_S p when norm_topk_prob); sum_{e in S} w_e * down_e(silu(gate_e(x)) * up_e(x))
GGUF (llama.cpp): blk.N.ffn_gate_inp [n_expert, n_embd] is the router; ffn_{gate,up,down}_exps
are [n_expert, out, in] stacks; llama.cpp's qwen3moe graph always renormalises (no key), unless
a <arch>.expert_weights_norm key says otherwise.
"""

import json
import math
import os

import numpy as np

import ref_model as R


class MoeModel:
    def __init__(self, cfg, emb, layers, norm, head):
        self.cfg, self.emb, self.layers, self.norm, self.head = cfg, emb, layers, norm, head


def _moe_layer(cfg, i):
    return cfg["n_expert"] > 0 and i not in cfg["mlp_only"] and (i + 1) % cfg["sparse_step"] == 0


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    assert cj["model_type"] == "qwen3_moe", cj["model_type"]
    t = {}
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            t.update(R.read_safetensors(os.path.join(path, fn))[0])
    cfg = dict(
        n_layers=cj["num_hidden_layers"], heads=cj["num_attention_heads"], kv_heads=cj["num_key_value_heads"],
        head_dim=cj.get("head_dim") or cj["hidden_size"] // cj["num_attention_heads"], eps=cj.get("rms_norm_eps", 1e-6),
        rope_theta=cj.get("rope_theta", 10000.0), n_expert=cj.get("num_experts", 0), k=cj.get("num_experts_per_tok", 0),
        norm_topk=cj.get("norm_topk_prob", False), sparse_step=cj.get("decoder_sparse_step", 1),
        mlp_only=cj.get("mlp_only_layers") or [])
    layers = []
    for i in range(cfg["n_layers"]):
        p = "model.layers.%d." % i
        L = dict(attn_norm=t[p + "input_layernorm.weight"], ffn_norm=t[p + "post_attention_layernorm.weight"],
                 wq=t[p + "self_attn.q_proj.weight"], wk=t[p + "self_attn.k_proj.weight"],
                 wv=t[p + "self_attn.v_proj.weight"], wo=t[p + "self_attn.o_proj.weight"],
                 q_norm=t[p + "self_attn.q_norm.weight"], k_norm=t[p + "self_attn.k_norm.weight"])
        if _moe_layer(cfg, i):
            L["router"] = t[p + "mlp.gate.weight"]
            for proj in ("gate", "up", "down"):
                L[proj + "_exps"] = np.stack([t[p + "mlp.experts.%d.%s_proj.weight" % (e, proj)]
                                              for e in range(cfg["n_expert"])])
        else:
            L.update(gate=t[p + "mlp.gate_proj.weight"], up=t[p + "mlp.up_proj.weight"], down=t[p + "mlp.down_proj.weight"])
        layers.append(L)
    emb = t["model.embed_tokens.weight"]
    head = emb if cj.get("tie_word_embeddings", False) else t["lm_head.weight"]
    return MoeModel(cfg, emb, layers, t["model.norm.weight"], head)


def load_gguf(path):
    meta, t, _ = R.read_gguf(path)
    a = meta["general.architecture"]
    assert a == "qwen3moe", a
    n = meta[a + ".block_count"]
    heads = meta[a + ".attention.head_count"]
    cfg = dict(
        n_layers=n, heads=heads, kv_heads=meta.get(a + ".attention.head_count_kv", heads),
        head_dim=meta.get(a + ".attention.key_length", meta[a + ".embedding_length"] // heads),
        eps=meta.get(a + ".attention.layer_norm_rms_epsilon", 1e-6), rope_theta=meta.get(a + ".rope.freq_base", 10000.0),
        n_expert=meta.get(a + ".expert_count", 0), k=meta.get(a + ".expert_used_count", 0),
        norm_topk=bool(meta.get(a + ".expert_weights_norm", True)), sparse_step=1,
        mlp_only=[i for i in range(n) if "blk.%d.ffn_gate_inp.weight" % i not in t])
    layers = []
    for i in range(n):
        b = "blk.%d." % i
        L = dict(attn_norm=t[b + "attn_norm.weight"], ffn_norm=t[b + "ffn_norm.weight"], wq=t[b + "attn_q.weight"],
                 wk=t[b + "attn_k.weight"], wv=t[b + "attn_v.weight"], wo=t[b + "attn_output.weight"],
                 q_norm=t[b + "attn_q_norm.weight"], k_norm=t[b + "attn_k_norm.weight"])
        if _moe_layer(cfg, i):
            L.update(router=t[b + "ffn_gate_inp.weight"], gate_exps=t[b + "ffn_gate_exps.weight"],
                     up_exps=t[b + "ffn_up_exps.weight"], down_exps=t[b + "ffn_down_exps.weight"])
        else:
            L.update(gate=t[b + "ffn_gate.weight"], up=t[b + "ffn_up.weight"], down=t[b + "ffn_down.weight"])
        layers.append(L)
    emb = t["token_embd.weight"]
    return MoeModel(cfg, emb, layers, t["output_norm.weight"], t.get("output.weight", emb))


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _rope(x, pos, base, d):
    # rotate_half: coordinate i pairs with i + d/2; inv_freq_i = base^(-2i/d).
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    half = d // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def route(router_logits, k, norm):
    """One token: (experts, weights). Ties (never seen with random weights) go to the lower index."""
    p = np.exp(router_logits - router_logits.max())
    p /= p.sum()
    top = np.argsort(-p, kind="stable")[:k]
    w = p[top]
    return top, (w / w.sum() if norm else w)


def _moe(c, L, x, chosen):
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        experts, weights = route(L["router"] @ x[t], c["k"], c["norm_topk"])
        chosen.update(int(e) for e in experts)
        for e, w in zip(experts, weights):
            h = _silu(L["gate_exps"][e] @ x[t]) * (L["up_exps"][e] @ x[t])
            out[t] += w * (L["down_exps"][e] @ h)
    return out


def forward(m, ids, chosen=None):
    """chosen (list, optional): gets per MoE layer the set of experts some token was routed to."""
    c = m.cfg
    ids = np.asarray(ids)
    n, d, H, KV = len(ids), c["head_dim"], c["heads"], c["kv_heads"]
    pos = np.arange(n, dtype=np.float64)
    causal = np.tril(np.ones((n, n), dtype=bool))
    h = m.emb[ids].astype(np.float64)
    for L in m.layers:
        x = R.rms_norm(h, L["attn_norm"], c["eps"])
        q = R.rms_norm((x @ L["wq"].T).reshape(n, H, d), L["q_norm"], c["eps"])
        k = R.rms_norm((x @ L["wk"].T).reshape(n, KV, d), L["k_norm"], c["eps"])
        v = (x @ L["wv"].T).reshape(n, KV, d)
        q, k = _rope(q, pos, c["rope_theta"], d), _rope(k, pos, c["rope_theta"], d)
        out = np.zeros((n, H, d))
        for hh in range(H):
            kv = hh // (H // KV)
            s = np.where(causal, (q[:, hh] @ k[:, kv].T) / math.sqrt(d), -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, kv]
        h = h + out.reshape(n, H * d) @ L["wo"].T
        x = R.rms_norm(h, L["ffn_norm"], c["eps"])
        if "router" in L:
            layer_chosen = set()
            h = h + _moe(c, L, x, layer_chosen)
            if chosen is not None:
                chosen.append(layer_chosen)
        else:
            h = h + (_silu(x @ L["gate"].T) * (x @ L["up"].T)) @ L["down"].T
    return R.rms_norm(h, m.norm, c["eps"]) @ m.head.T


def greedy(m, ids, n_new):
    return R.greedy(m, ids, n_new, forward_fn=forward)
