#include "analyze/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "core/error.h"

namespace triattn {

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Mean of the finite values; NaN when there are none.
struct FiniteMean {
  double sum = 0;
  int n = 0;
  void add(double v) {
    if (std::isfinite(v)) sum += v, ++n;
  }
  double value() const { return n ? sum / n : kNan; }
};

// One head's band values inside a [n_layers][n_heads][bands] tensor.
std::span<const float> head_bands(const std::vector<float>& t, int layer, int head, int heads, int bands) {
  return std::span<const float>(t).subspan((static_cast<size_t>(layer) * heads + head) * bands, bands);
}

}  // namespace

Histogram histogram(const std::vector<double>& values, double lo, double hi, int bins) {
  Histogram h{lo, hi, std::vector<int64_t>(bins, 0)};
  for (double v : values) {
    if (!std::isfinite(v) || v < lo || v > hi) continue;
    const int i = std::min(bins - 1, static_cast<int>(std::floor((v - lo) / (hi - lo) * bins)));
    ++h.counts[i];
  }
  return h;
}

Analysis analyze_capture(const AnalysisInputs& in) {
  const HeadStats& s = *in.stats;
  const QkCapture& cap = *in.capture;
  // Bands are the rotated coordinates only: under partial RoPE the others have no frequency.
  const int L = s.n_layers, H = s.n_heads, KV = s.n_kv_heads, F = s.bands();
  if (L != cap.n_layers() || H != cap.n_heads() || KV != cap.n_kv_heads() || s.head_dim != cap.head_dim() ||
      s.rotary_dims() != cap.rotary_dim())
    fail("analyze: statistics of shape ", L, "x", H, "/", KV, "x", s.head_dim, " (rotary_dim ", s.rotary_dims(),
         ") do not match the model's ", cap.n_layers(), "x", cap.n_heads(), "/", cap.n_kv_heads(), "x",
         cap.head_dim(), " (rotary_dim ", cap.rotary_dim(), ")");
  const size_t nq = static_cast<size_t>(L) * H * F, nk = static_cast<size_t>(L) * KV * F;
  if (s.q_mean_real.size() != nq || s.q_mean_imag.size() != nq || s.q_abs_mean.size() != nq)
    fail("analyze: query statistics hold the wrong number of values");
  if (s.k_mean_real.size() != nk || s.k_mean_imag.size() != nk || s.k_abs_mean.size() != nk)
    fail("analyze: key statistics are missing or hold the wrong number of values");
  if (in.omega.size() != static_cast<size_t>(F)) fail("analyze: ", in.omega.size(), " RoPE frequencies for ", F, " bands");
  const int group = H / KV;

  Analysis a;
  a.omega = in.omega;
  std::vector<BandConcentration> qc, kc;
  std::vector<double> weighted(static_cast<size_t>(L) * H), rbars;
  FiniteMean top1, topk, norm_share, rbar_all;
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < KV; ++h) {
      KeyHeadAnalysis k{l, h, band_concentration(head_bands(s.k_mean_real, l, h, KV, F), head_bands(s.k_mean_imag, l, h, KV, F),
                                                 head_bands(s.k_abs_mean, l, h, KV, F))};
      kc.push_back(k.concentration);
      a.key_heads.push_back(std::move(k));
    }
    for (int h = 0; h < H; ++h) {
      const int g = h / group;
      QueryHeadAnalysis q;
      q.layer = l, q.head = h, q.kv_head = g;
      const auto qre = head_bands(s.q_mean_real, l, h, H, F), qim = head_bands(s.q_mean_imag, l, h, H, F),
                 qabs = head_bands(s.q_abs_mean, l, h, H, F);
      const auto kre = head_bands(s.k_mean_real, l, g, KV, F), kim = head_bands(s.k_mean_imag, l, g, KV, F),
                 kabs = head_bands(s.k_abs_mean, l, g, KV, F);
      q.concentration = band_concentration(qre, qim, qabs);
      q.dominant = dominant_bands(qre, qim, qabs, kabs);
      const HeadCurveInput curve_in{l, h, g, centre_cross(qre, qim, kre, kim)};
      // A layer without KV (DeltaNet) has no queries to correlate nor statistics: NaN figures,
      // left out of every mean and never a default head.
      if (cap.observed(l)) {
        q.reconstruction = reconstruction_correlation(cap, curve_in, a.omega);
      } else {
        q.reconstruction.rbar = kNan;
        q.concentration.weighted_R = kNan;
      }
      weighted[static_cast<size_t>(l) * H + h] = q.concentration.weighted_R;
      qc.push_back(q.concentration);
      top1.add(q.dominant.top1_share);
      topk.add(q.dominant.topk_share);
      norm_share.add(q.dominant.norm_term_share);
      rbar_all.add(q.reconstruction.rbar);
      rbars.push_back(q.reconstruction.rbar);
      a.query_heads.push_back(std::move(q));
    }
    FiniteMean lq, lk, lr, ln;
    for (int h = 0; h < H; ++h) {
      const QueryHeadAnalysis& q = a.query_heads[static_cast<size_t>(l) * H + h];
      lq.add(q.concentration.weighted_R);
      lr.add(q.reconstruction.rbar);
      ln.add(q.dominant.norm_term_share);
    }
    for (int h = 0; h < KV; ++h) lk.add(a.key_heads[static_cast<size_t>(l) * KV + h].concentration.weighted_R);
    a.layers.push_back({l, lq.value(), lk.value(), lr.value(), ln.value()});
  }
  a.query_summary = summarize_concentration(qc);
  a.key_summary = summarize_concentration(kc);
  a.rbar_mean = rbar_all.value();
  a.rbar_heads = rbar_all.n;
  a.rbar_histogram = histogram(rbars, -1.0, 1.0, kRbarBins);
  a.mean_top1_share = top1.value();
  a.mean_topk_share = topk.value();
  a.mean_norm_term_share = norm_share.value();

  const std::vector<HeadChoice> heads = in.heads.empty() ? default_heads(weighted, L, H) : in.heads;
  for (const HeadChoice& c : heads) {
    if (c.layer < 0 || c.layer >= L || c.head < 0 || c.head >= H)
      fail("analyze: head ", c.layer, ":", c.head, " is outside the model (", L, " layers, ", H, " heads)");
    if (!cap.observed(c.layer)) {
      if (in.heads.empty()) continue;  // a default pick (first/middle/last layer) that has no attention
      fail("analyze: layer ", c.layer, " has no attention (a DeltaNet layer): choose a head of another layer");
    }
    ChosenHeadAnalysis ch;
    ch.choice = c;
    ch.kv_head = c.head / group;
    const auto qre = head_bands(s.q_mean_real, c.layer, c.head, H, F), qim = head_bands(s.q_mean_imag, c.layer, c.head, H, F);
    const auto kre = head_bands(s.k_mean_real, c.layer, ch.kv_head, KV, F),
               kim = head_bands(s.k_mean_imag, c.layer, ch.kv_head, KV, F);
    ch.curve = distance_curve(cap, {c.layer, c.head, ch.kv_head, centre_cross(qre, qim, kre, kim)}, a.omega);
    const int band = a.query_heads[static_cast<size_t>(c.layer) * H + c.head].dominant.ranked.front();
    ch.scatter = band_scatter(cap, c.layer, c.head, ch.kv_head, band, a.omega[band], in.scatter_points);
    a.chosen.push_back(std::move(ch));
  }
  return a;
}

}  // namespace triattn
