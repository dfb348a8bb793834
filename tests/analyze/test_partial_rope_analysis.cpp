// Analysis of partial-RoPE and hybrid models: bands are the rotated coordinates only, and a
// layer without KV (DeltaNet) is never reported, gets NaN figures and is never a chosen head.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "analyze/analysis.h"
#include "analyze/qk_capture.h"

namespace triattn {
namespace {

// Statistics of the capture's own vectors, over its rotated bands (as calibration computes them).
HeadStats partial_capture_stats(const QkCapture& cap) {
  HeadStats s;
  s.n_layers = cap.n_layers(), s.n_heads = cap.n_heads(), s.n_kv_heads = cap.n_kv_heads();
  s.head_dim = cap.head_dim(), s.rotary_dim = cap.rotary_dim();
  const int F = cap.bands();
  const int64_t T = cap.tokens();
  auto fill = [&](int heads, bool query, std::vector<float>& re, std::vector<float>& im, std::vector<float>& ab) {
    for (int l = 0; l < s.n_layers; ++l)
      for (int h = 0; h < heads; ++h)
        for (int f = 0; f < F; ++f) {
          std::complex<double> m = 0;
          double a = 0;
          for (int64_t t = 0; cap.observed(l) && t < T; ++t) {
            const auto z = query ? cap.q_band(l, t, h, f) : cap.k_band(l, t, h, f);
            m += z, a += std::abs(z);
          }
          re.push_back(static_cast<float>(m.real() / T));
          im.push_back(static_cast<float>(m.imag() / T));
          ab.push_back(static_cast<float>(a / T));
        }
  };
  fill(s.n_heads, true, s.q_mean_real, s.q_mean_imag, s.q_abs_mean);
  fill(s.n_kv_heads, false, s.k_mean_real, s.k_mean_imag, s.k_abs_mean);
  return s;
}

}  // namespace

TEST(PartialRopeAnalysis, BandsPairInsideTheRotatedPart) {
  // head_dim 8, 4 rotate: band f = (x[f], x[f + 2]); x4..x7 belong to no band.
  QkCapture cap(1, 1, 1, 8, 4);
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  cap.on_pre_rope(0, 0, 1, x, x);
  EXPECT_EQ(cap.bands(), 2);
  EXPECT_EQ(cap.q_band(0, 0, 0, 0), std::complex<double>(1, 3));
  EXPECT_EQ(cap.k_band(0, 0, 0, 1), std::complex<double>(2, 4));
  EXPECT_THROW(QkCapture(1, 1, 1, 8, 5), std::exception);   // odd
  EXPECT_THROW(QkCapture(1, 1, 1, 8, 10), std::exception);  // beyond head_dim
}

TEST(PartialRopeAnalysis, LayersWithoutKvAreSkipped) {
  // Layers 0 and 2 are DeltaNet: the forward pass reports 1 and 3.
  const int L = 4, d = 16, r = 8, T = 40;
  QkCapture cap(L, 2, 1, d, r, {1, 3});
  std::mt19937 gen(3);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> q(2 * d), k(d);
  for (int t = 0; t < T; ++t)
    for (int l : {1, 3}) {
      for (float& v : q) v = 1 + n(gen);
      for (float& v : k) v = 1 + n(gen);
      cap.on_pre_rope(l, t, 1, q.data(), k.data());
    }
  EXPECT_EQ(cap.tokens(), T);
  EXPECT_THROW(cap.on_pre_rope(0, 0, 1, q.data(), k.data()), std::exception);
  const HeadStats s = partial_capture_stats(cap);
  AnalysisInputs in;
  in.stats = &s;
  in.capture = &cap;
  for (int f = 0; f < r / 2; ++f) in.omega.push_back(std::pow(10000.0, -2.0 * f / r));
  const Analysis a = analyze_capture(in);
  ASSERT_EQ(a.query_heads.size(), static_cast<size_t>(L * 2));
  for (const QueryHeadAnalysis& h : a.query_heads) {
    EXPECT_EQ(h.concentration.R.size(), static_cast<size_t>(r / 2));  // the rotated bands only
    EXPECT_EQ(std::isnan(h.reconstruction.rbar), h.layer % 2 == 0) << "layer " << h.layer;
    EXPECT_EQ(std::isnan(h.concentration.weighted_R), h.layer % 2 == 0) << "layer " << h.layer;
  }
  EXPECT_TRUE(std::isfinite(a.query_summary.weighted_R));
  for (const ChosenHeadAnalysis& c : a.chosen) EXPECT_EQ(c.choice.layer % 2, 1) << c.choice.why;
  EXPECT_FALSE(a.chosen.empty());
  // Asking for a head of a DeltaNet layer is an error that says why.
  in.heads = {HeadChoice{0, 0, "asked"}};
  EXPECT_THROW(analyze_capture(in), std::exception);
}

}  // namespace triattn
