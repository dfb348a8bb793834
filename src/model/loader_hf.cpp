// Hugging Face model directories: config.json + safetensors (single or sharded), HF tensor
// names, halves RoPE layout already.
#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "formats/json_fields.h"
#include "formats/model_limits.h"
#include "formats/safetensors.h"
#include "model/arch.h"
#include "model/loaders.h"
#include "model/tensor_census.h"
#include "model/weight_prep.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
}

void parse_rope_scaling(const JsonFields& cfg, RopeScaling& rs) {
  const std::optional<JsonFields> r = cfg.object_or_none("rope_scaling");
  if (!r) return;
  const std::string type = r->text_or("rope_type", r->text_or("type", "default"));
  if (type == "default") return;
  if (type == "linear") rs.type = RopeScalingType::Linear;
  else if (type == "llama3") rs.type = RopeScalingType::Llama3;
  else if (type == "yarn") rs.type = RopeScalingType::Yarn;
  else fail(cfg.file(), ": rope_scaling type '", type, "' is not supported (linear, llama3, yarn)");
  rs.factor = r->positive_float_or("factor", 1.0f);
  rs.original_context = r->positive_int_or("original_max_position_embeddings", ModelLimits::context_length, 0);
  rs.low_freq_factor = r->positive_float_or("low_freq_factor", 1.0f);
  rs.high_freq_factor = r->positive_float_or("high_freq_factor", 4.0f);
  rs.beta_fast = r->positive_float_or("beta_fast", 32.0f);
  rs.beta_slow = r->positive_float_or("beta_slow", 1.0f);
  rs.attn_factor = r->positive_float_or("attention_factor", 0.0f);
  rs.truncate = r->bool_or("truncate", true);  // transformers' default
}

// Mixture of experts (Qwen3-MoE's config.json): num_experts of moe_intermediate_size, the best
// num_experts_per_tok per token, renormalised when norm_topk_prob; layer l is a MoE layer when
// it is not in mlp_only_layers and (l + 1) % decoder_sparse_step == 0 (transformers' rule).
void read_hf_experts(const JsonFields& cfg, const json& raw, ModelConfig& c) {
  if (cfg.has("num_local_experts")) {
    // gpt-oss: every layer MoE, experts of intermediate_size, clamped SwiGLU at swiglu_limit.
    c.n_expert = static_cast<int>(cfg.positive_int("num_local_experts", ModelLimits::n_expert));
    c.n_expert_used = static_cast<int>(cfg.positive_int("num_experts_per_tok", c.n_expert));
    c.n_ff_expert = c.n_ff;
    c.expert_weights_norm = true;  // softmax over the top-k logits (model/arch.cpp gpt_oss_traits)
    c.swiglu_limit = cfg.positive_float_or("swiglu_limit", 7.0f);
    c.set_ffn_kinds(1, {});
    return;
  }
  if (!cfg.has("num_experts")) return;
  if (const json& n = raw.at("num_experts"); n.is_number_integer() && n.get<int64_t>() == 0) return;  // dense (transformers)
  c.n_expert = static_cast<int>(cfg.positive_int("num_experts", ModelLimits::n_expert));
  c.n_expert_used = static_cast<int>(cfg.positive_int("num_experts_per_tok", c.n_expert));
  c.n_ff_expert = static_cast<int>(cfg.positive_int("moe_intermediate_size", ModelLimits::n_ff));
  c.expert_weights_norm = cfg.bool_or("norm_topk_prob", false);
  const int step = static_cast<int>(cfg.positive_int_or("decoder_sparse_step", ModelLimits::n_layers, 1));
  std::vector<int> dense;
  if (const auto it = raw.find("mlp_only_layers"); it != raw.end() && !it->is_null()) {
    if (!it->is_array()) fail(cfg.file(), ": 'mlp_only_layers' must be a list of layer indices");
    for (const json& v : *it) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.n_layers)
        fail(cfg.file(), ": 'mlp_only_layers' holds ", v.dump(), "; its entries must be layer indices from 0 to ",
             c.n_layers - 1);
      dense.push_back(v.get<int>());
    }
  }
  c.set_ffn_kinds(step, dense);
}

// Qwen3.5's RoPE (rope_parameters: theta, the rotated fraction of each head; the M-RoPE
// sections reduce to plain RoPE for text) and its layer mix (layer_types: linear_attention
// layers are Gated DeltaNets of the linear_* sizes).
void read_hf_rope_parameters(const JsonFields& cfg, ModelConfig& c) {
  const std::optional<JsonFields> r = cfg.object_or_none("rope_parameters");
  if (!r) return;
  if (r->has("full_attention") || r->has("sliding_attention")) return;  // per layer type (read_hf_gemma4)
  const std::string type = r->text_or("rope_type", "default");
  if (type != "default") fail(cfg.file(), ": rope_parameters.rope_type '", type, "' is not supported (default)");
  c.rope_theta = r->positive_float_or("rope_theta", c.rope_theta);
  const float fraction = r->positive_float_or("partial_rotary_factor", 1.0f);
  if (fraction > 1.0f) fail(cfg.file(), ": rope_parameters.partial_rotary_factor ", fraction, " is above 1");
  c.rotary_dim = static_cast<int>(static_cast<float>(c.head_dim) * fraction) / 2 * 2;
}

// A whole number from 0 (none) to `max`: the Gemma 4 fields whose 0 means "not used".
int64_t count_or_zero(const JsonFields& cfg, const nlohmann::json& raw, const std::string& key, int64_t max) {
  if (const auto it = raw.find(key); it != raw.end() && it->is_number_integer() && it->get<int64_t>() == 0) return 0;
  return cfg.positive_int_or(key, max, 0);
}

// Gemma 4: the full layers' own head size (global_head_dim) and, where V is K's projection
// (attention_k_eq_v), KV heads (num_global_key_value_heads); RoPE per layer type in
// rope_parameters: the sliding layers' plain, the full layers' "proportional" (frequencies
// over all of the head, only the first partial_rotary_factor of its pairs rotating: the others
// get frequency 0, as llama.cpp's rope_freqs of 1e30 says). Refuses the variants not run yet.
void read_hf_gemma4(const JsonFields& cfg, const nlohmann::json& raw, ModelConfig& c) {
  using Lim = ModelLimits;
  for (const char* key : {"num_kv_shared_layers", "hidden_size_per_layer_input"})
    if (count_or_zero(cfg, raw, key, Lim::n_embd) > 0)
      fail(cfg.file(), ": ", cfg.quoted(key), " > 0 (", key[0] == 'n' ? "KV sharing" : "per-layer embeddings",
           ") is not supported yet");
  if (cfg.bool_or("enable_moe_block", false)) fail(cfg.file(), ": ", cfg.quoted("enable_moe_block"), " (Gemma 4 MoE) is not supported yet");
  const int swa_head_dim = c.head_dim, swa_kv_heads = c.n_kv_heads;
  if (cfg.has("global_head_dim")) c.head_dim = static_cast<int>(cfg.positive_int("global_head_dim", Lim::head_dim));
  c.k_eq_v = cfg.bool_or("attention_k_eq_v", false);
  if (c.k_eq_v && cfg.has("num_global_key_value_heads"))
    c.n_kv_heads = static_cast<int>(cfg.positive_int("num_global_key_value_heads", Lim::n_heads));
  c.head_dim_swa = swa_head_dim != c.head_dim ? swa_head_dim : 0;
  c.n_kv_heads_swa = swa_kv_heads != c.n_kv_heads ? swa_kv_heads : 0;
  const std::optional<JsonFields> r = cfg.object_or_none("rope_parameters");
  if (!r) return;
  if (const std::optional<JsonFields> s = r->object_or_none("sliding_attention")) {
    const std::string type = s->text_or("rope_type", "default");
    if (type != "default") fail(cfg.file(), ": rope_parameters.sliding_attention.rope_type '", type, "' is not supported (default)");
    c.rope_theta_local = s->positive_float_or("rope_theta", 10000.0f);
  }
  if (const std::optional<JsonFields> f = r->object_or_none("full_attention")) {
    const std::string type = f->text_or("rope_type", "default");
    if (type != "default" && type != "proportional")
      fail(cfg.file(), ": rope_parameters.full_attention.rope_type '", type, "' is not supported (proportional, default)");
    c.rope_theta = f->positive_float_or("rope_theta", 1e6f);
    const float fraction = f->positive_float_or("partial_rotary_factor", 1.0f);
    if (fraction > 1.0f) fail(cfg.file(), ": rope_parameters.full_attention.partial_rotary_factor ", fraction, " is above 1");
    if (type == "default" && fraction < 1.0f)
      fail(cfg.file(), ": rope_parameters.full_attention: a partial_rotary_factor with rope_type default is not supported");
    // transformers divides every frequency (the still ones stay 0) by the factor: linear scaling.
    if (const float factor = f->positive_float_or("factor", 1.0f); factor != 1.0f)
      c.rope_scaling.type = RopeScalingType::Linear, c.rope_scaling.factor = factor;
    const int pairs = c.head_dim / 2, rotated = static_cast<int>(fraction * static_cast<float>(c.head_dim)) / 2;
    if (rotated < pairs) {
      c.rope_freq_factors.assign(static_cast<size_t>(pairs), 1.0f);
      for (int i = rotated; i < pairs; ++i) c.rope_freq_factors[static_cast<size_t>(i)] = std::numeric_limits<float>::infinity();
    }
  }
}

void read_hf_delta_net(const JsonFields& cfg, ModelConfig& c) {
  if (!c.has_delta_layers()) return;
  using Lim = ModelLimits;
  DeltaNetConfig& d = c.delta;
  d.n_k_heads = static_cast<int>(cfg.positive_int("linear_num_key_heads", Lim::n_heads));
  d.n_v_heads = static_cast<int>(cfg.positive_int("linear_num_value_heads", Lim::n_heads));
  d.head_k_dim = static_cast<int>(cfg.positive_int("linear_key_head_dim", Lim::head_dim));
  d.head_v_dim = static_cast<int>(cfg.positive_int("linear_value_head_dim", Lim::head_dim));
  d.conv_kernel = static_cast<int>(cfg.positive_int_or("linear_conv_kernel_dim", 64, 4));
  d.v_heads_tiled = false;  // HF: value heads grouped by key head
}

// config.json -> ModelConfig. Every value is range-checked as read (JsonFields), so nothing
// is truncated or wrapped on its way into the config's ints. `cfg` holds the text model's
// fields (config.json itself, or its text_config), `type` the file's model_type.
const ArchInfo& parse_config(const JsonFields& cfg, const json& raw, const std::string& type, const std::string& dir,
                             ModelConfig& c) {
  const ArchInfo* info = find_arch_hf(type);
  if (!info) fail(cfg.file(), ": model_type '", type, "' is not supported (", arch_hf_names(), ")");
  c.arch = std::string(info->name);
  c.name = std::filesystem::path(dir).filename().string();
  if (c.name.empty()) c.name = std::filesystem::path(dir).parent_path().filename().string();
  using Lim = ModelLimits;
  c.n_layers = static_cast<int>(cfg.positive_int("num_hidden_layers", Lim::n_layers));
  c.n_embd = static_cast<int>(cfg.positive_int("hidden_size", Lim::n_embd));
  // A MoE model with no dense layer may give only its experts' size.
  c.n_ff = static_cast<int>(cfg.has("intermediate_size") || !cfg.has("moe_intermediate_size")
                                ? cfg.positive_int("intermediate_size", Lim::n_ff)
                                : cfg.positive_int("moe_intermediate_size", Lim::n_ff));
  c.n_heads = static_cast<int>(cfg.positive_int("num_attention_heads", Lim::n_heads));
  c.n_kv_heads = static_cast<int>(cfg.positive_int_or("num_key_value_heads", Lim::n_heads, c.n_heads));
  if (cfg.has("head_dim")) {
    c.head_dim = static_cast<int>(cfg.positive_int("head_dim", Lim::head_dim));
  } else {
    // transformers' default; a remainder would silently drop columns, so it is refused.
    if (c.n_embd % c.n_heads != 0)
      fail(cfg.file(), ": 'hidden_size' ", c.n_embd, " is not a multiple of 'num_attention_heads' ", c.n_heads,
           " and 'head_dim' is not given");
    c.head_dim = c.n_embd / c.n_heads;
  }
  c.vocab_size = static_cast<int>(cfg.positive_int("vocab_size", Lim::vocab_size));
  c.context_length = cfg.positive_int_or("max_position_embeddings", Lim::context_length, 2048);
  c.rms_eps = cfg.positive_float_or("rms_norm_eps", 1e-6f);
  c.rope_theta = cfg.positive_float_or("rope_theta", 10000.0f);
  c.tied_embeddings = cfg.bool_or("tie_word_embeddings", info->traits.default_tied);
  c.qkv_bias = cfg.bool_or("attention_bias", false);
  parse_rope_scaling(cfg, c.rope_scaling);
  // Sliding-window layers, soft-caps and query scaling (Gemma); absent for llama/qwen.
  if (cfg.has("sliding_window"))
    c.sliding_window = static_cast<int>(cfg.positive_int("sliding_window", Lim::context_length));
  c.rope_theta_local = cfg.positive_float_or("rope_local_base_freq", 0.0f);
  c.attn_softcap = cfg.positive_float_or("attn_logit_softcapping", 0.0f);
  c.final_softcap = cfg.positive_float_or("final_logit_softcapping", 0.0f);
  if (cfg.has("query_pre_attn_scalar"))
    c.query_scale = 1.0f / std::sqrt(cfg.positive_float_or("query_pre_attn_scalar", 1.0f));
  if (const auto it = raw.find("layer_types"); it != raw.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != c.n_layers)
      fail(cfg.file(), ": 'layer_types' must be a list of ", c.n_layers, " entries (one per layer)");
    c.layers.resize(it->size());
    for (size_t l = 0; l < it->size(); ++l) {
      const std::string t = (*it)[l].is_string() ? (*it)[l].get<std::string>() : std::string("?");
      if (t == "sliding_attention") c.layers[l] = {AttentionKind::Sliding, c.sliding_window};
      else if (t == "linear_attention" && info->traits.full_attention_interval > 0) c.layers[l].mixer = MixerKind::DeltaNet;
      else if (t != "full_attention")
        fail(cfg.file(), ": layer_types[", l, "] is '", t, "' (expected full_attention or sliding_attention",
             info->traits.full_attention_interval > 0 ? ", or linear_attention)" : ")");
    }
  }
  read_hf_rope_parameters(cfg, c);
  if (info->traits.per_type_attention) read_hf_gemma4(cfg, raw, c);
  apply_arch_traits(*info, c);
  read_hf_delta_net(cfg, c);
  read_hf_experts(cfg, raw, c);
  if (c.has_moe_layers() && info->traits.full_attention_interval > 0) {
    // Qwen3.5-MoE: the router always renormalises its top k; a gated shared expert beside it.
    c.expert_weights_norm = true;
    c.n_ff_shared = static_cast<int>(cfg.positive_int_or("shared_expert_intermediate_size", Lim::n_ff, 0));
  }
  // transformers applies rope_scaling to the global (full) layers only: where sliding layers
  // have their own base (Gemma 3), rope_scaling_local stays none.
  const std::string act = cfg.text_or("hidden_act", cfg.text_or("hidden_activation", ""));
  const char* want = c.activation == Activation::GeluTanh ? "gelu_pytorch_tanh" : "silu";
  if (!act.empty() && act != want)
    fail(cfg.file(), ": hidden_act '", act, "' is not supported for ", c.arch, " (", want, ")");
  c.validate(cfg.file());
  return *info;
}

}  // namespace

void load_hf_model(ModelBuilder& m, const std::string& dir) {
  const std::string cfg_path = (std::filesystem::path(dir) / "config.json").string();
  const json cfg_json = read_json(cfg_path);
  ModelConfig& c = m.config();
  const JsonFields top(cfg_json, cfg_path);
  // A multimodal checkpoint (Qwen3.5 as released) keeps the text model in text_config and
  // its tensors under model.language_model.; its vision tower is not loaded (the census
  // names its tensors as unused).
  const bool nested = cfg_json.contains("text_config") && cfg_json["text_config"].is_object();
  const json& text_json = nested ? cfg_json["text_config"] : cfg_json;
  const ArchInfo& info = parse_config(JsonFields(text_json, cfg_path, nested ? "text_config." : ""), text_json,
                                      top.text("model_type"), dir, c);
  if (nested && !info.traits.hf_text_config)
    fail(cfg_path, ": a text_config section is not expected for model_type '", top.text("model_type"), "'");
  // Multimodal configs may say tie_word_embeddings at the top level only.
  if (nested && !text_json.contains("tie_word_embeddings"))
    c.tied_embeddings = top.bool_or("tie_word_embeddings", info.traits.default_tied);
  auto in_file = [&](const std::string& name) { return nested ? hf_checkpoint_name(info, name) : name; };

  auto ckpt = std::make_shared<HfCheckpoint>(HfCheckpoint::open(dir));
  m.keep_alive(ckpt);
  const std::string& source = ckpt->source();
  TensorCensus census(ckpt->names(), in_file("model.layers."));
  // Before the layer table is sized by the config.
  census.check_layer_count(c.n_layers, cfg_path, source);

  auto tensor = [&](const std::string& table_name) -> TensorView {
    const std::string name = in_file(table_name);
    const SafetensorsTensor* t = ckpt->find(name);
    if (!t) return TensorView{};
    census.mark_used(t->name);  // a tied alias marks the tensor it resolves to
    TensorView v = t->view();
    require_finite(v, source, t->name);  // a NaN/Inf weight is named here, not as NaN logits later
    return v;
  };
  auto required = [&](const std::string& name) -> TensorView {
    TensorView t = tensor(name);
    if (t.empty()) fail(source, ": tensor '", in_file(name), "' is missing");
    return t;
  };

  ModelWeights& w = m.weights();
  if (c.tied_embeddings) {
    // Tied checkpoints may store only one of the two (TinyStories keeps only lm_head).
    const bool has_embed = ckpt->find(in_file("model.embed_tokens.weight")) != nullptr;
    w.tok_embd = has_embed ? tensor("model.embed_tokens.weight") : tensor("lm_head.weight");
    if (w.tok_embd.empty())
      fail(source, ": tensor '", in_file("model.embed_tokens.weight"), "' is missing (and so is 'lm_head.weight')");
    w.output = w.tok_embd;
  } else {
    w.tok_embd = required("model.embed_tokens.weight");
    w.output = tensor("lm_head.weight");
    if (w.output.empty())
      fail(source, ": tensor 'lm_head.weight' is missing and embeddings are not tied (tie_word_embeddings in ",
           cfg_path, ")");
  }
  fill_arch_weights(m, info, TensorFormat::Hf, required, tensor);
  if (auto unused = census.unused_report(source)) m.warn(*unused);
  m.set_tokenizer(load_tokenizer_hf_dir(dir));
}

}  // namespace triattn
