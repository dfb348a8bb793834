#include "calib/stats_accumulator.h"

#include <cmath>

#include "core/error.h"

namespace triattn {

StatsAccumulator::StatsAccumulator(int n_layers, int n_heads, int n_kv_heads, int head_dim)
    : n_layers_(n_layers), n_heads_(n_heads), n_kv_heads_(n_kv_heads), head_dim_(head_dim), half_(head_dim / 2) {
  if (n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || head_dim % 2)
    fail("calibration: invalid model shape (", n_layers, " layers, ", n_heads, "/", n_kv_heads, " heads, head_dim ",
         head_dim, ")");
  const size_t nq = static_cast<size_t>(n_layers) * n_heads * half_;
  const size_t nk = static_cast<size_t>(n_layers) * n_kv_heads * half_;
  q_ = {std::vector<double>(nq), std::vector<double>(nq), std::vector<double>(nq)};
  k_ = {std::vector<double>(nk), std::vector<double>(nk), std::vector<double>(nk)};
  layer_tokens_.assign(n_layers, 0);
}

void StatsAccumulator::add(Sums& s, size_t base, const float* x, int half) {
  // Halves layout: band f is (x[f], x[f + half]).
  for (int f = 0; f < half; ++f) {
    const double re = x[f], im = x[f + half];
    s.re[base + f] += re;
    s.im[base + f] += im;
    s.abs[base + f] += std::sqrt(re * re + im * im);
  }
}

void StatsAccumulator::on_pre_rope(int layer, int64_t, int64_t n_tokens, const float* q, const float* k) {
  if (layer < 0 || layer >= n_layers_) fail("calibration: observer called for layer ", layer, " of ", n_layers_);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* qt = q + t * n_heads_ * head_dim_;
    const float* kt = k + t * n_kv_heads_ * head_dim_;
    for (int h = 0; h < n_heads_; ++h)
      add(q_, (static_cast<size_t>(layer) * n_heads_ + h) * half_, qt + h * head_dim_, half_);
    for (int h = 0; h < n_kv_heads_; ++h)
      add(k_, (static_cast<size_t>(layer) * n_kv_heads_ + h) * half_, kt + h * head_dim_, half_);
  }
  layer_tokens_[layer] += n_tokens;
}

int64_t StatsAccumulator::tokens() const {
  for (int l = 1; l < n_layers_; ++l)
    if (layer_tokens_[l] != layer_tokens_[0])
      fail("calibration: layer ", l, " saw ", layer_tokens_[l], " tokens but layer 0 saw ", layer_tokens_[0]);
  return layer_tokens_[0];
}

HeadStats StatsAccumulator::result() const {
  const int64_t n = tokens();
  if (n == 0) fail("calibration: no tokens were observed");
  HeadStats s;
  s.n_layers = n_layers_;
  s.n_heads = n_heads_;
  s.n_kv_heads = n_kv_heads_;
  s.head_dim = head_dim_;
  auto mean = [n](const std::vector<double>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i] / static_cast<double>(n));
    return out;
  };
  s.q_mean_real = mean(q_.re);
  s.q_mean_imag = mean(q_.im);
  s.q_abs_mean = mean(q_.abs);
  s.k_mean_real = mean(k_.re);
  s.k_mean_imag = mean(k_.im);
  s.k_abs_mean = mean(k_.abs);
  return s;
}

}  // namespace triattn
