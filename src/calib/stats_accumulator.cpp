#include "calib/stats_accumulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace triattn {

StatsAccumulator::StatsAccumulator(int n_layers, int n_heads, int n_kv_heads, int head_dim, int rotary_dim,
                                   std::vector<int> observed_layers)
    : n_layers_(n_layers), n_heads_(n_heads), n_kv_heads_(n_kv_heads), head_dim_(head_dim),
      rotary_dim_(rotary_dim > 0 ? rotary_dim : head_dim), half_(rotary_dim_ / 2), pass_(head_dim - rotary_dim_),
      observed_(std::move(observed_layers)) {
  if (n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || head_dim % 2)
    fail("calibration: invalid model shape (", n_layers, " layers, ", n_heads, "/", n_kv_heads, " heads, head_dim ",
         head_dim, ")");
  if (rotary_dim_ % 2 || rotary_dim_ > head_dim)
    fail("calibration: rotary_dim ", rotary_dim_, " is odd or exceeds head_dim ", head_dim);
  if (observed_.empty()) {
    observed_.resize(n_layers);
    std::iota(observed_.begin(), observed_.end(), 0);
  }
  for (int l : observed_)
    if (l < 0 || l >= n_layers) fail("calibration: observed layer ", l, " of ", n_layers);
  const size_t nq = static_cast<size_t>(n_layers) * n_heads * half_;
  const size_t nk = static_cast<size_t>(n_layers) * n_kv_heads * half_;
  q_ = {std::vector<double>(nq), std::vector<double>(nq), std::vector<double>(nq)};
  k_ = {std::vector<double>(nk), std::vector<double>(nk), std::vector<double>(nk)};
  q_pass_.assign(static_cast<size_t>(n_layers) * n_heads * pass_, 0.0);
  q_pass_abs_.assign(pass_ > 0 ? static_cast<size_t>(n_layers) * n_heads : 0, 0.0);
  layer_tokens_.assign(n_layers, 0);
}

void StatsAccumulator::add(Sums& s, size_t base, const float* x, int half) {
  // Halves layout within the rotated part: band f is (x[f], x[f + half]).
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
    for (int h = 0; h < n_heads_; ++h) {
      const size_t hh = static_cast<size_t>(layer) * n_heads_ + h;
      add(q_, hh * half_, qt + h * head_dim_, half_);
      if (pass_ == 0) continue;
      const float* p = qt + h * head_dim_ + rotary_dim_;
      double sq = 0;
      for (int i = 0; i < pass_; ++i) {
        q_pass_[hh * pass_ + i] += p[i];
        sq += static_cast<double>(p[i]) * p[i];
      }
      q_pass_abs_[hh] += std::sqrt(sq);
    }
    for (int h = 0; h < n_kv_heads_; ++h)
      add(k_, (static_cast<size_t>(layer) * n_kv_heads_ + h) * half_, kt + h * head_dim_, half_);
  }
  layer_tokens_[layer] += n_tokens;
}

int64_t StatsAccumulator::tokens() const {
  const int first = observed_[0];
  for (int l = 0; l < n_layers_; ++l) {
    const bool observed = std::find(observed_.begin(), observed_.end(), l) != observed_.end();
    const int64_t want = observed ? layer_tokens_[first] : 0;
    if (layer_tokens_[l] != want)
      fail("calibration: layer ", l, " saw ", layer_tokens_[l], " tokens but layer ", first, " saw ",
           layer_tokens_[first], observed ? "" : " (a layer without KV: it should see none)");
  }
  return layer_tokens_[first];
}

HeadStats StatsAccumulator::result() const {
  const int64_t n = tokens();
  if (n == 0) fail("calibration: no tokens were observed");
  HeadStats s;
  s.n_layers = n_layers_;
  s.n_heads = n_heads_;
  s.n_kv_heads = n_kv_heads_;
  s.head_dim = head_dim_;
  s.rotary_dim = rotary_dim_ == head_dim_ ? 0 : rotary_dim_;
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
  s.q_pass_mean = mean(q_pass_);
  s.q_pass_abs_mean = mean(q_pass_abs_);
  return s;
}

}  // namespace triattn
