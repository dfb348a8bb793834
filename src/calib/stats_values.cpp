#include "calib/stats_values.h"

#include <cmath>
#include <sstream>

namespace triattn {

namespace {

enum class Rule { Finite, NonNegative, Positive };

// Rules by tensor name: the one table of what a valid value is.
Rule rule_for(const std::string& name) {
  if (name == "rope_freqs") return Rule::Positive;  // ω_f = θ^(-2f/d) / scaling > 0
  if (name.ends_with("_abs_mean") || name.ends_with("_mrl")) return Rule::NonNegative;  // means of |q_f|, ratios of them
  return Rule::Finite;  // complex means, fingerprint: any sign
}

bool obeys(Rule rule, float v) {
  if (!std::isfinite(v)) return false;
  switch (rule) {
    case Rule::Finite: return true;
    case Rule::NonNegative: return v >= 0;
    case Rule::Positive: return v > 0;
  }
  return false;
}

const char* rule_text(Rule rule) {
  switch (rule) {
    case Rule::Finite: return "values must be finite";
    case Rule::NonNegative: return "a mean of absolute values is finite and never negative";
    case Rule::Positive: return "RoPE frequencies are finite and positive";
  }
  return "";
}

// "layer 1, head 3, band 2" for [layers, heads, bands] ("coordinate" for the pass mean);
// "layer 1, head 3" for [layers, heads]; "band 2" for rope_freqs; "index 2" otherwise.
std::string where(const StatsTensorValues& t, size_t i) {
  std::ostringstream os;
  if (t.shape.size() == 3 && t.shape[1] > 0 && t.shape[2] > 0) {
    const auto bands = static_cast<size_t>(t.shape[2]), heads = static_cast<size_t>(t.shape[1]);
    os << "layer " << i / (heads * bands) << ", head " << i / bands % heads
       << (t.name == "q_pass_mean" ? ", coordinate " : ", band ") << i % bands;
  } else if (t.shape.size() == 2 && t.shape[1] > 0) {
    const auto heads = static_cast<size_t>(t.shape[1]);
    os << "layer " << i / heads << ", head " << i % heads;
  } else {
    os << (t.name == "rope_freqs" ? "band " : "index ") << i;
  }
  return os.str();
}

}  // namespace

std::vector<StatsTensorValues> stats_tensor_values(const HeadStats& s, std::span<const float> rope_freqs,
                                                   std::span<const float> fingerprint) {
  const int64_t half = s.bands();
  const std::vector<int64_t> qs = {s.n_layers, s.n_heads, half}, ks = {s.n_layers, s.n_kv_heads, half};
  std::vector<StatsTensorValues> t = {
      {"q_mean_real", qs, s.q_mean_real}, {"q_mean_imag", qs, s.q_mean_imag}, {"q_abs_mean", qs, s.q_abs_mean}};
  if (!s.k_mean_real.empty() || !s.k_mean_imag.empty() || !s.k_abs_mean.empty()) {
    t.push_back({"k_mean_real", ks, s.k_mean_real});
    t.push_back({"k_mean_imag", ks, s.k_mean_imag});
    t.push_back({"k_abs_mean", ks, s.k_abs_mean});
  }
  if (s.pass_dims() > 0) {
    t.push_back({"q_pass_mean", {s.n_layers, s.n_heads, s.pass_dims()}, s.q_pass_mean});
    t.push_back({"q_pass_abs_mean", {s.n_layers, s.n_heads}, s.q_pass_abs_mean});
  }
  if (!rope_freqs.empty()) t.push_back({"rope_freqs", {half}, rope_freqs});
  if (!fingerprint.empty()) t.push_back({"weights_fingerprint", {static_cast<int64_t>(fingerprint.size())}, fingerprint});
  return t;
}

std::vector<float> mean_resultant_length(std::span<const float> re, std::span<const float> im,
                                         std::span<const float> abs) {
  std::vector<float> r(re.size());
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = abs[i] > 0 ? static_cast<float>(std::hypot(re[i], im[i]) / abs[i]) : 0.0f;
  return r;
}

std::string first_invalid_stats_value(std::span<const StatsTensorValues> tensors) {
  for (const StatsTensorValues& t : tensors) {
    const Rule rule = rule_for(t.name);
    for (size_t i = 0; i < t.values.size(); ++i)
      if (!obeys(rule, t.values[i])) {
        std::ostringstream os;
        os << "tensor '" << t.name << "' holds " << t.values[i] << " at " << where(t, i) << " (" << rule_text(rule)
           << ")";
        return os.str();
      }
  }
  return "";
}

}  // namespace triattn
