"""Independent numpy reference of the Qwen3.5 / Qwen3.6 hybrid decoder (tests only).

Dense `qwen3_5` and MoE `qwen3_5_moe`, written from the published definition (Hugging Face
transformers modeling_qwen3_5.py, configuration_qwen3_5.py, modeling_qwen3_5_moe.py; llama.cpp's
GGUF conventions for them: src/models/qwen35.cpp, qwen35moe.cpp and the converter's
Qwen3NextModel / _LinearAttentionVReorderBase / Qwen3_5TextModel), sharing no code with the C++
engine. float64 throughout. Only the file readers (safetensors, GGUF dequantization) and the
RMSNorm one-liner come from ref_model.

    m = load(path)                      # HF directory or .gguf
    logits = forward(m, ids)            # [n_tokens, vocab]; DeltaNet as the per-token recurrence
    logits = forward(m, ids, chunk=16)  # the same, DeltaNet in chunked (matrix) form
    m.cfg["v_order"], m.cfg["out_gate"], m.cfg["rotary_dim"]: knobs the tests flip to show that
        each piece matters

The block:
    h = embed(ids)
    per layer:  h = h + mixer(norm_in(h));  h = h + ffn(norm_post_attn(h))
    logits = norm(h) @ lm_head.T
    every norm but the DeltaNet one is zero-centred in HF: x / rms(x) * (1 + w); GGUF stores 1 + w
    (the converter adds 1 to every "*norm.weight" except "linear_attn.norm.weight"), so the
    loaders keep the multiplier itself.
    layer i is full attention iff layer_types[i] == "full_attention" (HF; default: (i + 1) %
    full_attention_interval == 0, interval 4); GGUF: (i + 1) % <arch>.full_attention_interval == 0
    (default 4), or not <arch>.attention.recurrent_layers[i] where a file has that array.
    mixer, full attention: q_proj rows are per head [head_dim query, head_dim gate]; q_norm/k_norm
        per head; RoPE on the first rotary_dim = head_dim * partial_rotary_factor coordinates only
        (rotate_half pairs i and i + rotary_dim/2, inv_freq_i = theta^(-2i/rotary_dim); M-RoPE
        sections give every band the text position, all three position ids being equal); GQA;
        scale 1/sqrt(head_dim); out * sigmoid(gate) then o_proj.
    mixer, Gated DeltaNet: qkv = silu(causal depthwise conv1d_K(in_proj_qkv(x))) split q | k | v;
        z = in_proj_z(x); beta = sigmoid(in_proj_b(x)); g = A * softplus(in_proj_a(x) + dt_bias)
        with A = -exp(A_log); q, k L2-normalised (eps 1e-6 inside the sqrt), q / sqrt(dk); per
        value head j with key head kh(j), state S [dk, dv] from 0:
            S = S * exp(g_t); delta = (v_t - S^T k_t) * beta_t; S = S + k_t delta^T; o_t = S^T q_t
        o = rms(o) * norm.weight * silu(z) per value head; out_proj.
        kh(j) = j // (n_v / n_k) in HF's grouped order; the GGUF converter reorders the value
        heads to tiled order (in_proj_qkv's v rows, in_proj_z, in_proj_a/b, A_log, dt_bias,
        conv1d's v channels, out_proj's columns), so there kh(j) = j % n_k.
    ffn, dense: down(silu(gate(x)) * up(x))
    ffn, MoE (every layer of qwen3_5_moe): p = softmax(router(x)); the num_experts_per_tok largest,
        always renormalised; sum_e w_e * down_e(silu(gate_e(x)) * up_e(x)) plus
        sigmoid(shared_expert_gate(x)) * shared_expert(x).
"""

import json
import math
import os

import numpy as np

import ref_model as R


class HybridModel:
    def __init__(self, cfg, emb, layers, norm, head):
        self.cfg, self.emb, self.layers, self.norm, self.head = cfg, emb, layers, norm, head


# ----------------------------------------------------------------------------------------------
# Hugging Face directory


def _hf_tensors(path):
    t = {}
    for fn in sorted(os.listdir(path)):
        if fn.endswith(".safetensors"):
            t.update(R.read_safetensors(os.path.join(path, fn))[0])
    if not t:
        raise ValueError("%s: no .safetensors files" % path)
    return t


def load_hf(path):
    with open(os.path.join(path, "config.json")) as f:
        cj = json.load(f)
    mt = cj.get("model_type")
    assert mt in ("qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"), mt
    tc = cj.get("text_config") or cj  # released checkpoints nest the language model's sizes
    moe = "moe" in (tc.get("model_type") or mt)
    t = _hf_tensors(path)
    pre = "model.language_model." if any(k.startswith("model.language_model.") for k in t) else "model."

    n = tc["num_hidden_layers"]
    heads = tc["num_attention_heads"]
    head_dim = tc.get("head_dim") or tc["hidden_size"] // heads
    rp = dict(tc.get("rope_parameters") or tc.get("rope_scaling") or {})
    rope_type = rp.get("rope_type") or rp.get("type") or "default"
    if rope_type != "default":
        raise ValueError("%s: rope_type %r not supported by the reference" % (path, rope_type))
    theta = rp.get("rope_theta", tc.get("rope_theta", 10000.0))
    factor = rp.get("partial_rotary_factor", tc.get("partial_rotary_factor", 0.25))
    types = tc.get("layer_types")
    if types is None:
        interval = tc.get("full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]
    tied = cj.get("tie_word_embeddings", tc.get("tie_word_embeddings", False))
    cfg = dict(
        n_layers=n, n_embd=tc["hidden_size"], heads=heads, kv_heads=tc.get("num_key_value_heads") or heads,
        head_dim=head_dim, rotary_dim=int(head_dim * factor), rope_theta=float(theta),
        mrope_section=rp.get("mrope_section"), eps=tc.get("rms_norm_eps", 1e-6),
        full=[ty == "full_attention" for ty in types],
        n_k=tc["linear_num_key_heads"], n_v=tc["linear_num_value_heads"], dk=tc["linear_key_head_dim"],
        dv=tc["linear_value_head_dim"], conv=tc.get("linear_conv_kernel_dim", 4), v_order="grouped",
        out_gate=True, moe=moe, n_expert=tc.get("num_experts", 0) if moe else 0,
        k=tc.get("num_experts_per_tok", 0) if moe else 0)

    layers = []
    for i in range(n):
        p = pre + "layers.%d." % i
        L = dict(attn_norm=1.0 + t[p + "input_layernorm.weight"], ffn_norm=1.0 + t[p + "post_attention_layernorm.weight"])
        if cfg["full"][i]:
            a = p + "self_attn."
            L.update(wq=t[a + "q_proj.weight"], wk=t[a + "k_proj.weight"], wv=t[a + "v_proj.weight"],
                     wo=t[a + "o_proj.weight"], q_norm=1.0 + t[a + "q_norm.weight"], k_norm=1.0 + t[a + "k_norm.weight"])
        else:
            a = p + "linear_attn."
            conv = t[a + "conv1d.weight"]  # [conv_dim, 1, K]
            L.update(wqkv=t[a + "in_proj_qkv.weight"], wz=t[a + "in_proj_z.weight"], wb=t[a + "in_proj_b.weight"],
                     wa=t[a + "in_proj_a.weight"], conv=conv.reshape(conv.shape[0], conv.shape[-1]),
                     dt_bias=t[a + "dt_bias"], A=-np.exp(t[a + "A_log"]), ssm_norm=t[a + "norm.weight"],
                     wout=t[a + "out_proj.weight"])
        m = p + "mlp."
        if moe:
            E = cfg["n_expert"]
            L["router"] = t[m + "gate.weight"]
            if m + "experts.gate_up_proj" in t:  # fused [E, 2I, H]: gate rows, then up rows
                gu = t[m + "experts.gate_up_proj"]
                half = gu.shape[1] // 2
                L.update(gate_exps=gu[:, :half], up_exps=gu[:, half:], down_exps=t[m + "experts.down_proj"])
            else:
                for proj in ("gate", "up", "down"):
                    L[proj + "_exps"] = np.stack([t[m + "experts.%d.%s_proj.weight" % (e, proj)] for e in range(E)])
            L.update(sh_gate=t[m + "shared_expert.gate_proj.weight"], sh_up=t[m + "shared_expert.up_proj.weight"],
                     sh_down=t[m + "shared_expert.down_proj.weight"],
                     sh_gate_inp=t[m + "shared_expert_gate.weight"].reshape(-1))
        else:
            L.update(gate=t[m + "gate_proj.weight"], up=t[m + "up_proj.weight"], down=t[m + "down_proj.weight"])
        layers.append(L)
    emb = t[pre + "embed_tokens.weight"]
    head = t.get("lm_head.weight")
    if head is None:
        if not tied:
            raise ValueError("%s: no lm_head.weight and tie_word_embeddings is false" % path)
        head = emb
    return HybridModel(cfg, emb, layers, 1.0 + t[pre + "norm.weight"], head)


# ----------------------------------------------------------------------------------------------
# GGUF (llama.cpp's qwen35 / qwen35moe)


def load_gguf(path):
    meta, t, _ = R.read_gguf(path)
    a = meta["general.architecture"]
    assert a in ("qwen35", "qwen35moe"), a
    moe = a == "qwen35moe"
    # block_count includes the NextN/MTP blocks appended after the trunk; they are not run.
    n = int(meta[a + ".block_count"]) - int(meta.get(a + ".nextn_predict_layers", 0))
    heads = int(meta[a + ".attention.head_count"])
    n_embd = int(meta[a + ".embedding_length"])
    head_dim = int(meta.get(a + ".attention.key_length", n_embd // heads))
    interval = int(meta.get(a + ".full_attention_interval", 4))
    recurrent = meta.get(a + ".attention.recurrent_layers")  # per-layer flags, when a file has them
    full = [not recurrent[i] for i in range(n)] if recurrent is not None else [(i + 1) % interval == 0 for i in range(n)]
    n_k, n_v = int(meta[a + ".ssm.group_count"]), int(meta[a + ".ssm.time_step_rank"])
    cfg = dict(
        n_layers=n, n_embd=n_embd, heads=heads, kv_heads=int(meta.get(a + ".attention.head_count_kv", heads)),
        head_dim=head_dim, rotary_dim=int(meta.get(a + ".rope.dimension_count", head_dim)),
        rope_theta=float(meta.get(a + ".rope.freq_base", 10000.0)),
        mrope_section=meta.get(a + ".rope.dimension_sections"),
        eps=float(meta[a + ".attention.layer_norm_rms_epsilon"]),
        full=full, n_k=n_k, n_v=n_v, dk=int(meta[a + ".ssm.state_size"]), dv=int(meta[a + ".ssm.inner_size"]) // n_v,
        conv=int(meta[a + ".ssm.conv_kernel"]),
        # The converter reorders value heads to tiled order whenever n_k != n_v (identity otherwise).
        v_order="tiled", out_gate=True, moe=moe,
        n_expert=int(meta.get(a + ".expert_count", 0)) if moe else 0,
        k=int(meta.get(a + ".expert_used_count", 0)) if moe else 0)
    layers = []
    for i in range(n):
        b = "blk.%d." % i
        L = dict(attn_norm=t[b + "attn_norm.weight"], ffn_norm=t[b + "post_attention_norm.weight"])
        if cfg["full"][i]:
            L.update(wq=t[b + "attn_q.weight"], wk=t[b + "attn_k.weight"], wv=t[b + "attn_v.weight"],
                     wo=t[b + "attn_output.weight"], q_norm=t[b + "attn_q_norm.weight"], k_norm=t[b + "attn_k_norm.weight"])
        else:
            L.update(wqkv=t[b + "attn_qkv.weight"], wz=t[b + "attn_gate.weight"], wb=t[b + "ssm_beta.weight"],
                     wa=t[b + "ssm_alpha.weight"], conv=t[b + "ssm_conv1d.weight"], dt_bias=t[b + "ssm_dt.bias"],
                     A=t[b + "ssm_a"], ssm_norm=t[b + "ssm_norm.weight"], wout=t[b + "ssm_out.weight"])
        if moe:
            L["router"] = t[b + "ffn_gate_inp.weight"]
            if b + "ffn_gate_up_exps.weight" in t:  # fused [E, 2I, H]: gate rows, then up rows
                gu = t[b + "ffn_gate_up_exps.weight"]
                half = gu.shape[1] // 2
                L.update(gate_exps=gu[:, :half], up_exps=gu[:, half:])
            else:
                L.update(gate_exps=t[b + "ffn_gate_exps.weight"], up_exps=t[b + "ffn_up_exps.weight"])
            L.update(down_exps=t[b + "ffn_down_exps.weight"], sh_gate=t[b + "ffn_gate_shexp.weight"],
                     sh_up=t[b + "ffn_up_shexp.weight"], sh_down=t[b + "ffn_down_shexp.weight"],
                     sh_gate_inp=t[b + "ffn_gate_inp_shexp.weight"].reshape(-1))
        else:
            L.update(gate=t[b + "ffn_gate.weight"], up=t[b + "ffn_up.weight"], down=t[b + "ffn_down.weight"])
        layers.append(L)
    emb = t["token_embd.weight"]
    return HybridModel(cfg, emb, layers, t["output_norm.weight"], t.get("output.weight", emb))


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)


# ----------------------------------------------------------------------------------------------
# Forward pass


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _partial_rope(x, pos, theta, rd):
    """x [n, heads, d]: rotate the first rd coordinates (pairs i, i + rd/2), keep the rest."""
    if rd == 0:
        return x
    inv = theta ** (-np.arange(0, rd, 2, dtype=np.float64) / rd)
    ang = pos[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    half = rd // 2
    x1, x2, rest = x[..., :half], x[..., half:rd], x[..., rd:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], axis=-1)


def _full_attention(c, L, x, aq):
    n, H, KV, d = x.shape[0], c["heads"], c["kv_heads"], c["head_dim"]
    x = aq(x)
    qg = (x @ L["wq"].T).reshape(n, H, 2 * d)
    q, gate = qg[..., :d], qg[..., d:].reshape(n, H * d)
    q = R.rms_norm(q, L["q_norm"], c["eps"])
    k = R.rms_norm((x @ L["wk"].T).reshape(n, KV, d), L["k_norm"], c["eps"])
    v = (x @ L["wv"].T).reshape(n, KV, d)
    pos = np.arange(n, dtype=np.float64)
    q, k = _partial_rope(q, pos, c["rope_theta"], c["rotary_dim"]), _partial_rope(k, pos, c["rope_theta"], c["rotary_dim"])
    causal = np.tril(np.ones((n, n), dtype=bool))
    out = np.zeros((n, H, d))
    for hh in range(H):
        kv = hh // (H // KV)
        s = np.where(causal, (q[:, hh] @ k[:, kv].T) / math.sqrt(d), -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        out[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, kv]
    out = out.reshape(n, H * d)
    if c["out_gate"]:
        out = out * _sigmoid(gate)
    return aq(out) @ L["wo"].T


def key_head(c, j):
    """The key (and query) head that value head j reads, in the file's value-head order."""
    if c["v_order"] == "grouped":
        return j // (c["n_v"] // c["n_k"])
    assert c["v_order"] == "tiled", c["v_order"]
    return j % c["n_k"]


def _delta_recurrent(q, k, v, g, beta):
    """One value head. q, k [n, dk]; v [n, dv]; g, beta [n]. Returns o [n, dv]."""
    S = np.zeros((k.shape[1], v.shape[1]))
    out = np.empty_like(v)
    for t in range(len(g)):
        S = S * math.exp(g[t])
        delta = (v[t] - k[t] @ S) * beta[t]
        S = S + np.outer(k[t], delta)
        out[t] = q[t] @ S
    return out


def _delta_chunked(q, k, v, g, beta, C):
    """The same recurrence, C tokens at a time. Within a chunk, with G_t the cumulative sum of g
    from the chunk start and S0 the state before it, unrolling the recurrence gives
        S_t = e^{G_t} S0 + sum_{s<=t} e^{G_t - G_s} k_s d_s^T
        d_t = beta_t (v_t - e^{G_t} S0^T k_t - sum_{s<t} e^{G_t - G_s} (k_s.k_t) d_s)
        o_t = e^{G_t} S0^T q_t + sum_{s<=t} e^{G_t - G_s} (k_s.q_t) d_s
    so the d_t solve one unit lower-triangular system per chunk."""
    n, dk, dv = k.shape[0], k.shape[1], v.shape[1]
    S = np.zeros((dk, dv))
    out = np.empty_like(v)
    for s0 in range(0, n, C):
        sl = slice(s0, min(s0 + C, n))
        qc, kc, vc, bc = q[sl], k[sl], v[sl], beta[sl]
        G = np.cumsum(g[sl])
        m = len(G)
        decay = np.exp(G[:, None] - G[None, :])  # e^{G_t - G_s}
        lower = np.tril(np.ones((m, m), dtype=bool), -1)
        A = np.eye(m) + np.where(lower, bc[:, None] * decay * (kc @ kc.T), 0.0)
        D = np.linalg.solve(A, bc[:, None] * (vc - np.exp(G)[:, None] * (kc @ S)))
        causal = np.tril(np.ones((m, m), dtype=bool))
        out[sl] = np.exp(G)[:, None] * (qc @ S) + np.where(causal, decay * (qc @ kc.T), 0.0) @ D
        S = math.exp(G[-1]) * S + (kc * np.exp(G[-1] - G)[:, None]).T @ D
    return out


def _l2norm(x, eps=1e-6):
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def _conv_silu(c, L, mixed):
    """Causal depthwise conv over time (kernel tap K-1 on the current token), then SiLU."""
    n, K = mixed.shape[0], c["conv"]
    padded = np.concatenate([np.zeros((K - 1, mixed.shape[1])), mixed], axis=0)
    out = np.zeros_like(mixed)
    for j in range(K):
        out += padded[j:j + n] * L["conv"][:, j][None, :]
    return _silu(out)


def _gated_deltanet(c, L, x, chunk, aq):
    n, nk, nv, dk, dv = x.shape[0], c["n_k"], c["n_v"], c["dk"], c["dv"]
    x = aq(x)
    qkv = _conv_silu(c, L, x @ L["wqkv"].T)
    q = _l2norm(qkv[:, :nk * dk].reshape(n, nk, dk)) / math.sqrt(dk)
    k = _l2norm(qkv[:, nk * dk:2 * nk * dk].reshape(n, nk, dk))
    v = qkv[:, 2 * nk * dk:].reshape(n, nv, dv)
    z = (x @ L["wz"].T).reshape(n, nv, dv)
    beta = _sigmoid(x @ L["wb"].T)
    g = L["A"][None, :] * _softplus(x @ L["wa"].T + L["dt_bias"][None, :])
    o = np.empty((n, nv, dv))
    for j in range(nv):
        kh = key_head(c, j)
        if chunk:
            o[:, j] = _delta_chunked(q[:, kh], k[:, kh], v[:, j], g[:, j], beta[:, j], chunk)
        else:
            o[:, j] = _delta_recurrent(q[:, kh], k[:, kh], v[:, j], g[:, j], beta[:, j])
    o = R.rms_norm(o, L["ssm_norm"], c["eps"]) * _silu(z)
    return aq(o.reshape(n, nv * dv)) @ L["wout"].T


def route(router_logits, k):
    """One token: (experts, weights); softmax over all experts, top-k, renormalised. Ties (never
    seen with random weights) go to the lower index."""
    p = np.exp(router_logits - router_logits.max())
    p /= p.sum()
    top = np.argsort(-p, kind="stable")[:k]
    return top, p[top] / p[top].sum()


def _swiglu(x, gate, up, down, aq):
    x = aq(x)
    return aq(_silu(x @ gate.T) * (x @ up.T)) @ down.T


def _moe(c, L, x, chosen, aq):
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        experts, weights = route(L["router"] @ aq(x[t]), c["k"])
        chosen.update(int(e) for e in experts)
        for e, w in zip(experts, weights):
            out[t] += w * _swiglu(x[t], L["gate_exps"][e], L["up_exps"][e], L["down_exps"][e], aq)
    shared = _swiglu(x, L["sh_gate"], L["sh_up"], L["sh_down"], aq)
    return out + _sigmoid(x @ L["sh_gate_inp"])[:, None] * shared


def act_q8(x):
    """Emulates how an integer matmul path sees its input (Q8_0 files): each row in blocks of 32,
    d = max|x| / 127, x -> round(x / d) * d. Not part of the model definition; tests use it to
    separate the engine's activation rounding from errors in the architecture."""
    if x.shape[-1] % 32:
        return x
    b = x.reshape(-1, 32)
    d = np.abs(b).max(-1, keepdims=True) / 127.0
    return np.where(d == 0, 0.0, np.round(b / np.where(d == 0, 1.0, d)) * d).reshape(x.shape)


def forward(m, ids, chunk=0, chosen=None, act_q8_inputs=False):
    """Logits [n_tokens, vocab]. chunk: 0 runs the DeltaNet token by token, > 0 in chunks of that
    size. chosen (list, optional): gets per MoE layer the set of experts some token was routed to.
    act_q8_inputs: round every matrix input as a Q8_0 integer matmul does (act_q8)."""
    c = m.cfg
    aq = act_q8 if act_q8_inputs else (lambda x: x)
    ids = np.asarray(ids)
    h = m.emb[ids].astype(np.float64)
    for i, L in enumerate(m.layers):
        x = R.rms_norm(h, L["attn_norm"], c["eps"])
        h = h + (_full_attention(c, L, x, aq) if c["full"][i] else _gated_deltanet(c, L, x, chunk, aq))
        x = R.rms_norm(h, L["ffn_norm"], c["eps"])
        if c["moe"]:
            layer_chosen = set()
            h = h + _moe(c, L, x, layer_chosen, aq)
            if chosen is not None:
                chosen.append(layer_chosen)
        else:
            h = h + _swiglu(x, L["gate"], L["up"], L["down"], aq)
    return aq(R.rms_norm(h, m.norm, c["eps"])) @ m.head.T


def greedy(m, ids, n_new):
    return R.greedy(m, ids, n_new, forward_fn=forward)
