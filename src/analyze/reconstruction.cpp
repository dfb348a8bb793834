#include "analyze/reconstruction.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace triattn {

std::vector<std::complex<double>> centre_cross(std::span<const float> q_re, std::span<const float> q_im,
                                               std::span<const float> k_re, std::span<const float> k_im) {
  const size_t n = q_re.size();
  if (q_im.size() != n || k_re.size() != n || k_im.size() != n) fail("analyze: band statistics of different lengths");
  std::vector<std::complex<double>> c(n);
  for (size_t f = 0; f < n; ++f)
    c[f] = std::complex<double>(q_re[f], q_im[f]) * std::conj(std::complex<double>(k_re[f], k_im[f]));
  return c;
}

double predicted_logit(std::span<const std::complex<double>> cross, std::span<const double> omega, double delta) {
  double s = 0;
  for (size_t f = 0; f < cross.size(); ++f) s += std::real(cross[f] * std::polar(1.0, omega[f] * delta));
  return s;
}

double actual_logit(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega, int64_t query_token,
                    int64_t delta) {
  double s = 0;
  for (int f = 0; f < cap.bands(); ++f)
    s += std::real(cap.q_band(h.layer, query_token, h.head, f) *
                   std::conj(cap.k_band(h.layer, query_token - delta, h.kv_head, f)) *
                   std::polar(1.0, omega[f] * static_cast<double>(delta)));
  return s;
}

namespace {

bool is_constant(std::span<const double> v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double scale = std::max(std::abs(*lo), std::abs(*hi));
  return *hi - *lo <= kConstantTolerance * scale;
}

}  // namespace

double pearson(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size() || a.size() < 2) fail("analyze: correlation of vectors of length ", a.size(), " and ", b.size());
  if (is_constant(a) || is_constant(b)) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

Reconstruction reconstruction_correlation(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega) {
  // p(Δ) for Δ = 2^j, computed once: it does not depend on the position.
  std::vector<double> pred;
  std::vector<int64_t> deltas;
  int64_t longest = 0;
  for (const CaptureWindow& w : cap.windows()) longest = std::max(longest, w.length);
  for (int64_t d = 1; d < longest; d *= 2) {
    deltas.push_back(d);
    pred.push_back(predicted_logit(h.cross, omega, static_cast<double>(d)));
  }
  double sum = 0;
  int64_t counted = 0;
  std::vector<double> actual;
  for (const CaptureWindow& w : cap.windows()) {
    for (int64_t t = 1; t < w.length; ++t) {
      actual.clear();
      for (size_t j = 0; j < deltas.size() && deltas[j] <= t; ++j)
        actual.push_back(actual_logit(cap, h, omega, w.start + t, deltas[j]));
      if (static_cast<int>(actual.size()) < kMinCorrelationPoints) continue;
      const double r = pearson(actual, std::span<const double>(pred).first(actual.size()));
      if (std::isnan(r)) continue;
      sum += r;
      ++counted;
    }
  }
  return {counted ? sum / static_cast<double>(counted) : std::numeric_limits<double>::quiet_NaN(), counted};
}

DistanceCurve distance_curve(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega) {
  int64_t longest = 0;
  for (const CaptureWindow& w : cap.windows()) longest = std::max(longest, w.length);
  const int bands = cap.bands();
  DistanceCurve c;
  if (longest < 2) return c;
  const int64_t n_delta = longest - 1;
  std::vector<double> sum(n_delta, 0.0);
  std::vector<int64_t> pairs(n_delta, 0);
  // Post-RoPE vectors make each pair one real dot product: q̃_f(t)·conj(k̃_f(s)) =
  // q_f(t) conj(k_f(s)) e^{iω_f (t − s)}, the same a(t, t − s) as actual_logit.
  std::vector<std::complex<double>> qr(static_cast<size_t>(longest) * bands), kr(qr.size());
  for (const CaptureWindow& w : cap.windows()) {
    for (int64_t t = 0; t < w.length; ++t)
      for (int f = 0; f < bands; ++f) {
        const std::complex<double> rot = std::polar(1.0, omega[f] * static_cast<double>(t));
        qr[t * bands + f] = cap.q_band(h.layer, w.start + t, h.head, f) * rot;
        kr[t * bands + f] = cap.k_band(h.layer, w.start + t, h.kv_head, f) * rot;
      }
    for (int64_t t = 1; t < w.length; ++t)
      for (int64_t s = 0; s < t; ++s) {
        double dot = 0;
        for (int f = 0; f < bands; ++f) dot += std::real(qr[t * bands + f] * std::conj(kr[s * bands + f]));
        sum[t - s - 1] += dot;
        ++pairs[t - s - 1];
      }
  }
  for (int64_t d = 1; d <= n_delta; ++d) {
    c.delta.push_back(d);
    c.actual_mean.push_back(sum[d - 1] / static_cast<double>(pairs[d - 1]));
    c.predicted.push_back(predicted_logit(h.cross, omega, static_cast<double>(d)));
    c.pairs.push_back(pairs[d - 1]);
  }
  return c;
}

}  // namespace triattn
