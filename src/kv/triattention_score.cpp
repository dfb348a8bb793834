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
                  std::span<const int32_t> rows, float* out, int pass_dims, const float* pass_w) {
  if (n_heads <= 0) return;
  check_key_type(type);
  const int half = heads[0].half;
  if (!pass_w) pass_dims = 0;
  const int dims = 2 * half + pass_dims;
  std::vector<float> k(static_cast<size_t>(dims)), e(static_cast<size_t>(half));
  const auto* base = static_cast<const uint8_t*>(keys);
  const size_t n = rows.size();
  for (size_t i = 0; i < n; ++i) {
    ops::dequantize_row(type, base + static_cast<size_t>(rows[i]) * row_bytes, k.data(), dims);
    for (int f = 0; f < half; ++f) e[f] = k[f] * k[f] + k[half + f] * k[half + f];  // |K_f|², shared by the group
    double pass_sq = 0;  // ‖K_p‖²
    for (int t = 2 * half; t < dims; ++t) pass_sq += static_cast<double>(k[t]) * k[t];
    for (int j = 0; j < n_heads; ++j) {
      const float* w = heads[j].w();
      double acc = 0;
      for (int f = 0; f < half; ++f) acc += static_cast<double>(w[f]) * e[f];
      if (pass_dims > 0) acc += static_cast<double>(pass_w[j]) * pass_sq;
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
  const int rot = g.rotary_dims();
  if (rot % 2 != 0 || rot > g.head_dim)
    fail("triattention: rotary_dim ", rot, " is odd or exceeds head_dim ", g.head_dim);
  if (s.rotary_dims() != rot)
    fail("triattention: statistics are for rotary_dim ", s.rotary_dims(), " but the model rotates ", rot,
         " of its ", g.head_dim, " coordinates");
  half_ = rot / 2;
  pass_ = g.head_dim - rot;
  if (static_cast<int>(g.rope_freqs.size()) != half_)
    fail("triattention: geometry has ", g.rope_freqs.size(), " RoPE frequencies, expected ", half_);
  const size_t need = static_cast<size_t>(g.n_layers) * g.n_heads * half_;
  if (s.q_mean_real.size() != need || s.q_mean_imag.size() != need || s.q_abs_mean.size() != need)
    fail("triattention: query statistics hold ", s.q_mean_real.size(), "/", s.q_mean_imag.size(), "/",
         s.q_abs_mean.size(), " values, expected ", need);
  const size_t heads = static_cast<size_t>(g.n_layers) * g.n_heads;
  if (pass_ > 0 && (s.q_pass_mean.size() != heads * pass_ || s.q_pass_abs_mean.size() != heads))
    fail("triattention: the model leaves ", pass_, " coordinates unrotated but the statistics hold ",
         s.q_pass_mean.size(), "/", s.q_pass_abs_mean.size(), " pass-query values, expected ", heads * pass_, "/",
         heads, " (recalibrate with `triattn calibrate`)");
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
  if (pass_ > 0) set_pass_coeffs();
}

void TriAttentionScorer::set_pass_coeffs() {
  // fs² scales the whole logit here (the forward pass folds mscale² into the attention scale),
  // so the pass term carries it too.
  const HeadStats& s = *stats_;
  const double trig = terms_ == ScoreTerms::Spread ? 0.0 : fs2_;
  pass_u_.assign(coeffs_.size() * pass_, 0.0f);
  pass_w_.assign(coeffs_.size(), 0.0f);
  for (size_t hh = 0; hh < coeffs_.size(); ++hh) {
    const float* m = &s.q_pass_mean[hh * pass_];
    double mm = 0;
    for (int t = 0; t < pass_; ++t) {
      mm += static_cast<double>(m[t]) * m[t];
      pass_u_[hh * pass_ + t] = static_cast<float>(trig * m[t]);
    }
    const double a = s.q_pass_abs_mean[hh], norm = std::sqrt(mm);
    if (terms_ == ScoreTerms::Both) pass_w_[hh] = static_cast<float>(fs2_ * (a - norm));
    if (terms_ == ScoreTerms::Spread) pass_w_[hh] = static_cast<float>(fs2_ * fs2_ * std::max(0.0, a * a - mm));
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
  if (sh.head_dim != 2 * half_ + pass_ || sh.n_layers != n_layers_ || sh.n_kv_heads * group_ != n_heads_)
    fail("triattention: KV cache shape (", sh.n_layers, " layers, ", sh.n_kv_heads, " KV heads, head_dim ",
         sh.head_dim, ") does not match the statistics");
  const HeadCoeffs* heads = &coeffs_[static_cast<size_t>(layer) * n_heads_ + kv_head * group_];
  if (pass_ == 0) {
    if (terms_ == ScoreTerms::Spread)
      score_spread(heads, group_, cache.keys(layer, kv_head), sh.type, cache.row_bytes(), rows, out);
    else
      score_keys(heads, group_, cache.keys(layer, kv_head), sh.type, cache.row_bytes(), rows, out);
    return;
  }
  // Partial RoPE: the rows once in F32 (a Q8_0 row splits into whole blocks only, and the
  // rotated part need not be one), then the same kernels over the rotated bands of each row
  // and one dot product per key and head for the pass coordinates.
  const int d = sh.head_dim;
  const size_t n = rows.size();
  std::vector<float> k(n * d);
  const auto* base = static_cast<const uint8_t*>(cache.keys(layer, kv_head));
  for (size_t i = 0; i < n; ++i)
    ops::dequantize_row(sh.type, base + static_cast<size_t>(rows[i]) * cache.row_bytes(), &k[i * d], d);
  std::vector<int32_t> own(n);
  for (size_t i = 0; i < n; ++i) own[i] = static_cast<int32_t>(i);
  const size_t first = static_cast<size_t>(layer) * n_heads_ + kv_head * group_;
  const size_t row_bytes = sizeof(float) * d;
  if (terms_ == ScoreTerms::Spread) {
    score_spread(heads, group_, k.data(), DType::F32, row_bytes, own, out, pass_, &pass_w_[first]);
    return;
  }
  score_keys(heads, group_, k.data(), DType::F32, row_bytes, own, out);  // reads the first 2·half_ of each row
  for (size_t i = 0; i < n; ++i) {
    const float* kp = &k[i * d + 2 * half_];
    const float norm = std::sqrt(ops::dot_f32(kp, kp, pass_));  // ‖K_p‖, shared by the group
    for (int j = 0; j < group_; ++j) {
      const size_t hh = first + j;
      out[j * n + i] += ops::dot_f32(&pass_u_[hh * pass_], kp, pass_) + pass_w_[hh] * norm;
    }
  }
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

double score_pass_form(const float* q_pass_mean, float q_pass_abs_mean, const float* k_pass, int pass_dims,
                       double fs) {
  double dot = 0, mm = 0, kk = 0;
  for (int t = 0; t < pass_dims; ++t) {
    dot += static_cast<double>(q_pass_mean[t]) * k_pass[t];
    mm += static_cast<double>(q_pass_mean[t]) * q_pass_mean[t];
    kk += static_cast<double>(k_pass[t]) * k_pass[t];
  }
  return fs * fs * (dot + (q_pass_abs_mean - std::sqrt(mm)) * std::sqrt(kk));
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
