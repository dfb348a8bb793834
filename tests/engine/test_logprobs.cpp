// token_logprob against its definition: log p(id) = x_id − log Σ exp(x), computed here
// directly in long double; the alternatives are the most likely tokens in order.
#include "engine/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"

namespace triattn {
namespace {

TEST(Logprobs, EqualTheLogSoftmax) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 4.0f);
  std::vector<float> x(1000);
  for (float& v : x) v = d(rng);
  long double z = 0;
  for (float v : x) z += std::exp(static_cast<long double>(v));
  for (int32_t id : {0, 17, 999}) {
    const TokenLogprob lp = token_logprob(x, id, 5);
    EXPECT_NEAR(lp.logprob, static_cast<double>(x[static_cast<size_t>(id)] - std::log(z)), 1e-5);
    ASSERT_EQ(lp.top.size(), 5u);
    for (size_t i = 0; i + 1 < lp.top.size(); ++i) EXPECT_GE(lp.top[i].second, lp.top[i + 1].second);
    int32_t best = 0;
    for (int32_t i = 1; i < 1000; ++i)
      if (x[static_cast<size_t>(i)] > x[static_cast<size_t>(best)]) best = i;
    EXPECT_EQ(lp.top[0].first, best);
  }
}

TEST(Logprobs, TiesPutTheLowerIdFirstAndTopIsCapped) {
  const std::vector<float> x = {1.0f, 2.0f, 2.0f, 0.0f};
  const TokenLogprob lp = token_logprob(x, 3, 10);
  ASSERT_EQ(lp.top.size(), 4u);
  EXPECT_EQ(lp.top[0].first, 1);
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_EQ(lp.top[3].first, 3);
  EXPECT_TRUE(token_logprob(x, 0, 0).top.empty());
}

TEST(Logprobs, InfiniteLogitsNeverGiveNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {-inf, 0.0f, -inf};
  EXPECT_FLOAT_EQ(token_logprob(x, 1, 0).logprob, 0.0f);
  EXPECT_EQ(token_logprob(x, 0, 0).logprob, -inf);
  const std::vector<float> none = {-inf, -inf};
  EXPECT_FALSE(std::isnan(token_logprob(none, 0, 1).logprob));
  const std::vector<float> big = {inf, 0.0f, inf};
  EXPECT_NEAR(token_logprob(big, 0, 0).logprob, -std::log(2.0f), 1e-6);
  EXPECT_EQ(token_logprob(big, 1, 0).logprob, -inf);
  EXPECT_THROW(token_logprob(x, 3, 0), Error);
  EXPECT_THROW(token_logprob(x, -1, 0), Error);
}

}  // namespace
}  // namespace triattn
