#include "model/arch.h"

#include <algorithm>

#include "core/error.h"

namespace triattn {

namespace {

using R = TensorRole;
using N = TensorNeed;

// The llama block, as llama.cpp's GGUF converter and HF transformers name it.
std::vector<ArchTensor> llama_tensors() {
  return {
      {R::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {R::AttnNorm, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
      {R::Wq, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"},
      {R::Wk, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"},
      {R::Wv, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"},
      {R::Bq, "blk.{}.attn_q.bias", "model.layers.{}.self_attn.q_proj.bias", N::IfQkvBias},
      {R::Bk, "blk.{}.attn_k.bias", "model.layers.{}.self_attn.k_proj.bias", N::IfQkvBias},
      {R::Bv, "blk.{}.attn_v.bias", "model.layers.{}.self_attn.v_proj.bias", N::IfQkvBias},
      {R::QNorm, "blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight", N::IfQkNorm},
      {R::KNorm, "blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight", N::IfQkNorm},
      {R::Wo, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"},
      {R::FfnNorm, "blk.{}.ffn_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
      {R::Gate, "blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight", N::IfDenseFfn},
      {R::Up, "blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight", N::IfDenseFfn},
      {R::Down, "blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight", N::IfDenseFfn},
      {R::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {R::Output, "output.weight", "lm_head.weight", N::IfUntied},
  };
}

// The llama block whose MoE layers have a router and experts in place of the MLP (Qwen3-MoE),
// as llama.cpp's converter and transformers name them.
std::vector<ArchTensor> moe_tensors() {
  std::vector<ArchTensor> t = llama_tensors();
  const auto down = std::find_if(t.begin(), t.end(), [](const ArchTensor& a) { return a.role == R::Down; });
  t.insert(down + 1, {
      {R::Router, "blk.{}.ffn_gate_inp.weight", "model.layers.{}.mlp.gate.weight", N::IfMoeFfn},
      {R::GateExps, "blk.{}.ffn_gate_exps.weight", "model.layers.{}.mlp.experts.{}.gate_proj.weight", N::IfMoeFfn},
      {R::UpExps, "blk.{}.ffn_up_exps.weight", "model.layers.{}.mlp.experts.{}.up_proj.weight", N::IfMoeFfn},
      {R::DownExps, "blk.{}.ffn_down_exps.weight", "model.layers.{}.mlp.experts.{}.down_proj.weight", N::IfMoeFfn},
  });
  return t;
}

// Gemma 2/3: norms before and after attention and the FFN. HF's "post_attention_layernorm"
// is the norm of the attention OUTPUT here (in llama it is the FFN's input norm).
std::vector<ArchTensor> gemma_tensors() {
  return {
      {R::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {R::AttnNorm, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
      {R::Wq, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"},
      {R::Wk, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"},
      {R::Wv, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"},
      {R::QNorm, "blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight", N::IfQkNorm},
      {R::KNorm, "blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight", N::IfQkNorm},
      {R::Wo, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"},
      {R::PostAttnNorm, "blk.{}.post_attention_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
      {R::FfnNorm, "blk.{}.ffn_norm.weight", "model.layers.{}.pre_feedforward_layernorm.weight"},
      {R::Gate, "blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight"},
      {R::Up, "blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight"},
      {R::Down, "blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight"},
      {R::PostFfnNorm, "blk.{}.post_ffw_norm.weight", "model.layers.{}.post_feedforward_layernorm.weight"},
      {R::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {R::Output, "output.weight", "lm_head.weight", N::IfUntied},
  };
}

// gpt-oss: the llama block with biases on q, k, v and o, per-head attention sinks, and a MoE
// FFN in every layer whose router and experts have biases. llama.cpp calls the FFN's input
// norm post_attention_norm; HF fuses each layer's experts (ArchTraits::hf_fused_experts), so
// gate and up share one HF name and loader_hf_experts.cpp splits them.
std::vector<ArchTensor> gpt_oss_tensors() {
  const char* gate_up = "model.layers.{}.mlp.experts.gate_up_proj";
  const char* gate_up_bias = "model.layers.{}.mlp.experts.gate_up_proj_bias";
  return {
      {R::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {R::AttnNorm, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
      {R::Wq, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"},
      {R::Wk, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"},
      {R::Wv, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"},
      {R::Bq, "blk.{}.attn_q.bias", "model.layers.{}.self_attn.q_proj.bias", N::IfQkvBias},
      {R::Bk, "blk.{}.attn_k.bias", "model.layers.{}.self_attn.k_proj.bias", N::IfQkvBias},
      {R::Bv, "blk.{}.attn_v.bias", "model.layers.{}.self_attn.v_proj.bias", N::IfQkvBias},
      {R::Wo, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"},
      {R::Bo, "blk.{}.attn_output.bias", "model.layers.{}.self_attn.o_proj.bias", N::IfOutBias},
      {R::Sinks, "blk.{}.attn_sinks.weight", "model.layers.{}.self_attn.sinks", N::IfSinks},
      {R::FfnNorm, "blk.{}.post_attention_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
      {R::Router, "blk.{}.ffn_gate_inp.weight", "model.layers.{}.mlp.router.weight", N::IfMoeFfn},
      {R::RouterBias, "blk.{}.ffn_gate_inp.bias", "model.layers.{}.mlp.router.bias", N::IfMoeBias},
      {R::GateExps, "blk.{}.ffn_gate_exps.weight", gate_up, N::IfMoeFfn},
      {R::GateExpsBias, "blk.{}.ffn_gate_exps.bias", gate_up_bias, N::IfMoeBias},
      {R::UpExps, "blk.{}.ffn_up_exps.weight", gate_up, N::IfMoeFfn},
      {R::UpExpsBias, "blk.{}.ffn_up_exps.bias", gate_up_bias, N::IfMoeBias},
      {R::DownExps, "blk.{}.ffn_down_exps.weight", "model.layers.{}.mlp.experts.down_proj", N::IfMoeFfn},
      {R::DownExpsBias, "blk.{}.ffn_down_exps.bias", "model.layers.{}.mlp.experts.down_proj_bias", N::IfMoeBias},
      {R::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {R::Output, "output.weight", "lm_head.weight", N::IfUntied},
  };
}

// Qwen3.5 / Qwen3.6: each layer is either gated softmax attention (q_proj also gives the
// output gate; per-head q/k norms; partial RoPE) or a Gated DeltaNet, then a SwiGLU MLP or
// (qwen35moe) routed experts plus a gated shared expert. llama.cpp calls the FFN's input norm
// post_attention_norm.
std::vector<ArchTensor> qwen35_tensors(bool moe) {
  std::vector<ArchTensor> t = {
      {R::TokEmbd, "token_embd.weight", "model.embed_tokens.weight"},
      {R::AttnNorm, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
      {R::Wq, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight", N::IfAttention},
      {R::Wk, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight", N::IfAttention},
      {R::Wv, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight", N::IfAttention},
      {R::QNorm, "blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight", N::IfAttention},
      {R::KNorm, "blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight", N::IfAttention},
      {R::Wo, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight", N::IfAttention},
      {R::DnQkv, "blk.{}.attn_qkv.weight", "model.layers.{}.linear_attn.in_proj_qkv.weight", N::IfDeltaNet},
      {R::DnZ, "blk.{}.attn_gate.weight", "model.layers.{}.linear_attn.in_proj_z.weight", N::IfDeltaNet},
      {R::DnBeta, "blk.{}.ssm_beta.weight", "model.layers.{}.linear_attn.in_proj_b.weight", N::IfDeltaNet},
      {R::DnAlpha, "blk.{}.ssm_alpha.weight", "model.layers.{}.linear_attn.in_proj_a.weight", N::IfDeltaNet},
      {R::DnConv, "blk.{}.ssm_conv1d.weight", "model.layers.{}.linear_attn.conv1d.weight", N::IfDeltaNet},
      {R::DnDtBias, "blk.{}.ssm_dt.bias", "model.layers.{}.linear_attn.dt_bias", N::IfDeltaNet},
      {R::DnA, "blk.{}.ssm_a", "model.layers.{}.linear_attn.A_log", N::IfDeltaNet},
      {R::DnNorm, "blk.{}.ssm_norm.weight", "model.layers.{}.linear_attn.norm.weight", N::IfDeltaNet},
      {R::DnOut, "blk.{}.ssm_out.weight", "model.layers.{}.linear_attn.out_proj.weight", N::IfDeltaNet},
      {R::FfnNorm, "blk.{}.post_attention_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
  };
  if (moe) {
    t.insert(t.end(), {
        {R::Router, "blk.{}.ffn_gate_inp.weight", "model.layers.{}.mlp.gate.weight", N::IfMoeFfn},
        {R::GateExps, "blk.{}.ffn_gate_exps.weight", "model.layers.{}.mlp.experts.{}.gate_proj.weight", N::IfMoeFfn},
        {R::UpExps, "blk.{}.ffn_up_exps.weight", "model.layers.{}.mlp.experts.{}.up_proj.weight", N::IfMoeFfn},
        {R::DownExps, "blk.{}.ffn_down_exps.weight", "model.layers.{}.mlp.experts.{}.down_proj.weight", N::IfMoeFfn},
        {R::SharedGateInp, "blk.{}.ffn_gate_inp_shexp.weight", "model.layers.{}.mlp.shared_expert_gate.weight",
         N::IfSharedExpert},
        {R::SharedGate, "blk.{}.ffn_gate_shexp.weight", "model.layers.{}.mlp.shared_expert.gate_proj.weight",
         N::IfSharedExpert},
        {R::SharedUp, "blk.{}.ffn_up_shexp.weight", "model.layers.{}.mlp.shared_expert.up_proj.weight",
         N::IfSharedExpert},
        {R::SharedDown, "blk.{}.ffn_down_shexp.weight", "model.layers.{}.mlp.shared_expert.down_proj.weight",
         N::IfSharedExpert},
    });
  }
  t.insert(t.end(), {
      {R::Gate, "blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight", N::IfDenseFfn},
      {R::Up, "blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight", N::IfDenseFfn},
      {R::Down, "blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight", N::IfDenseFfn},
      {R::OutputNorm, "output_norm.weight", "model.norm.weight"},
      {R::Output, "output.weight", "lm_head.weight", N::IfUntied},
  });
  return t;
}

// Gemma 4 (text): the Gemma 2/3 block with no v_proj on K=V layers and a scalar per layer.
std::vector<ArchTensor> gemma4_tensors() {
  std::vector<ArchTensor> t = gemma_tensors();
  for (ArchTensor& a : t)
    if (a.role == R::Wv) a.need = N::IfOwnV;
  const auto post_ffn = std::find_if(t.begin(), t.end(), [](const ArchTensor& a) { return a.role == R::PostFfnNorm; });
  t.insert(post_ffn + 1, {R::LayerScale, "blk.{}.layer_output_scale.weight", "model.layers.{}.layer_scalar", N::IfLayerScale});
  return t;
}

// Gemma 4: norms are x * w (no 1 + w, in HF and GGUF alike), scores unscaled, V normed,
// five sliding layers then one full (the last always full), a scalar per layer.
ArchTraits gemma4_traits() {
  ArchTraits t;
  t.qk_norm = true;
  t.post_norms = true;
  t.embed_scale = true;
  t.activation = Activation::GeluTanh;
  t.sliding_period = 6;
  t.full_index = 5;
  t.default_rope_theta_local = 10000.0f;
  t.default_tied = true;
  t.hf_text_config = true;
  t.query_scale = 1.0f;
  t.per_type_attention = true;
  t.v_norm = true;
  t.layer_scale = true;
  t.last_layer_full = true;
  return t;
}

ArchTraits qwen35_traits() {
  ArchTraits t;
  t.qk_norm = true;
  t.hf_norm_plus_one = true;  // zero-centred RMSNorm: HF's w acts as 1 + w (the gated norm excepted)
  t.gguf_expert_weights_norm = true;  // the router always renormalises its top k
  t.attn_output_gate = true;
  t.rotary_fraction = 0.25f;
  t.full_attention_interval = 4;
  t.hf_text_config = true;
  return t;
}

ArchTraits gpt_oss_traits() {
  ArchTraits t;
  t.qkv_bias = true;
  t.activation = Activation::SwigluOai;
  // Layers alternate sliding (even) and full (odd), as transformers' default layer_types
  // and llama.cpp's swa pattern 2 say.
  t.sliding_period = 2;
  t.full_index = 1;
  // Top-k of the router logits, then a softmax over the k: the same weights as a softmax over
  // every expert renormalised over the k chosen (route() in model/moe.cpp).
  t.gguf_expert_weights_norm = true;
  t.moe_bias = true;
  t.attn_out_bias = true;
  t.attn_sinks = true;
  t.yarn_truncate = false;  // gpt-oss's config.json: rope_scaling.truncate false
  t.hf_fused_experts = true;
  return t;
}

ArchTraits gemma_traits(bool qk_norm, int period, float theta_local) {
  ArchTraits t;
  t.qk_norm = qk_norm;
  t.post_norms = true;
  t.embed_scale = true;
  t.hf_norm_plus_one = true;
  t.activation = Activation::GeluTanh;
  t.sliding_period = period;
  t.full_index = period - 1;
  t.default_rope_theta_local = theta_local;
  t.default_tied = true;
  return t;
}

const std::vector<ArchInfo>& table() {
  static const std::vector<ArchInfo> archs = [] {
    std::vector<ArchInfo> a;
    a.push_back({"llama", {"llama", "mistral"}, "LlamaForCausalLM", {.gguf_interleaved_rope = true}, llama_tensors()});
    a.push_back({"qwen2", {"qwen2"}, "Qwen2ForCausalLM", {.qkv_bias = true}, llama_tensors()});
    a.push_back({"qwen3", {"qwen3"}, "Qwen3ForCausalLM", {.qk_norm = true}, llama_tensors()});
    // Qwen3-MoE: qwen3 attention, MoE layers (softmax router, top-k renormalised in llama.cpp).
    a.push_back({"qwen3moe", {"qwen3_moe"}, "Qwen3MoeForCausalLM", {.qk_norm = true, .gguf_expert_weights_norm = true},
                 moe_tensors()});
    // Gemma 2: every other layer (0, 2, ...) sliding; soft-capping values come from the file.
    a.push_back({"gpt-oss", {"gpt_oss"}, "GptOssForCausalLM", gpt_oss_traits(), gpt_oss_tensors()});
    a.push_back({"gemma2", {"gemma2"}, "Gemma2ForCausalLM", gemma_traits(false, 2, 0), gemma_tensors()});
    // Qwen3.5 / Qwen3.6 hybrids: three Gated DeltaNet layers, then one gated attention layer.
    a.push_back({"qwen35", {"qwen3_5", "qwen3_5_text"}, "Qwen3_5ForConditionalGeneration", qwen35_traits(),
                 qwen35_tensors(false)});
    a.push_back({"qwen35moe", {"qwen3_5_moe", "qwen3_5_moe_text"}, "Qwen3_5MoeForConditionalGeneration",
                 qwen35_traits(), qwen35_tensors(true)});
    // Gemma 3 (text): five sliding layers then one full; local RoPE base 10000.
    a.push_back({"gemma3", {"gemma3_text"}, "Gemma3ForCausalLM", gemma_traits(true, 6, 10000.0f), gemma_tensors()});
    // Gemma 4 (the text decoder of the multimodal checkpoints, or a text-only one).
    a.push_back({"gemma4", {"gemma4", "gemma4_text"}, "Gemma4ForConditionalGeneration", gemma4_traits(),
                 gemma4_tensors()});
    return a;
  }();
  return archs;
}

std::string join(bool hf) {
  std::string out;
  for (const ArchInfo& a : table()) {
    if (!hf) {
      out += (out.empty() ? "" : ", ") + std::string(a.name);
      continue;
    }
    for (std::string_view t : a.hf_types) out += (out.empty() ? "" : ", ") + std::string(t);
  }
  return out;
}

}  // namespace

std::span<const ArchInfo> architectures() { return table(); }

const ArchInfo* find_arch(std::string_view name) {
  for (const ArchInfo& a : table())
    if (a.name == name) return &a;
  return nullptr;
}

const ArchInfo* find_arch_hf(std::string_view model_type) {
  for (const ArchInfo& a : table())
    for (std::string_view t : a.hf_types)
      if (t == model_type) return &a;
  return nullptr;
}

const ArchInfo& arch_info(std::string_view name) {
  const ArchInfo* a = find_arch(name);
  if (!a) fail("architecture '", std::string(name), "' is not supported (supported: ", arch_names(), ")");
  return *a;
}

std::string arch_names() { return join(false); }
std::string arch_hf_names() { return join(true); }

std::string tensor_name(const ArchTensor& t, TensorFormat f, int layer, int expert) {
  std::string s = f == TensorFormat::Gguf ? t.gguf : t.hf;
  for (int index : {layer, expert}) {
    const size_t at = s.find("{}");
    if (at != std::string::npos) s.replace(at, 2, std::to_string(index));
  }
  return s;
}

bool role_is_per_layer(TensorRole r) { return r != R::TokEmbd && r != R::OutputNorm && r != R::Output; }

bool role_is_expert(TensorRole r) { return r == R::GateExps || r == R::UpExps || r == R::DownExps; }

bool role_is_expert_bias(TensorRole r) { return r == R::GateExpsBias || r == R::UpExpsBias || r == R::DownExpsBias; }

bool role_is_norm(TensorRole r) {
  switch (r) {
    case R::OutputNorm: case R::AttnNorm: case R::QNorm: case R::KNorm: case R::PostAttnNorm:
    case R::FfnNorm: case R::PostFfnNorm:
      return true;
    default: return false;
  }
}

bool role_is_vector(TensorRole r) {
  return role_is_norm(r) || r == R::Bq || r == R::Bk || r == R::Bv || r == R::Bo || r == R::Sinks ||
         r == R::RouterBias || role_is_expert_bias(r) || r == R::DnConv || r == R::DnDtBias || r == R::DnA ||
         r == R::DnNorm || r == R::SharedGateInp || r == R::LayerScale;
}

std::string hf_checkpoint_name(const ArchInfo& a, const std::string& name) {
  if (!a.traits.hf_text_config || name.rfind("model.", 0) != 0) return name;
  return "model.language_model." + name.substr(6);
}

bool tensor_needed(const ArchTensor& t, const ModelConfig& c, int layer) {
  const bool per_layer_need = t.need == N::IfDenseFfn || t.need == N::IfMoeFfn || t.need == N::IfMoeBias ||
                              t.need == N::IfAttention || t.need == N::IfDeltaNet || t.need == N::IfSharedExpert ||
                              t.need == N::IfOwnV;
  if (per_layer_need && (layer < 0 || layer >= c.n_layers))
    fail("internal: whether tensor '", t.gguf, "' is needed depends on its layer, and layer ", layer, " was given");
  switch (t.need) {
    case N::Always: return true;
    case N::IfQkvBias: return c.qkv_bias;
    case N::IfQkNorm: return c.qk_norm;
    case N::IfUntied: return !c.tied_embeddings;
    case N::IfDenseFfn: return !c.is_moe(layer);
    case N::IfMoeFfn: return c.is_moe(layer);
    case N::IfMoeBias: return c.moe_bias && c.is_moe(layer);
    case N::IfOutBias: return c.attn_out_bias;
    case N::IfSinks: return c.attn_sinks;
    case N::IfAttention: return !c.is_delta(layer);
    case N::IfDeltaNet: return c.is_delta(layer);
    case N::IfSharedExpert: return c.n_ff_shared > 0 && c.is_moe(layer);
    case N::IfOwnV: return !c.is_delta(layer) && !c.v_from_k(layer);
    case N::IfLayerScale: return c.layer_scale;
  }
  return true;
}

std::vector<int64_t> role_shape(TensorRole r, const ModelConfig& c, int layer) {
  const int64_t E = c.n_embd, F = c.n_ff, V = c.vocab_size;
  const int64_t d = layer >= 0 ? c.layer_head_dim(layer) : c.head_dim;
  const int64_t Q = c.n_heads * d, KV = (layer >= 0 ? c.layer_kv_heads(layer) : c.n_kv_heads) * d;
  const int64_t X = c.n_expert, XF = c.n_ff_expert;
  switch (r) {
    case R::TokEmbd: case R::Output: return {V, E};
    case R::OutputNorm: case R::AttnNorm: case R::PostAttnNorm: case R::FfnNorm: case R::PostFfnNorm: return {E};
    case R::Wq: return {c.attn_output_gate ? 2 * Q : Q, E};
    case R::Wk: case R::Wv: return {KV, E};
    case R::Bq: return {Q};
    case R::Bk: case R::Bv: return {KV};
    case R::QNorm: case R::KNorm: return {d};
    case R::Wo: return {E, Q};
    case R::Gate: case R::Up: return {F, E};
    case R::Down: return {E, F};
    case R::Router: return {X, E};
    case R::GateExps: case R::UpExps: return {X, XF, E};
    case R::DownExps: return {X, E, XF};
    case R::Bo: return {E};
    case R::Sinks: return {c.n_heads};
    case R::RouterBias: return {X};
    case R::GateExpsBias: case R::UpExpsBias: return {X, XF};
    case R::DownExpsBias: return {X, E};
    case R::DnQkv: return {c.delta.conv_dim(), E};
    case R::DnZ: return {c.delta.value_dim(), E};
    case R::DnBeta: case R::DnAlpha: return {c.delta.n_v_heads, E};
    case R::DnConv: return {c.delta.conv_dim(), c.delta.conv_kernel};
    case R::DnDtBias: case R::DnA: return {c.delta.n_v_heads};
    case R::DnNorm: return {c.delta.head_v_dim};
    case R::DnOut: return {E, c.delta.value_dim()};
    case R::SharedGateInp: return {E};
    case R::SharedGate: case R::SharedUp: return {c.n_ff_shared, E};
    case R::SharedDown: return {E, c.n_ff_shared};
    case R::LayerScale: return {1};
  }
  return {};
}

void apply_arch_traits(const ArchInfo& a, ModelConfig& c) {
  const ArchTraits& t = a.traits;
  c.arch = std::string(a.name);
  if (t.qkv_bias) c.qkv_bias = true;
  c.qk_norm = t.qk_norm;
  c.post_norms = t.post_norms;
  c.embed_scale = t.embed_scale;
  c.activation = t.activation;
  c.moe_bias = t.moe_bias;
  c.attn_out_bias = t.attn_out_bias;
  c.attn_sinks = t.attn_sinks;
  if (t.query_scale > 0) c.query_scale = t.query_scale;
  c.v_norm = t.v_norm;
  c.layer_scale = t.layer_scale;
  if (c.rope_theta_local == 0 && c.sliding_window > 0) c.rope_theta_local = t.default_rope_theta_local;
  c.attn_output_gate = t.attn_output_gate;
  if (c.rotary_dim == 0 && t.rotary_fraction < 1.0f && c.head_dim > 0)
    c.rotary_dim = static_cast<int>(c.head_dim * t.rotary_fraction) / 2 * 2;
  if (c.layers.empty() && t.full_attention_interval > 0 && c.n_layers > 0) {
    c.layers.resize(static_cast<size_t>(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
      if ((l + 1) % t.full_attention_interval != 0) c.layers[l].mixer = MixerKind::DeltaNet;
  }
  if (c.layers.empty() && t.sliding_period > 0 && c.sliding_window > 0 && c.n_layers > 0) {
    c.layers.resize(static_cast<size_t>(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
      if (l % t.sliding_period != t.full_index) c.layers[l] = {AttentionKind::Sliding, c.sliding_window};
  }
  if (t.last_layer_full && !c.layers.empty()) c.layers.back().attention = AttentionKind::Full, c.layers.back().window = 0;
}

}  // namespace triattn
