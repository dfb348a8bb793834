#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace triattn {
namespace {

SamplerParams greedy() {
  SamplerParams p;
  p.temperature = 0;
  return p;
}

TEST(Sampler, GreedyTakesArgmaxLowestIdOnTies) {
  Sampler s(greedy());
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(logits, {}), 1);
}

TEST(Sampler, RepetitionPenaltyDemotesSeenTokens) {
  SamplerParams p = greedy();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> logits = {3.0f, 2.0f, -1.0f};
  std::vector<int32_t> history = {0};
  EXPECT_EQ(s.sample(logits, history), 1);  // 3/2 = 1.5 < 2
  std::vector<float> negative = {-1.0f, -1.5f};
  std::vector<int32_t> h1 = {0};
  EXPECT_EQ(s.sample(negative, h1), 1);  // -1*2 = -2 < -1.5
}

// Draws many samples and returns the frequency of each id.
std::map<int32_t, double> frequencies(const SamplerParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::map<int32_t, double> f;
  for (int i = 0; i < n; ++i) f[s.sample(logits, {})] += 1.0 / n;
  return f;
}

TEST(Sampler, TemperatureSamplesFromSoftmax) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  // softmax of log(1), log(2), log(7) = 0.1, 0.2, 0.7
  auto f = frequencies(p, {0.0f, std::log(2.0f), std::log(7.0f)}, 20000);
  EXPECT_NEAR(f[0], 0.1, 0.015);
  EXPECT_NEAR(f[1], 0.2, 0.015);
  EXPECT_NEAR(f[2], 0.7, 0.015);
}

TEST(Sampler, TopKTopPMinPRestrictTheSupport) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.top_k = 2;
  auto f = frequencies(p, logits, 5000);
  EXPECT_EQ(f.count(2) + f.count(3), 0u);
  EXPECT_NEAR(f[0], 0.5 / 0.8, 0.03);

  p.top_k = 0;
  p.top_p = 0.75f;  // 0.5 alone is below it, 0.5 + 0.3 reaches it
  f = frequencies(p, logits, 5000);
  EXPECT_EQ(f.count(2) + f.count(3), 0u);

  p.top_p = 1.0f;
  p.min_p = 0.2f;  // threshold 0.1: drops 0.05 only
  f = frequencies(p, logits, 5000);
  EXPECT_EQ(f.count(3), 0u);
  EXPECT_GT(f[2], 0.1);
}

TEST(Sampler, SameSeedSameSequence) {
  SamplerParams p;
  p.seed = 42;
  Sampler a(p), b(p);
  std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.25f, 0.15f};
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.sample(logits, {}), b.sample(logits, {}));
}

}  // namespace
}  // namespace triattn
