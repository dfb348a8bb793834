// StatsAccumulator: per-band complex means and modulus means of pre-RoPE q and k.
#include <gtest/gtest.h>

#include <cmath>

#include "calib/stats_accumulator.h"
#include "calib_test_util.h"

using namespace triattn;

TEST(StatsAccumulator, MeansOverTokensAcrossCallsPerHeadAndBand) {
  // 1 layer, 2 query heads, 1 KV head, head_dim 4 (bands (x0,x2) and (x1,x3)).
  StatsAccumulator acc(1, 2, 1, 4);
  const float q1[2 * 8] = {3, 1, 4, 0, /*head1*/ 0, 0, 1, 2,
                           /*token 2*/ -3, 1, 4, 0, /*head1*/ 2, 0, 1, -2};
  const float k1[2 * 4] = {1, 0, 0, 1, /*token 2*/ 0, 2, 1, 0};
  acc.on_pre_rope(0, 0, 2, q1, k1);
  const float q2[8] = {0, 1, 0, 0, 0, 0, 0, 0};
  const float k2[4] = {1, 0, 0, 0};
  acc.on_pre_rope(0, 2, 1, q2, k2);
  EXPECT_EQ(acc.tokens(), 3);
  const HeadStats s = acc.result();
  ASSERT_EQ(s.q_mean_real.size(), 4u);
  // head 0, band 0: (3,4), (-3,4), (0,0) -> mean (0, 8/3), |.| mean (5+5+0)/3
  EXPECT_FLOAT_EQ(s.q_mean_real[0], 0.0f);
  EXPECT_FLOAT_EQ(s.q_mean_imag[0], 8.0f / 3);
  EXPECT_FLOAT_EQ(s.q_abs_mean[0], 10.0f / 3);
  // head 0, band 1: (1,0), (1,0), (1,0)
  EXPECT_FLOAT_EQ(s.q_mean_real[1], 1.0f);
  EXPECT_FLOAT_EQ(s.q_mean_imag[1], 0.0f);
  EXPECT_FLOAT_EQ(s.q_abs_mean[1], 1.0f);
  // head 1, band 0: (0,1), (2,1), (0,0); band 1: (0,2), (0,-2), (0,0)
  EXPECT_FLOAT_EQ(s.q_mean_real[2], 2.0f / 3);
  EXPECT_FLOAT_EQ(s.q_mean_imag[2], 2.0f / 3);
  EXPECT_FLOAT_EQ(s.q_abs_mean[2], static_cast<float>((1 + std::sqrt(5.0)) / 3));
  EXPECT_FLOAT_EQ(s.q_mean_imag[3], 0.0f);
  EXPECT_FLOAT_EQ(s.q_abs_mean[3], 4.0f / 3);
  // keys, band 0: (1,0), (0,1), (1,0); band 1: (0,1), (2,0), (0,0)
  EXPECT_FLOAT_EQ(s.k_mean_real[0], 2.0f / 3);
  EXPECT_FLOAT_EQ(s.k_mean_imag[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(s.k_abs_mean[0], 1.0f);
  EXPECT_FLOAT_EQ(s.k_mean_real[1], 2.0f / 3);
  EXPECT_FLOAT_EQ(s.k_abs_mean[1], 1.0f);
  EXPECT_EQ(s.n_layers, 1);
  EXPECT_EQ(s.n_heads, 2);
  EXPECT_EQ(s.n_kv_heads, 1);
  EXPECT_EQ(s.head_dim, 4);
}

TEST(StatsAccumulator, LayersAreKeptApart) {
  StatsAccumulator acc(2, 1, 1, 2);
  const float a[2] = {1, 0}, b[2] = {0, 3};
  acc.on_pre_rope(0, 0, 1, a, a);
  acc.on_pre_rope(1, 0, 1, b, b);
  const HeadStats s = acc.result();
  EXPECT_FLOAT_EQ(s.q_mean_real[0], 1.0f);
  EXPECT_FLOAT_EQ(s.q_mean_imag[1], 3.0f);
  EXPECT_FLOAT_EQ(s.k_abs_mean[1], 3.0f);
}

TEST(StatsAccumulator, RefusesEmptyAndPartialRuns) {
  StatsAccumulator acc(2, 1, 1, 2);
  EXPECT_NE(calib_test::error_of([&] { acc.result(); }).find("no tokens"), std::string::npos);
  const float a[2] = {1, 0};
  acc.on_pre_rope(0, 0, 1, a, a);
  EXPECT_NE(calib_test::error_of([&] { acc.tokens(); }).find("layer 1"), std::string::npos);
  EXPECT_THROW(acc.on_pre_rope(2, 0, 1, a, a), Error);
  EXPECT_THROW(StatsAccumulator(1, 1, 1, 3), Error);
}
