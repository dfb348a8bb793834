// The per-head concentration figures (R_f, band-mean / weighted / top-band R, the
// model summary) and the dominant-band ranking, on values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analyze/concentration.h"
#include "analyze/dominant_bands.h"

namespace triattn {
namespace {

TEST(BandConcentration, MatchesHandComputedValues) {
  // Band 0: centre (3, 4) -> |E x| = 5 over E|x| = 10: R = 0.5. Band 1: centre (0, 1) over 1: R = 1.
  // Band 2: centre 0 over 4: R = 0.
  const std::vector<float> re = {3, 0, 0}, im = {4, 1, 0}, abs = {10, 1, 4};
  const BandConcentration c = band_concentration(re, im, abs);
  ASSERT_EQ(c.R.size(), 3u);
  EXPECT_DOUBLE_EQ(c.R[0], 0.5);
  EXPECT_DOUBLE_EQ(c.R[1], 1.0);
  EXPECT_DOUBLE_EQ(c.R[2], 0.0);
  EXPECT_DOUBLE_EQ(c.band_mean_R, 0.5);
  EXPECT_DOUBLE_EQ(c.weighted_R, 6.0 / 15.0);  // (5 + 1 + 0) / (10 + 1 + 4)
  EXPECT_EQ(c.top_band, 0);                    // largest E|x_f|
  EXPECT_DOUBLE_EQ(c.top_band_R, 0.5);
}

TEST(BandConcentration, TopBandTiesGoToTheLowerBand) {
  const std::vector<float> re = {1, 2}, im = {0, 0}, abs = {2, 2};
  EXPECT_EQ(band_concentration(re, im, abs).top_band, 0);
}

TEST(BandConcentration, ZeroNormBandIsUndefinedNotInfinite) {
  const std::vector<float> re = {0, 1}, im = {0, 0}, abs = {0, 1};
  const BandConcentration c = band_concentration(re, im, abs);
  EXPECT_TRUE(std::isnan(c.R[0]));
  EXPECT_DOUBLE_EQ(c.weighted_R, 1.0);
}

TEST(BandConcentration, RefusesMismatchedLengths) {
  const std::vector<float> a = {1, 2}, b = {1};
  EXPECT_THROW(band_concentration(a, b, a), std::exception);
}

TEST(ConcentrationSummary, MeansAndFractionAboveThreshold) {
  std::vector<BandConcentration> heads(4);
  const double w[4] = {0.99, 0.96, 0.5, 0.95};  // 0.95 itself is not above
  for (int i = 0; i < 4; ++i) {
    heads[i].band_mean_R = i;
    heads[i].weighted_R = w[i];
    heads[i].top_band_R = 1;
  }
  const ConcentrationSummary s = summarize_concentration(heads);
  EXPECT_EQ(s.heads, 4);
  EXPECT_DOUBLE_EQ(s.band_mean_R, 1.5);
  EXPECT_DOUBLE_EQ(s.weighted_R, (0.99 + 0.96 + 0.5 + 0.95) / 4);
  EXPECT_DOUBLE_EQ(s.top_band_R, 1);
  EXPECT_DOUBLE_EQ(s.fraction_above, 0.5);
}

TEST(DominantBands, RanksByQueryTimesKeyNorm) {
  // Contributions E|q|·E|k|: 2·1 = 2, 1·5 = 5, 3·1 = 3, 0.5·2 = 1.
  const std::vector<float> qre = {1, 1, 3, 0}, qim = {0, 0, 0, 0.5f}, qabs = {2, 1, 3, 0.5f}, kabs = {1, 5, 1, 2};
  const DominantBands d = dominant_bands(qre, qim, qabs, kabs);
  EXPECT_EQ(d.ranked, (std::vector<int>{1, 2, 0, 3}));
  EXPECT_EQ(d.contribution, (std::vector<double>{5, 3, 2, 1}));
  EXPECT_EQ(d.top_k, 3);
  EXPECT_DOUBLE_EQ(d.top1_share, 5.0 / 11);
  EXPECT_DOUBLE_EQ(d.topk_share, 10.0 / 11);
  // Norm term: (2−1)·1 + (1−1)·5 + (3−3)·1 + (0.5−0.5)·2 = 1.
  EXPECT_DOUBLE_EQ(d.norm_term_share, 1.0 / 11);
}

TEST(DominantBands, TopKIsClampedToTheBands) {
  const std::vector<float> one = {1, 1}, zero = {0, 0};
  const DominantBands d = dominant_bands(one, zero, one, one);
  EXPECT_EQ(d.top_k, 2);
  EXPECT_DOUBLE_EQ(d.topk_share, 1.0);
  EXPECT_EQ(d.ranked, (std::vector<int>{0, 1}));  // equal contributions: lower band first
}

}  // namespace
}  // namespace triattn
