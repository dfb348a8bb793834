// The sampler under a grammar's mask: disallowed tokens are never drawn, whatever the chain
// (greedy, temperature, top-k smaller or larger than the allowed set, top-p, min-p, the
// repetition penalty), and the draw among the allowed ones keeps their relative weights.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/sampler.h"

namespace triattn {
namespace {

std::vector<uint64_t> allow(size_t n, std::initializer_list<int> ids) {
  std::vector<uint64_t> m((n + 63) / 64, 0);
  for (int i : ids) m[static_cast<size_t>(i) >> 6] |= uint64_t{1} << (i & 63);
  return m;
}

TEST(SamplerMask, NeverDrawsADisallowedToken) {
  std::vector<float> logits(300);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 3;
  logits[7] = 50;  // the best token overall is not allowed
  const auto mask = allow(logits.size(), {3, 130, 299});
  for (float t : {0.0f, 0.7f, 1.5f})
    for (int top_k : {0, 1, 2, 40})
      for (float top_p : {1.0f, 0.5f})
        for (float min_p : {0.0f, 0.2f}) {
          SamplerParams p;
          p.temperature = t;
          p.top_k = top_k;
          p.top_p = top_p;
          p.min_p = min_p;
          p.repeat_penalty = 1.3f;
          for (uint64_t seed = 0; seed < 20; ++seed) {
            p.seed = seed;
            Sampler s(p);
            const std::vector<int32_t> history = {3, 7};
            const int32_t id = s.sample(logits, history, &mask);
            EXPECT_TRUE(id == 3 || id == 130 || id == 299) << "t " << t << " k " << top_k << " got " << id;
          }
        }
}

TEST(SamplerMask, GreedyTakesTheBestAllowed) {
  SamplerParams p;
  p.temperature = 0;
  Sampler s(p);
  const std::vector<float> logits = {5, 1, 3, 9, 2};
  EXPECT_EQ(s.sample(logits, {}, nullptr), 3);
  const auto m = allow(logits.size(), {1, 2, 4});
  EXPECT_EQ(s.sample(logits, {}, &m), 2);
}

TEST(SamplerMask, AllowedTokensKeepTheirRelativeWeights) {
  const std::vector<float> logits = {0, std::log(3.0f), 10, 0};
  const auto m = allow(logits.size(), {0, 1});
  SamplerParams p;
  p.temperature = 1;
  p.top_k = 0;
  p.top_p = 1;
  p.min_p = 0;
  Sampler s(p);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.sample(logits, {}, &m) == 1;
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.02);
}

}  // namespace
}  // namespace triattn
