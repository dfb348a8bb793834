#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "core/error.h"

namespace triattn {

namespace {

// HF transformers' YaRN: blend interpolated and extrapolated frequencies with a linear ramp
// over the bands whose wavelength falls between beta_fast and beta_slow rotations.
void apply_yarn(std::vector<double>& freq, const ModelConfig& c, const RopeScaling& s, double base) {
  const double d = c.rotary_dims();
  const double max_pos = s.original_context > 0 ? s.original_context : c.context_length;
  auto correction_dim = [&](double rotations) {
    return d * std::log(max_pos / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(0.0, low);
  high = std::min(d - 1, high);
  if (low == high) high += 0.001;
  for (size_t f = 0; f < freq.size(); ++f) {
    const double ramp = std::clamp((static_cast<double>(f) - low) / (high - low), 0.0, 1.0);
    const double extrapolation_weight = 1.0 - ramp;
    const double interp = freq[f] / s.factor;
    freq[f] = interp * (1 - extrapolation_weight) + freq[f] * extrapolation_weight;
  }
}

// HF transformers' llama3 scaling: long wavelengths divided by factor, short ones kept,
// a smooth blend between.
void apply_llama3(std::vector<double>& freq, const RopeScaling& s) {
  const double old_ctx = static_cast<double>(s.original_context);
  const double low_wavelen = old_ctx / s.low_freq_factor;
  const double high_wavelen = old_ctx / s.high_freq_factor;
  for (double& w : freq) {
    const double wavelen = 2 * std::numbers::pi / w;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      w /= s.factor;
    } else {
      const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      w = (1 - smooth) * w / s.factor + smooth * w;
    }
  }
}

// Over `dims` rotated coordinates; the per-band divisors apply where `factors` (the full layers'
// bands, or every layer's when they share the full layers' RoPE).
std::vector<float> freqs_for(const ModelConfig& c, float theta, const RopeScaling& scaling, int dims, bool factors) {
  const int n = dims / 2;
  std::vector<double> freq(static_cast<size_t>(n));
  for (int f = 0; f < n; ++f) freq[f] = std::pow(static_cast<double>(theta), -2.0 * f / dims);
  switch (scaling.type) {
    case RopeScalingType::None: break;
    case RopeScalingType::Linear:
      for (double& w : freq) w /= scaling.factor;
      break;
    case RopeScalingType::Llama3: apply_llama3(freq, scaling); break;
    case RopeScalingType::Yarn: apply_yarn(freq, c, scaling, theta); break;
  }
  if (factors && !c.rope_freq_factors.empty())
    for (int f = 0; f < n; ++f) freq[f] /= c.rope_freq_factors[f];
  return std::vector<float>(freq.begin(), freq.end());
}
}  // namespace

std::vector<float> ModelConfig::rope_freqs() const {
  return freqs_for(*this, rope_theta, rope_scaling, rotary_dims(), true);
}

std::vector<float> ModelConfig::rope_freqs(int l) const {
  if (is_sliding(l) && rope_theta_local > 0)
    return freqs_for(*this, rope_theta_local, rope_scaling_local, layer_rotary_dims(l), false);
  return rope_freqs();
}

int ModelConfig::max_head_dim() const {
  int m = head_dim;
  for (int l = 0; l < n_layers; ++l) m = std::max(m, layer_head_dim(l));
  return m;
}

int ModelConfig::max_kv_heads() const {
  int m = n_kv_heads;
  for (int l = 0; l < n_layers; ++l) m = std::max(m, layer_kv_heads(l));
  return m;
}

bool ModelConfig::layer_shape_differs() const {
  for (int l = 0; l < n_layers; ++l)
    if (layer_head_dim(l) != head_dim || layer_kv_heads(l) != n_kv_heads) return true;
  return false;
}

bool ModelConfig::has_sliding_layers() const {
  for (const LayerConfig& L : layers)
    if (L.attention == AttentionKind::Sliding) return true;
  return false;
}

bool ModelConfig::has_delta_layers() const {
  for (const LayerConfig& L : layers)
    if (L.mixer == MixerKind::DeltaNet) return true;
  return false;
}

bool ModelConfig::has_moe_layers() const {
  for (const LayerConfig& L : layers)
    if (L.ffn == FfnKind::Moe) return true;
  return false;
}

void ModelConfig::set_ffn_kinds(int sparse_step, const std::vector<int>& dense_layers) {
  if (layers.empty()) layers.resize(static_cast<size_t>(n_layers));
  for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
    const bool dense = std::find(dense_layers.begin(), dense_layers.end(), l) != dense_layers.end();
    const bool moe = n_expert > 0 && !dense && sparse_step > 0 && (l + 1) % sparse_step == 0;
    layers[static_cast<size_t>(l)].ffn = moe ? FfnKind::Moe : FfnKind::Dense;
  }
}

std::vector<int> ModelConfig::full_attention_layers() const {
  std::vector<int> out;
  for (int l = 0; l < n_layers; ++l)
    if (!is_sliding(l) && !is_delta(l)) out.push_back(l);
  return out;
}

float ModelConfig::rope_attn_factor() const {
  if (rope_scaling.type != RopeScalingType::Yarn) return 1.0f;
  if (rope_scaling.attn_factor > 0) return rope_scaling.attn_factor;
  if (rope_scaling.factor <= 1) return 1.0f;
  return static_cast<float>(0.1 * std::log(rope_scaling.factor) + 1.0);
}

int checked_dim(const std::string& where, const std::string& key, int64_t value, int64_t max) {
  if (value < 1 || value > max)
    fail(where, ": ", key, " is ", value, "; it must be a whole number from 1 to ", max);
  return static_cast<int>(value);
}

void ModelConfig::validate(const std::string& where) const {
  auto in_range = [&](const char* field, int64_t v, int64_t max) { checked_dim(where, field, v, max); };
  in_range("n_layers", n_layers, ModelLimits::n_layers);
  in_range("n_embd", n_embd, ModelLimits::n_embd);
  in_range("n_ff", n_ff, ModelLimits::n_ff);
  in_range("n_heads", n_heads, ModelLimits::n_heads);
  in_range("n_kv_heads", n_kv_heads, ModelLimits::n_heads);
  in_range("head_dim", head_dim, ModelLimits::head_dim);
  in_range("vocab_size", vocab_size, ModelLimits::vocab_size);
  in_range("context_length", context_length, ModelLimits::context_length);
  if (n_heads % n_kv_heads != 0)
    fail(where, ": n_heads (", n_heads, ") is not a multiple of n_kv_heads (", n_kv_heads, ")");
  if (head_dim % 2 != 0) fail(where, ": head_dim must be even for RoPE, got ", head_dim);
  if (!(rope_theta > 0) || !std::isfinite(rope_theta))
    fail(where, ": rope theta must be a positive number, got ", rope_theta);
  if (!(rms_eps > 0) || !std::isfinite(rms_eps)) fail(where, ": rms_norm_eps must be a positive number, got ", rms_eps);
  if (rope_scaling.type != RopeScalingType::None && (!(rope_scaling.factor > 0) || !std::isfinite(rope_scaling.factor)))
    fail(where, ": rope scaling factor must be a positive number, got ", rope_scaling.factor);
  if (rope_scaling.original_context < 0 || rope_scaling.original_context > ModelLimits::context_length)
    fail(where, ": rope scaling original context length is ", rope_scaling.original_context,
         "; it must be from 0 (none) to ", ModelLimits::context_length);
  if (rope_scaling.type == RopeScalingType::Llama3 &&
      (rope_scaling.original_context <= 0 || rope_scaling.high_freq_factor <= rope_scaling.low_freq_factor))
    fail(where, ": llama3 rope scaling needs original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor");
  if (!layers.empty() && static_cast<int64_t>(layers.size()) != n_layers)
    fail(where, ": ", layers.size(), " layer entries for ", n_layers, " layers");
  if (head_dim_swa < 0 || head_dim_swa > ModelLimits::head_dim || head_dim_swa % 2 != 0)
    fail(where, ": sliding layers' head_dim is ", head_dim_swa, "; it must be an even number up to ", ModelLimits::head_dim);
  if (n_kv_heads_swa < 0 || n_kv_heads_swa > ModelLimits::n_heads || (n_kv_heads_swa > 0 && n_heads % n_kv_heads_swa != 0))
    fail(where, ": sliding layers have ", n_kv_heads_swa, " KV heads; n_heads (", n_heads, ") must be a multiple of them");
  // Their RoPE table is their own (rope_freqs(l)), sized by their head_dim.
  if (head_dim_swa > 0 && head_dim_swa != head_dim && !(rope_theta_local > 0))
    fail(where, ": sliding layers with their own head_dim need their own RoPE base");
  for (size_t l = 0; l < layers.size(); ++l)
    if (layers[l].attention == AttentionKind::Sliding && (layers[l].window < 1 || layers[l].window > ModelLimits::context_length))
      fail(where, ": layer ", l, " is sliding-window attention but its window is ", layers[l].window,
           " (it must be from 1 to ", ModelLimits::context_length, ")");
  if (!(rope_theta_local >= 0) || !std::isfinite(rope_theta_local))
    fail(where, ": sliding-window rope theta must be a positive number, got ", rope_theta_local);
  for (float v : {query_scale, attn_softcap, final_softcap})
    if (!(v >= 0) || !std::isfinite(v)) fail(where, ": query scale and soft-caps must be positive numbers, got ", v);
  if (activation == Activation::SwigluOai && (!(swiglu_limit > 0) || !std::isfinite(swiglu_limit)))
    fail(where, ": swiglu_limit must be a positive number, got ", swiglu_limit);
  if (has_moe_layers()) {
    in_range("n_expert", n_expert, ModelLimits::n_expert);
    in_range("n_expert_used", n_expert_used, n_expert);
    in_range("n_ff_expert", n_ff_expert, ModelLimits::n_ff);
  } else if (n_expert < 0 || n_expert_used < 0 || n_ff_expert < 0) {
    fail(where, ": expert counts and sizes must not be negative");
  }
  if (rotary_dim < 0 || rotary_dim > head_dim || rotary_dim % 2 != 0)
    fail(where, ": rotary dimension is ", rotary_dim, "; it must be an even number from 0 (all of head_dim) to head_dim (",
         head_dim, ")");
  if (!rope_freq_factors.empty() && static_cast<int64_t>(rope_freq_factors.size()) != rotary_dims() / 2)
    fail(where, ": rope_freqs has ", rope_freq_factors.size(), " entries, expected rotary_dim/2 = ", rotary_dims() / 2);
  if (n_ff_shared < 0 || n_ff_shared > ModelLimits::n_ff)
    fail(where, ": shared expert size is ", n_ff_shared, "; it must be from 0 (none) to ", ModelLimits::n_ff);
  if (has_delta_layers()) {
    in_range("linear attention key heads", delta.n_k_heads, ModelLimits::n_heads);
    in_range("linear attention value heads", delta.n_v_heads, ModelLimits::n_heads);
    in_range("linear attention key head_dim", delta.head_k_dim, ModelLimits::head_dim);
    in_range("linear attention value head_dim", delta.head_v_dim, ModelLimits::head_dim);
    in_range("linear attention conv kernel", delta.conv_kernel, 64);
    if (delta.n_v_heads % delta.n_k_heads != 0)
      fail(where, ": linear attention value heads (", delta.n_v_heads, ") are not a multiple of its key heads (",
           delta.n_k_heads, ")");
  }
}

std::string ModelConfig::describe() const {
  std::ostringstream os;
  os << arch << " '" << name << "': " << n_layers << " layers, n_embd " << n_embd << ", heads " << n_heads << "/"
     << n_kv_heads << " (head_dim " << head_dim << "), ffn " << n_ff << ", vocab " << vocab_size << ", ctx "
     << context_length << ", rope theta " << rope_theta;
  if (qkv_bias) os << ", qkv bias";
  if (qk_norm) os << ", qk norm";
  if (tied_embeddings) os << ", tied embeddings";
  if (has_sliding_layers()) {
    int n = 0;
    for (const LayerConfig& L : layers) n += L.attention == AttentionKind::Sliding;
    os << ", " << n << " sliding-window layers (window " << sliding_window << ")";
  }
  if (has_moe_layers()) {
    int n = 0;
    for (const LayerConfig& L : layers) n += L.ffn == FfnKind::Moe;
    os << ", " << n << " MoE layers (" << n_expert << " experts, " << n_expert_used << " used, ffn " << n_ff_expert
       << (expert_weights_norm ? ", weights renormalised" : "") << ")";
  }
  if (has_delta_layers()) {
    int n = 0;
    for (const LayerConfig& L : layers) n += L.mixer == MixerKind::DeltaNet;
    os << ", " << n << " Gated DeltaNet layers (heads " << delta.n_k_heads << "/" << delta.n_v_heads << ", dims "
       << delta.head_k_dim << "/" << delta.head_v_dim << ", conv " << delta.conv_kernel << ")";
  }
  if (rotary_dim > 0 && rotary_dim < head_dim) os << ", rotary dims " << rotary_dim << " of " << head_dim;
  if (layer_shape_differs())
    for (int l = 0; l < n_layers; ++l)
      if (is_sliding(l)) {
        os << ", sliding layers " << n_heads << "/" << layer_kv_heads(l) << " heads (head_dim " << layer_head_dim(l) << ")";
        break;
      }
  if (k_eq_v) os << ", V = K on full layers";
  if (v_norm) os << ", V norm";
  if (layer_scale) os << ", layer scalars";
  if (attn_output_gate) os << ", gated attention output";
  if (n_ff_shared > 0) os << ", shared expert ffn " << n_ff_shared;
  if (attn_sinks) os << ", attention sinks";
  if (attn_softcap > 0) os << ", attention soft-cap " << attn_softcap;
  if (final_softcap > 0) os << ", logit soft-cap " << final_softcap;
  return os.str();
}

}  // namespace triattn
