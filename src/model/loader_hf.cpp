// Hugging Face model directories: config.json + safetensors (single or sharded), HF tensor
// names, halves RoPE layout already.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "formats/safetensors.h"
#include "model/loaders.h"
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

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

void parse_rope_scaling(const json& cfg, RopeScaling& rs, const std::string& path) {
  auto it = cfg.find("rope_scaling");
  if (it == cfg.end() || it->is_null()) return;
  const json& r = *it;
  std::string type = get_or<std::string>(r, "rope_type", get_or<std::string>(r, "type", "default"));
  if (type == "default") return;
  if (type == "linear") rs.type = RopeScalingType::Linear;
  else if (type == "llama3") rs.type = RopeScalingType::Llama3;
  else if (type == "yarn") rs.type = RopeScalingType::Yarn;
  else fail(path, ": rope_scaling type '", type, "' is not supported (linear, llama3, yarn)");
  rs.factor = get_or<float>(r, "factor", 1.0f);
  rs.original_context = get_or<int64_t>(r, "original_max_position_embeddings", 0);
  rs.low_freq_factor = get_or<float>(r, "low_freq_factor", 1.0f);
  rs.high_freq_factor = get_or<float>(r, "high_freq_factor", 4.0f);
  rs.beta_fast = get_or<float>(r, "beta_fast", 32.0f);
  rs.beta_slow = get_or<float>(r, "beta_slow", 1.0f);
  rs.attn_factor = get_or<float>(r, "attention_factor", 0.0f);
}

}  // namespace

void load_hf_model(Model& m, const std::string& dir) {
  const std::string cfg_path = (std::filesystem::path(dir) / "config.json").string();
  const json cfg = read_json(cfg_path);
  ModelConfig& c = m.config_;
  try {
    const std::string type = get_or<std::string>(cfg, "model_type", "");
    if (type == "llama" || type == "mistral") c.arch = "llama";
    else if (type == "qwen2") c.arch = "qwen2";
    else if (type == "qwen3") c.arch = "qwen3";
    else fail(cfg_path, ": model_type '", type, "' is not supported (llama, mistral, qwen2, qwen3)");
    c.name = std::filesystem::path(dir).filename().string();
    if (c.name.empty()) c.name = std::filesystem::path(dir).parent_path().filename().string();
    c.n_layers = cfg.at("num_hidden_layers").get<int>();
    c.n_embd = cfg.at("hidden_size").get<int>();
    c.n_ff = cfg.at("intermediate_size").get<int>();
    c.n_heads = cfg.at("num_attention_heads").get<int>();
    c.n_kv_heads = get_or<int>(cfg, "num_key_value_heads", c.n_heads);
    c.head_dim = get_or<int>(cfg, "head_dim", c.n_heads > 0 ? c.n_embd / c.n_heads : 0);
    c.vocab_size = cfg.at("vocab_size").get<int>();
    c.context_length = get_or<int64_t>(cfg, "max_position_embeddings", 2048);
    c.rms_eps = get_or<float>(cfg, "rms_norm_eps", 1e-6f);
    c.rope_theta = get_or<float>(cfg, "rope_theta", 10000.0f);
    c.tied_embeddings = get_or<bool>(cfg, "tie_word_embeddings", false);
    c.qkv_bias = c.arch == "qwen2" ? true : get_or<bool>(cfg, "attention_bias", false);
    c.qk_norm = c.arch == "qwen3";
    const std::string act = get_or<std::string>(cfg, "hidden_act", "silu");
    if (act != "silu") fail(cfg_path, ": hidden_act '", act, "' is not supported (silu)");
    parse_rope_scaling(cfg, c.rope_scaling, cfg_path);
  } catch (const nlohmann::json::exception& e) {
    fail(cfg_path, ": ", e.what());
  }
  c.validate();

  auto ckpt = std::make_shared<HfCheckpoint>(HfCheckpoint::open(dir));
  m.keep_alive_.push_back(ckpt);
  auto tensor = [&](const std::string& name) -> TensorView {
    const SafetensorsTensor* t = ckpt->find(name);
    return t ? t->view() : TensorView{};
  };
  auto required = [&](const std::string& name) -> TensorView {
    TensorView t = tensor(name);
    if (t.empty()) fail(dir, ": tensor '", name, "' is missing");
    return t;
  };

  ModelWeights& w = m.weights_;
  w.tok_embd = tensor("model.embed_tokens.weight");
  w.output = tensor("lm_head.weight");
  // Tied checkpoints may store only one of the two (TinyStories keeps only lm_head).
  if (w.tok_embd.empty() && c.tied_embeddings) w.tok_embd = w.output;
  if (w.tok_embd.empty()) fail(dir, ": tensor 'model.embed_tokens.weight' is missing");
  if (c.tied_embeddings || w.output.empty()) {
    if (!c.tied_embeddings) fail(dir, ": tensor 'lm_head.weight' is missing and embeddings are not tied");
    w.output = w.tok_embd;
  }
  w.output_norm = prep_f32(m, required("model.norm.weight"));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    L.attn_norm = prep_f32(m, required(b + "input_layernorm.weight"));
    L.ffn_norm = prep_f32(m, required(b + "post_attention_layernorm.weight"));
    L.wq = required(b + "self_attn.q_proj.weight");
    L.wk = required(b + "self_attn.k_proj.weight");
    L.wv = required(b + "self_attn.v_proj.weight");
    L.wo = required(b + "self_attn.o_proj.weight");
    L.w_gate = required(b + "mlp.gate_proj.weight");
    L.w_up = required(b + "mlp.up_proj.weight");
    L.w_down = required(b + "mlp.down_proj.weight");
    if (c.qkv_bias) {
      L.bq = prep_f32(m, required(b + "self_attn.q_proj.bias"));
      L.bk = prep_f32(m, required(b + "self_attn.k_proj.bias"));
      L.bv = prep_f32(m, required(b + "self_attn.v_proj.bias"));
    }
    if (c.qk_norm) {
      L.q_norm = prep_f32(m, required(b + "self_attn.q_norm.weight"));
      L.k_norm = prep_f32(m, required(b + "self_attn.k_norm.weight"));
    }
  }
  m.tokenizer_ = load_tokenizer_hf_dir(dir);
}

}  // namespace triattn
