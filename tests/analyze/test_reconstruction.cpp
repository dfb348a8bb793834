// The capture of pre-RoPE vectors, the reconstruction correlation r̄ and the
// distance curves, on synthetic vectors whose answers are known.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "analyze/band_scatter.h"
#include "analyze/qk_capture.h"
#include "analyze/reconstruction.h"

namespace triattn {
namespace {

// One layer, 2 query heads on 1 KV head, head_dim 4 (2 bands); every token gets q = qv, k = kv
// plus `noise` times a standard normal per coordinate. Windows of the given lengths.
QkCapture synthetic(const std::vector<int64_t>& windows, const std::vector<float>& qv, const std::vector<float>& kv,
                    float noise = 0, unsigned seed = 1) {
  QkCapture cap(1, 2, 1, 4);
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0, 1);
  for (int64_t len : windows)
    for (int64_t t = 0; t < len; ++t) {
      std::vector<float> q(8), k(4);
      for (int i = 0; i < 8; ++i) q[i] = qv[i % 4] + noise * n(gen);
      for (int i = 0; i < 4; ++i) k[i] = kv[i] + noise * n(gen);
      cap.on_pre_rope(0, t, 1, q.data(), k.data());
    }
  return cap;
}

const std::vector<double> kOmega = {1.0, 0.1};

TEST(QkCapture, RecordsWindowsPositionsAndBands) {
  QkCapture cap = synthetic({5, 3}, {1, 2, 3, 4}, {5, 6, 7, 8});
  EXPECT_EQ(cap.tokens(), 8);
  ASSERT_EQ(cap.windows().size(), 2u);
  EXPECT_EQ(cap.windows()[1].start, 5);
  EXPECT_EQ(cap.windows()[1].length, 3);
  EXPECT_EQ(cap.position(6), 1);
  // Halves layout: band 1 of (1, 2, 3, 4) is 2 + 4i.
  EXPECT_EQ(cap.q_band(0, 6, 1, 1), std::complex<double>(2, 4));
  EXPECT_EQ(cap.k_band(0, 0, 0, 0), std::complex<double>(5, 7));
}

TEST(QkCapture, RefusesAPositionThatDoesNotContinueTheWindow) {
  QkCapture cap(1, 1, 1, 2);
  const float x[2] = {1, 2};
  cap.on_pre_rope(0, 0, 1, x, x);
  EXPECT_THROW(cap.on_pre_rope(0, 3, 1, x, x), std::exception);
}

TEST(QkCapture, TokensThrowsWhenLayersDisagree) {
  QkCapture cap(2, 1, 1, 2);
  const float x[2] = {1, 2};
  cap.on_pre_rope(0, 0, 1, x, x);
  EXPECT_THROW(cap.tokens(), std::exception);
  cap.on_pre_rope(1, 0, 1, x, x);
  EXPECT_EQ(cap.tokens(), 1);
}

TEST(Pearson, PerfectAndConstantCases) {
  const std::vector<double> a = {1, 2, 3}, b = {2, 4, 6}, c = {3, 2, 1}, flat = {5, 5, 5};
  EXPECT_NEAR(pearson(a, b), 1.0, 1e-15);
  EXPECT_NEAR(pearson(a, c), -1.0, 1e-15);
  EXPECT_TRUE(std::isnan(pearson(a, flat)));
}

TEST(Reconstruction, IdenticalVectorsOnEveryTokenGiveRbarOne) {
  // With q and k the same on every token, the actual logit IS the predicted curve.
  const std::vector<float> q = {1, 0.5f, -0.3f, 2}, k = {0.7f, -1, 0.2f, 0.4f};
  const QkCapture cap = synthetic({40}, q, k);
  HeadCurveInput h{0, 1, 0, centre_cross(std::vector<float>{1, 0.5f}, std::vector<float>{-0.3f, 2},
                                         std::vector<float>{0.7f, -1}, std::vector<float>{0.2f, 0.4f})};
  for (int64_t d : {1, 2, 7, 30})
    EXPECT_NEAR(actual_logit(cap, h, kOmega, 35, d), predicted_logit(h.cross, kOmega, static_cast<double>(d)), 1e-12);
  const Reconstruction r = reconstruction_correlation(cap, h, kOmega);
  EXPECT_EQ(r.positions, 40 - 4);  // t = 4 .. 39 have Δ = 1, 2, 4 at least
  EXPECT_NEAR(r.rbar, 1.0, 1e-12);
  const DistanceCurve c = distance_curve(cap, h, kOmega);
  ASSERT_EQ(c.delta.size(), 39u);
  for (size_t i = 0; i < c.delta.size(); ++i) {
    EXPECT_EQ(c.pairs[i], 40 - c.delta[i]);
    EXPECT_NEAR(c.actual_mean[i], c.predicted[i], 1e-9);
  }
}

TEST(Reconstruction, PredictedCurveIsTheCosineSeries) {
  const std::vector<std::complex<double>> cross = {std::polar(2.0, 0.3), std::polar(0.5, -1.0)};
  const double d = 5;
  EXPECT_NEAR(predicted_logit(cross, kOmega, d), 2 * std::cos(1.0 * d + 0.3) + 0.5 * std::cos(0.1 * d - 1.0), 1e-12);
}

TEST(Reconstruction, NoiseLowersRbarAndShortWindowsDoNotCount) {
  const std::vector<float> q = {1, 0.5f, -0.3f, 2}, k = {0.7f, -1, 0.2f, 0.4f};
  const QkCapture cap = synthetic({64, 3}, q, k, 2.0f);
  HeadCurveInput h{0, 0, 0, centre_cross(std::vector<float>{1, 0.5f}, std::vector<float>{-0.3f, 2},
                                         std::vector<float>{0.7f, -1}, std::vector<float>{0.2f, 0.4f})};
  const Reconstruction r = reconstruction_correlation(cap, h, kOmega);
  EXPECT_EQ(r.positions, 60);  // the 3-token window has no position with 3 distances
  EXPECT_LT(r.rbar, 0.95);
  const DistanceCurve c = distance_curve(cap, h, kOmega);
  EXPECT_EQ(c.pairs[0], 63 + 2);  // Δ = 1 in both windows; pairs never cross a window boundary
  EXPECT_EQ(c.pairs.back(), 1);
}

TEST(Reconstruction, UndefinedWhenNoPositionHasThreeDistances) {
  const QkCapture cap = synthetic({4}, {1, 0, 0, 1}, {1, 0, 0, 1});
  HeadCurveInput h{0, 0, 0, {std::complex<double>(1, 0), std::complex<double>(1, 0)}};
  const Reconstruction r = reconstruction_correlation(cap, h, kOmega);
  EXPECT_EQ(r.positions, 0);
  EXPECT_TRUE(std::isnan(r.rbar));
}

TEST(BandScatter, RotatesByOmegaTimesPosition) {
  const QkCapture cap = synthetic({3, 2}, {1, 0, 0, 0}, {0, 0, 1, 0});
  const BandScatter s = band_scatter(cap, 0, 0, 0, 0, 0.5, 4);
  ASSERT_EQ(s.q_raw.size(), 4u);  // the first 4 tokens
  EXPECT_EQ(s.positions, (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(s.q_raw[2], std::complex<double>(1, 0));
  EXPECT_NEAR(std::abs(s.q_rope[2] - std::polar(1.0, 1.0)), 0, 1e-12);
  EXPECT_NEAR(std::abs(s.k_rope[1] - std::complex<double>(0, 1) * std::polar(1.0, 0.5)), 0, 1e-12);
  EXPECT_EQ(s.q_rope[3], std::complex<double>(1, 0));  // position 0 of the second window
}

}  // namespace
}  // namespace triattn
