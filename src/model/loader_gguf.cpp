// GGUF models (llama.cpp naming). llama-arch files store q/k rows permuted for interleaved
// RoPE; they are reordered to halves here. qwen2/qwen3 files keep HF's halves order.
#include <algorithm>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/model_limits.h"
#include "model/arch.h"
#include "model/loaders.h"
#include "formats/stats_names.h"
#include "model/tensor_census.h"
#include "model/weight_prep.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

namespace {

RopeScalingType scaling_from_name(const std::string& path, const std::string& s) {
  if (s == "none" || s.empty()) return RopeScalingType::None;
  if (s == "linear") return RopeScalingType::Linear;
  if (s == "yarn") return RopeScalingType::Yarn;
  if (s == "llama3") return RopeScalingType::Llama3;
  fail(path, ": rope scaling type '", s, "' is not supported (none, linear, yarn, llama3)");
}

// Mixture of experts (<arch>.expert_count and friends). GGUF has no per-layer FFN key: a layer
// with a router (ffn_gate_inp) is a MoE layer, one with only a dense ffn_gate is dense.
void read_gguf_experts(const GgufFile& gguf, const std::string& path, const ArchTraits& traits, ModelConfig& c) {
  const std::string k = c.arch + ".";
  if (!gguf.has(k + "expert_count") || gguf.get_int(k + "expert_count") == 0) return;  // 0: a dense model
  c.n_expert = checked_dim(path, k + "expert_count", gguf.get_int(k + "expert_count"), ModelLimits::n_expert);
  c.n_expert_used = checked_dim(path, k + "expert_used_count", gguf.get_int(k + "expert_used_count"), c.n_expert);
  c.n_ff_expert = checked_dim(path, k + "expert_feed_forward_length",
                              gguf.get_int(k + "expert_feed_forward_length"), ModelLimits::n_ff);
  c.expert_weights_norm = gguf.has(k + "expert_weights_norm") ? gguf.get_bool(k + "expert_weights_norm")
                                                              : traits.gguf_expert_weights_norm;
  std::vector<int> dense;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (!gguf.find_tensor(b + "ffn_gate_inp.weight") && gguf.find_tensor(b + "ffn_gate.weight")) dense.push_back(l);
  }
  c.set_ffn_kinds(1, dense);
}

// Gated DeltaNet layers (llama.cpp's qwen35 keys, named after Mamba's): value heads of
// ssm.inner_size / time_step_rank, key heads of state_size, in the converter's tiled order.
// Layers whose index + 1 is a multiple of full_attention_interval are attention, the others
// DeltaNet.
void read_gguf_delta_net(const GgufFile& gguf, const std::string& path, const ArchTraits& traits, ModelConfig& c) {
  if (traits.full_attention_interval == 0) return;
  const std::string k = c.arch + ".";
  auto dim = [&](const std::string& key, int64_t max) { return checked_dim(path, key, gguf.get_int(key), max); };
  const int interval = gguf.has(k + "full_attention_interval")
                           ? dim(k + "full_attention_interval", ModelLimits::n_layers)
                           : traits.full_attention_interval;
  c.layers.assign(static_cast<size_t>(c.n_layers), LayerConfig{});
  for (int l = 0; l < c.n_layers; ++l)
    if ((l + 1) % interval != 0) c.layers[static_cast<size_t>(l)].mixer = MixerKind::DeltaNet;
  DeltaNetConfig& d = c.delta;
  d.conv_kernel = dim(k + "ssm.conv_kernel", 64);
  d.head_k_dim = dim(k + "ssm.state_size", ModelLimits::head_dim);
  d.n_k_heads = dim(k + "ssm.group_count", ModelLimits::n_heads);
  d.n_v_heads = dim(k + "ssm.time_step_rank", ModelLimits::n_heads);
  const int inner = dim(k + "ssm.inner_size", ModelLimits::n_embd);
  if (inner % d.n_v_heads != 0)
    fail(path, ": ", k, "ssm.inner_size ", inner, " is not a multiple of ", k, "ssm.time_step_rank ", d.n_v_heads);
  d.head_v_dim = inner / d.n_v_heads;
  d.v_heads_tiled = true;
}

// A key that is one integer, or an array of one per layer (llama.cpp writes head_count_kv and
// feed_forward_length so where layers differ): one value per layer; `fallback` when absent.
std::vector<int64_t> per_layer_ints(const GgufFile& gguf, const std::string& path, const std::string& key, int n_layers,
                                    int64_t fallback) {
  const GgufValue* v = gguf.find(key);
  if (!v) return std::vector<int64_t>(static_cast<size_t>(n_layers), fallback);
  if (v->type != GgufType::ARRAY) return std::vector<int64_t>(static_cast<size_t>(n_layers), gguf.get_int(key));
  std::vector<int64_t> out = gguf.get_int_array(key);
  if (static_cast<int64_t>(out.size()) != n_layers)
    fail(path, ": ", key, " has ", out.size(), " entries for ", n_layers, " layers");
  return out;
}

// Gemma 4 (llama.cpp's gemma4 keys): sliding_window_pattern (true = sliding) per layer; the
// full layers' head size in key_length and the sliding layers' in key_length_swa; KV heads per
// layer; RoPE over all of the full layers' head (rope_freqs.weight stops the bands that do not
// rotate); V = K where a full layer has no attn_v. Refuses the variants not run yet.
void read_gguf_gemma4(const GgufFile& gguf, const std::string& path, const std::vector<int64_t>& kv_heads,
                      ModelConfig& c) {
  const std::string k = c.arch + ".";
  auto dim = [&](const std::string& key, int64_t max) { return checked_dim(path, key, gguf.get_int(key), max); };
  const std::pair<const char*, const char*> unsupported[] = {{"attention.shared_kv_layers", "KV sharing"},
                                                             {"embedding_length_per_layer_input", "per-layer embeddings"},
                                                             {"expert_count", "the mixture of experts"}};
  for (const auto& [key, what] : unsupported)
    if (gguf.get_int_opt(k + key).value_or(0) > 0) fail(path, ": ", k, key, " > 0: ", what, " is not supported yet");
  c.layers.assign(static_cast<size_t>(c.n_layers), LayerConfig{});
  const GgufValue* pattern = gguf.find(k + "attention.sliding_window_pattern");
  if (pattern && (pattern->type != GgufType::ARRAY || static_cast<int64_t>(pattern->as_array().items.size()) != c.n_layers))
    fail(path, ": ", k, "attention.sliding_window_pattern must be an array of ", c.n_layers, " booleans");
  for (int l = 0; l < c.n_layers; ++l) {
    const bool sliding = pattern ? pattern->as_array().items[static_cast<size_t>(l)].as_bool() : (l + 1) % 6 != 0;
    if (sliding) c.layers[static_cast<size_t>(l)] = {AttentionKind::Sliding, c.sliding_window};
  }
  int full = -1, sliding = -1;
  for (int l = 0; l < c.n_layers; ++l) (c.is_sliding(l) ? sliding : full) = l;
  if (full < 0) fail(path, ": ", k, "attention.sliding_window_pattern has no full-attention layer");
  for (int l = 0; l < c.n_layers; ++l)
    if (kv_heads[static_cast<size_t>(l)] != kv_heads[static_cast<size_t>(c.is_sliding(l) ? sliding : full)])
      fail(path, ": ", k, "attention.head_count_kv differs between layers of one type (layer ", l, ")");
  c.n_kv_heads = checked_dim(path, k + "attention.head_count_kv", kv_heads[static_cast<size_t>(full)], ModelLimits::n_heads);
  if (sliding >= 0) {
    const int kv = checked_dim(path, k + "attention.head_count_kv", kv_heads[static_cast<size_t>(sliding)], ModelLimits::n_heads);
    const int d = gguf.has(k + "attention.key_length_swa") ? dim(k + "attention.key_length_swa", ModelLimits::head_dim)
                                                            : c.head_dim;
    if (gguf.has(k + "attention.value_length_swa") && dim(k + "attention.value_length_swa", ModelLimits::head_dim) != d)
      fail(path, ": ", k, "attention.value_length_swa differs from key_length_swa ", d);
    if (gguf.has(k + "rope.dimension_count_swa") && dim(k + "rope.dimension_count_swa", ModelLimits::head_dim) != d)
      fail(path, ": ", k, "rope.dimension_count_swa differs from key_length_swa ", d,
           " (partial RoPE on sliding layers is not supported)");
    c.n_kv_heads_swa = kv != c.n_kv_heads ? kv : 0;
    c.head_dim_swa = d != c.head_dim ? d : 0;
  }
  if (c.rotary_dim != 0 && c.rotary_dim != c.head_dim)
    fail(path, ": ", k, "rope.dimension_count ", c.rotary_dim, " differs from key_length ", c.head_dim,
         " (gemma4 rotates the whole head; rope_freqs.weight stops the bands that do not rotate)");
  c.rotary_dim = 0;
  c.k_eq_v = !gguf.find_tensor("blk." + std::to_string(full) + ".attn_v.weight");
}

}  // namespace

void load_gguf_model(ModelBuilder& m, const std::string& path) {
  auto gguf = GgufFile::open(path);
  m.keep_alive(gguf, &gguf->file());
  const std::string arch = gguf->get_string("general.architecture");
  const ArchInfo* info = find_arch(arch);
  if (!info) fail(path, ": architecture '", arch, "' is not supported (supported: ", arch_names(), ")");
  const ArchTraits* traits = &info->traits;

  ModelConfig& c = m.config();
  const std::string k = arch + ".";
  // Integers are range-checked at the width the file stores them (get_int gives the exact
  // value), before they are narrowed to the config's ints.
  auto dim = [&](const std::string& key, int64_t max) { return checked_dim(path, key, gguf->get_int(key), max); };
  auto dim_or = [&](const std::string& key, int64_t max, int fallback) {
    return gguf->has(key) ? dim(key, max) : fallback;
  };
  using Lim = ModelLimits;
  c.arch = arch;
  c.name = gguf->get_string_opt("general.name").value_or(std::filesystem::path(path).stem().string());
  c.n_layers = dim(k + "block_count", Lim::n_layers);
  c.n_embd = dim(k + "embedding_length", Lim::n_embd);
  c.n_heads = dim(k + "attention.head_count", Lim::n_heads);
  // Per-layer arrays where layers differ; only Gemma 4's sliding and full layers may.
  const std::vector<int64_t> ff = per_layer_ints(*gguf, path, k + "feed_forward_length", c.n_layers, 0);
  const std::vector<int64_t> kv_heads = per_layer_ints(*gguf, path, k + "attention.head_count_kv", c.n_layers, c.n_heads);
  if (std::adjacent_find(ff.begin(), ff.end(), std::not_equal_to<>()) != ff.end())
    fail(path, ": ", k, "feed_forward_length differs between layers (not supported)");
  if (!traits->per_type_attention &&
      std::adjacent_find(kv_heads.begin(), kv_heads.end(), std::not_equal_to<>()) != kv_heads.end())
    fail(path, ": ", k, "attention.head_count_kv differs between layers (not supported for ", arch, ")");
  // A MoE file may give only its experts' size.
  c.n_ff = ff[0] == 0 ? 0 : checked_dim(path, k + "feed_forward_length", ff[0], Lim::n_ff);
  c.n_kv_heads = checked_dim(path, k + "attention.head_count_kv", kv_heads[0], Lim::n_heads);
  if (gguf->has(k + "attention.key_length")) {
    c.head_dim = dim(k + "attention.key_length", Lim::head_dim);
  } else {
    // llama.cpp's default; a remainder would silently drop columns, so it is refused.
    if (c.n_embd % c.n_heads != 0)
      fail(path, ": ", k, "embedding_length ", c.n_embd, " is not a multiple of ", k, "attention.head_count ",
           c.n_heads, " and ", k, "attention.key_length is not given");
    c.head_dim = c.n_embd / c.n_heads;
  }
  if (gguf->has(k + "attention.value_length")) {
    const int v = dim(k + "attention.value_length", Lim::head_dim);
    if (v != c.head_dim)
      fail(path, ": ", k, "attention.value_length ", v, " differs from the key head size ", c.head_dim,
           " (separate value head sizes are not supported)");
  }
  if (gguf->has(k + "rope.dimension_count")) {
    const int dims = dim(k + "rope.dimension_count", Lim::head_dim);
    if (dims > c.head_dim)
      fail(path, ": ", k, "rope.dimension_count ", dims, " is above head_dim ", c.head_dim,
           " (RoPE cannot rotate more dimensions than a head has)");
    if (dims % 2 != 0) fail(path, ": ", k, "rope.dimension_count ", dims, " is odd (RoPE rotates pairs)");
    if (dims < c.head_dim && traits->gguf_interleaved_rope)
      fail(path, ": ", k, "rope.dimension_count ", dims, " is below head_dim ", c.head_dim,
           " (partial RoPE is not supported with ", arch, "'s interleaved q/k rows)");
    c.rotary_dim = dims;  // below head_dim: partial RoPE, the first dims coordinates rotate
  }
  c.context_length = dim_or(k + "context_length", Lim::context_length, 2048);
  c.rms_eps = static_cast<float>(gguf->get_float_opt(k + "attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_theta = static_cast<float>(gguf->get_float_opt(k + "rope.freq_base").value_or(10000.0));
  RopeScaling& rs = c.rope_scaling;
  rs.type = scaling_from_name(path, gguf->get_string_opt(k + "rope.scaling.type").value_or("none"));
  rs.factor = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.factor").value_or(1.0));
  rs.original_context = dim_or(k + "rope.scaling.original_context_length", Lim::context_length, 0);
  rs.low_freq_factor = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.low_freq_factor").value_or(1.0));
  rs.high_freq_factor = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.high_freq_factor").value_or(4.0));
  rs.beta_fast = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.yarn_beta_fast").value_or(32.0));
  rs.beta_slow = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.yarn_beta_slow").value_or(1.0));
  rs.attn_factor = static_cast<float>(gguf->get_float_opt(k + "rope.scaling.attn_factor").value_or(0.0));
  // GGUF has no key for transformers' `truncate`: the architecture's published config decides
  // (gpt-oss: false; llama.cpp rounds the ramp's ends for every model, so its gpt-oss logits
  // differ from transformers' by that).
  rs.truncate = traits->yarn_truncate;
  // Sliding-window layers (Gemma): the window, the local RoPE base, soft-caps, query scale.
  if (gguf->has(k + "attention.sliding_window"))
    c.sliding_window = dim(k + "attention.sliding_window", Lim::context_length);
  c.rope_theta_local = static_cast<float>(gguf->get_float_opt(k + "rope.freq_base_swa").value_or(0.0));
  c.attn_softcap = static_cast<float>(gguf->get_float_opt(k + "attn_logit_softcapping").value_or(0.0));
  c.final_softcap = static_cast<float>(gguf->get_float_opt(k + "final_logit_softcapping").value_or(0.0));
  c.query_scale = static_cast<float>(gguf->get_float_opt(k + "attention.scale").value_or(0.0));
  read_gguf_delta_net(*gguf, path, *traits, c);
  if (traits->per_type_attention) read_gguf_gemma4(*gguf, path, kv_heads, c);
  apply_arch_traits(*info, c);

  std::vector<std::string> names;
  // TriAttention statistics stored in the file are read by the KV policies, not the model.
  for (const GgufTensorInfo& t : gguf->tensors())
    if (t.name.rfind(kGgufStatsPrefix, 0) != 0) names.push_back(t.name);
  TensorCensus census(names, "blk.");
  // Before the layer table is sized by block_count.
  census.check_layer_count(c.n_layers, path + ": " + k + "block_count", "the file");
  // Qwen3.5's multi-token-prediction block is stored after the decoder's layers and counted
  // in block_count; generation does not run it (its tensors are named as unused).
  if (gguf->has(k + "nextn_predict_layers")) {
    const int64_t extra = gguf->get_int(k + "nextn_predict_layers");
    if (extra < 0 || extra >= c.n_layers)
      fail(path, ": ", k, "nextn_predict_layers is ", extra, "; it must be from 0 to block_count - 1 (",
           c.n_layers - 1, ")");
    c.n_layers -= static_cast<int>(extra);
    if (c.layers.size() > static_cast<size_t>(c.n_layers)) c.layers.resize(static_cast<size_t>(c.n_layers));
  }
  read_gguf_experts(*gguf, path, *traits, c);
  if (c.has_moe_layers() && gguf->has(k + "expert_shared_feed_forward_length"))
    c.n_ff_shared = dim(k + "expert_shared_feed_forward_length", Lim::n_ff);
  if (c.n_ff == 0) {
    if (c.n_ff_expert == 0) fail(path, ": ", k, "feed_forward_length is missing");
    c.n_ff = c.n_ff_expert;
  }

  auto tensor = [&](const std::string& name) -> TensorView {
    const GgufTensorInfo* t = gguf->find_tensor(name);
    if (!t) return TensorView{};
    census.mark_used(name);
    TensorView v = t->view();
    require_finite(v, path, name);  // a NaN/Inf weight is named here, not as NaN logits later
    return v;
  };
  auto required = [&](const std::string& name) -> TensorView {
    TensorView t = tensor(name);
    if (t.empty()) fail(path, ": tensor '", name, "' is missing");
    return t;
  };

  ModelWeights& w = m.weights();
  w.tok_embd = required("token_embd.weight");
  if (w.tok_embd.shape.size() != 2) fail(path, ": token_embd.weight must be 2-D");
  // The vocabulary size is the embedding's row count; a <arch>.vocab_size key, where a
  // converter wrote one, must agree (llama.cpp sizes the embedding by it).
  c.vocab_size = checked_dim(path, "the row count of token_embd.weight", w.tok_embd.shape[0], Lim::vocab_size);
  if (gguf->has(k + "vocab_size") && gguf->get_int(k + "vocab_size") != c.vocab_size)
    fail(path, ": ", k, "vocab_size ", gguf->get_int(k + "vocab_size"), " differs from the ", c.vocab_size,
         " rows of token_embd.weight");
  if (w.tok_embd.shape[1] != c.n_embd)
    fail(path, ": token_embd.weight has rows of ", w.tok_embd.shape[1], " values but ", k, "embedding_length is ",
         c.n_embd);
  w.output = tensor("output.weight");
  c.tied_embeddings = w.output.empty();
  if (c.tied_embeddings) w.output = w.tok_embd;
  if (TensorView f = tensor("rope_freqs.weight"); !f.empty()) {
    TensorView f32 = prep_f32(m, f);
    const auto* p = static_cast<const float*>(f32.data);
    c.rope_freq_factors.assign(p, p + f32.numel());
  }
  c.validate(path);

  fill_arch_weights(m, *info, TensorFormat::Gguf, required);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights& L = w.layers[l];
    if (traits->gguf_interleaved_rope) {
      check_shape(L.wq, {static_cast<int64_t>(c.n_heads) * c.head_dim, c.n_embd}, b + "attn_q.weight", path);
      check_shape(L.wk, {static_cast<int64_t>(c.n_kv_heads) * c.head_dim, c.n_embd}, b + "attn_k.weight", path);
      L.wq = prep_unpermute_rows(m, L.wq, c.n_heads, c.head_dim);
      L.wk = prep_unpermute_rows(m, L.wk, c.n_kv_heads, c.head_dim);
      L.bq = prep_unpermute_rows(m, L.bq, c.n_heads, c.head_dim);
      L.bk = prep_unpermute_rows(m, L.bk, c.n_kv_heads, c.head_dim);
    }
  }
  if (auto unused = census.unused_report(path)) m.warn(*unused);
  m.set_tokenizer(load_tokenizer_gguf(*gguf));
}

}  // namespace triattn
