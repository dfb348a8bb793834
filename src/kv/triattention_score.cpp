#include "kv/triattention_score.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "ops/ops.h"

namespace triattn {

void offset_phase_mean(double omega, int64_t p, int max_offset_log2, double* re, double* im) {
  double sr = 0, si = 0;
  for (int e = 0; e <= max_offset_log2; ++e) {
    const double a = omega * static_cast<double>(p + (int64_t{1} << e));
    sr += std::cos(a);
    si += std::sin(a);
  }
  *re = sr / (max_offset_log2 + 1);
  *im = si / (max_offset_log2 + 1);
}

namespace {

void check_key_type(DType type) {
  if (!is_kv_type(type))
    fail("triattention scoring: keys of type ", dtype_name(type), " are not supported (F32, F16 or Q8_0)");
}

}  // namespace

void score_spread(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                  std::span<const int32_t> rows, float* out) {
  if (n_heads <= 0) return;
  check_key_type(type);
  const int half = heads[0].half;
  std::vector<float> k(2 * static_cast<size_t>(half)), e(static_cast<size_t>(half));
  const auto* base = static_cast<const uint8_t*>(keys);
  const size_t n = rows.size();
  for (size_t i = 0; i < n; ++i) {
    ops::dequantize_row(type, base + static_cast<size_t>(rows[i]) * row_bytes, k.data(), 2 * half);
    for (int f = 0; f < half; ++f) e[f] = k[f] * k[f] + k[half + f] * k[half + f];  // |K_f|², shared by the group
    for (int j = 0; j < n_heads; ++j) {
      const float* w = heads[j].w();
      double acc = 0;
      for (int f = 0; f < half; ++f) acc += static_cast<double>(w[f]) * e[f];
      out[j * n + i] = static_cast<float>(std::sqrt(acc));
    }
  }
}

TriAttentionScorer::TriAttentionScorer(std::shared_ptr<const HeadStats> stats,
                                       const AttentionGeometry& g, int max_offset_log2, ScoreTerms terms)
    : stats_(std::move(stats)), max_offset_log2_(max_offset_log2), terms_(terms) {
  if (!stats_) fail("triattention: no calibration statistics");
  const HeadStats& s = *stats_;
  if (s.n_layers != g.n_layers || s.n_heads != g.n_heads || s.head_dim != g.head_dim)
    fail("triattention: statistics are for ", s.n_layers, " layers x ", s.n_heads, " heads x head_dim ",
         s.head_dim, " but the model has ", g.n_layers, " layers x ", g.n_heads, " heads x head_dim ",
         g.head_dim);
  if (g.n_kv_heads <= 0 || g.n_heads % g.n_kv_heads != 0)
    fail("triattention: ", g.n_heads, " query heads do not split into ", g.n_kv_heads, " KV heads");
  if (g.head_dim % 2 != 0) fail("triattention: head_dim ", g.head_dim, " is odd");
  half_ = g.head_dim / 2;
  if (static_cast<int>(g.rope_freqs.size()) != half_)
    fail("triattention: geometry has ", g.rope_freqs.size(), " RoPE frequencies, expected ", half_);
  const size_t need = static_cast<size_t>(g.n_layers) * g.n_heads * half_;
  if (s.q_mean_real.size() != need || s.q_mean_imag.size() != need || s.q_abs_mean.size() != need)
    fail("triattention: query statistics hold ", s.q_mean_real.size(), "/", s.q_mean_imag.size(), "/",
         s.q_abs_mean.size(), " values, expected ", need);
  if (max_offset_log2 < 0 || max_offset_log2 > 30)
    fail("triattention: max offset 2^", max_offset_log2, " out of range [0, 30]");
  n_layers_ = g.n_layers;
  n_heads_ = g.n_heads;
  group_ = g.n_heads / g.n_kv_heads;
  omega_.assign(g.rope_freqs.begin(), g.rope_freqs.end());
  fs2_ = static_cast<double>(g.attn_factor) * g.attn_factor;
  coeffs_.resize(static_cast<size_t>(n_layers_) * n_heads_);
  for (auto& c : coeffs_) {
    c.half = half_;
    c.data.assign(3 * static_cast<size_t>(half_), 0.0f);
  }
}

void TriAttentionScorer::prepare(int64_t p) {
  if (p == p_) return;
  std::vector<double> mre(half_), mim(half_);
  for (int f = 0; f < half_; ++f) offset_phase_mean(omega_[f], p, max_offset_log2_, &mre[f], &mim[f]);
  const HeadStats& s = *stats_;
  // A term left out keeps zero coefficients: the same kernel then computes the other alone.
  const double trig = terms_ == ScoreTerms::Spread ? 0.0 : fs2_;
  for (size_t hh = 0; hh < coeffs_.size(); ++hh) {
    HeadCoeffs& c = coeffs_[hh];
    const size_t o = hh * half_;
    for (int f = 0; f < half_; ++f) {
      const double qr = s.q_mean_real[o + f], qi = s.q_mean_imag[o + f], a = s.q_abs_mean[o + f];
      const double m = std::hypot(qr, qi);
      c.data[f] = static_cast<float>(trig * (qr * mre[f] - qi * mim[f]));
      c.data[half_ + f] = static_cast<float>(trig * (qr * mim[f] + qi * mre[f]));
      double w = 0;
      if (terms_ == ScoreTerms::Both) w = fs2_ * (a - m);
      if (terms_ == ScoreTerms::Spread) w = fs2_ * fs2_ * std::max(0.0, a * a - m * m);
      c.data[2 * half_ + f] = static_cast<float>(w);
    }
  }
  p_ = p;
}

void TriAttentionScorer::score_stream(const KvCache& cache, int layer, int kv_head,
                                      std::span<const int32_t> rows, float* out) const {
  if (p_ < 0) fail("triattention: scorer used before prepare()");
  const auto& sh = cache.shape();
  if (sh.head_dim != 2 * half_ || sh.n_layers != n_layers_ || sh.n_kv_heads * group_ != n_heads_)
    fail("triattention: KV cache shape (", sh.n_layers, " layers, ", sh.n_kv_heads, " KV heads, head_dim ",
         sh.head_dim, ") does not match the statistics");
  const HeadCoeffs* heads = &coeffs_[static_cast<size_t>(layer) * n_heads_ + kv_head * group_];
  if (terms_ == ScoreTerms::Spread)
    score_spread(heads, group_, cache.keys(layer, kv_head), sh.type, cache.row_bytes(), rows, out);
  else
    score_keys(heads, group_, cache.keys(layer, kv_head), sh.type, cache.row_bytes(), rows, out);
}

double score_position_form(const float* q_mean_re, const float* q_mean_im, const float* q_abs_mean,
                           const float* k_pre, const float* omega, int half, double fs, int64_t p,
                           int64_t p_k, int max_offset_log2) {
  const double fs2 = fs * fs;
  double trig = 0, norm = 0;
  for (int f = 0; f < half; ++f) {
    const double qr = q_mean_re[f], qi = q_mean_im[f];
    const double kr = k_pre[f], ki = k_pre[f + half];
    const double qa = std::hypot(qr, qi), ka = std::hypot(kr, ki);
    const double phi = std::atan2(qi, qr) - std::atan2(ki, kr);
    double acc = 0;
    for (int e = 0; e <= max_offset_log2; ++e) {
      const double delta = static_cast<double>(p - p_k + (int64_t{1} << e));
      acc += std::cos(static_cast<double>(omega[f]) * delta + phi);
    }
    trig += fs2 * qa * ka * acc / (max_offset_log2 + 1);
    norm += fs2 * (q_abs_mean[f] - qa) * ka;
  }
  return trig + norm;
}

namespace {

// Mean and population std of one head's n scores, the std clamped at 1e-6 so that a head whose
// scores are all equal gives z = 0, not NaN.
void row_mean_sd(const float* s, int64_t n, double* mean, double* sd) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += s[i];
  *mean = sum / static_cast<double>(n);
  double var = 0;
  for (int64_t i = 0; i < n; ++i) var += (s[i] - *mean) * (s[i] - *mean);
  *sd = std::max(std::sqrt(var / static_cast<double>(n)), 1e-6);
}

}  // namespace

void zscore_group_max(const float* scores, int n_heads, int64_t n, float* out) {
  std::fill(out, out + n, -std::numeric_limits<float>::infinity());
  if (n == 0) return;
  for (int j = 0; j < n_heads; ++j) {
    const float* s = scores + static_cast<size_t>(j) * n;
    double mean, sd;
    row_mean_sd(s, n, &mean, &sd);
    for (int64_t i = 0; i < n; ++i) out[i] = std::max(out[i], static_cast<float>((s[i] - mean) / sd));
  }
}

void zscore_rows(float* scores, int n_heads, int64_t n) {
  if (n == 0) return;
  for (int j = 0; j < n_heads; ++j) {
    float* s = scores + static_cast<size_t>(j) * n;
    double mean, sd;
    row_mean_sd(s, n, &mean, &sd);
    for (int64_t i = 0; i < n; ++i) s[i] = static_cast<float>((s[i] - mean) / sd);
  }
}

}  // namespace triattn
