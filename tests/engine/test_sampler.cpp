#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"

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

// Temperature 1 and no filter but top-k (0: none): samples follow the softmax of the logits.
SamplerParams unfiltered(int top_k = 0) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = top_k;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

// Draws many samples and returns the frequency of each id.
std::map<int32_t, double> frequencies(const SamplerParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::map<int32_t, double> f;
  for (int i = 0; i < n; ++i) f[s.sample(logits, {})] += 1.0 / n;
  return f;
}

TEST(Sampler, TemperatureSamplesFromSoftmax) {
  const SamplerParams p = unfiltered();
  // softmax of log(1), log(2), log(7) = 0.1, 0.2, 0.7
  auto f = frequencies(p, {0.0f, std::log(2.0f), std::log(7.0f)}, 20000);
  EXPECT_NEAR(f[0], 0.1, 0.015);
  EXPECT_NEAR(f[1], 0.2, 0.015);
  EXPECT_NEAR(f[2], 0.7, 0.015);
}

TEST(Sampler, TopKTopPMinPRestrictTheSupport) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplerParams p = unfiltered(2);
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

TEST(Sampler, GreedyFindsTheFirstMaximumAnywhere) {
  // The scan keeps several running maxima; the answer must not depend on where a maximum
  // falls among them or in the tail after the last full group.
  Sampler s(greedy());
  for (size_t n : {1u, 3u, 4u, 5u, 1003u}) {
    for (size_t first = 0; first < n; first += (n > 20 ? 97 : 1)) {
      std::vector<float> logits(n, -3.0f);
      logits[first] = 5.0f;
      for (size_t later = first + 1; later < n; later += 3) logits[later] = 5.0f;  // ties after it
      ASSERT_EQ(s.sample(logits, {}), static_cast<int32_t>(first)) << "n " << n;
    }
  }
}

TEST(Sampler, NanLogitsAreNeverChosen) {
  const float nan = std::nanf("");
  Sampler g(greedy());
  EXPECT_EQ(g.sample(std::vector<float>{nan, 1.0f, nan, 0.5f}, {}), 1);
  EXPECT_THROW(g.sample(std::vector<float>{nan, nan}, {}), Error);
  SamplerParams p = unfiltered(2);
  const auto f = frequencies(p, {nan, 0.0f, nan, 0.0f, -1.0f}, 2000);
  EXPECT_EQ(f.count(0) + f.count(2), 0u);
  Sampler t(p);
  EXPECT_THROW(t.sample(std::vector<float>{nan, nan, nan}, {}), Error);
  p.top_k = 0;  // the whole vocabulary goes to top-p, which sorts it
  p.top_p = 0.9f;
  const auto all = frequencies(p, {nan, 0.0f, nan, 0.0f, -1.0f}, 2000);
  EXPECT_EQ(all.count(0) + all.count(2), 0u);
}

TEST(Sampler, TopKBreaksTiesByLowestId) {
  // Five equal logits, k = 2: ids 0 and 1 are the two best in the chain's order, so nothing
  // else may ever be drawn, and the two are equally likely.
  const SamplerParams p = unfiltered(2);
  const auto f = frequencies(p, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, 4000);
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f.at(0), 0.5, 0.04);
  EXPECT_NEAR(f.at(1), 0.5, 0.04);
}

TEST(Sampler, TopKKeepsWhatASortOfTheWholeVocabularyKeeps) {
  // 2000 logits on 41 levels: ~49 share the top level, so k = 3 keeps three of those (the
  // lowest ids) and k = 60 cuts into the second level. Every draw must come from the first
  // k of a stable sort, and with k = 3 all three must show up.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> level(0, 40);
  std::vector<float> logits(2000);
  for (float& x : logits) x = static_cast<float>(level(rng)) * 0.25f;
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int k : {1, 3, 60}) {
    const SamplerParams p = unfiltered(k);
    const std::set<int32_t> kept(ids.begin(), ids.begin() + k);
    const auto f = frequencies(p, logits, 3000);
    for (const auto& [id, freq] : f) {
      ASSERT_TRUE(kept.count(id)) << "k " << k << " drew id " << id;
    }
    if (k <= 3) {
      EXPECT_EQ(f.size(), static_cast<size_t>(k));
    }
  }
}

TEST(Sampler, TopPOverAWholeVocabularyKeepsTheSmallestPrefix) {
  // No top-k: 5000 equal logits, p = 0.5 keeps the 2500 lowest ids, more than the first
  // sorted heads (256, 2048) hold, so the head must grow until the mass is reached.
  SamplerParams p = unfiltered();
  p.top_p = 0.5f;
  const auto f = frequencies(p, std::vector<float>(5000, 0.25f), 5000);
  int32_t highest = 0;
  for (const auto& [id, freq] : f) highest = std::max(highest, id);
  EXPECT_LE(highest, 2501);
  EXPECT_GT(highest, 2048);
}

TEST(Sampler, PenaltyIgnoresHistoryOutsideTheVocabulary) {
  SamplerParams p = greedy();
  p.repeat_penalty = 4.0f;
  Sampler s(p);
  const std::vector<int32_t> history = {-1, 7, 1, 1000};
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 3.0f}, history), 0);  // 3/4 < 1
}

TEST(Sampler, SameSeedSameSequence) {
  SamplerParams p;
  p.seed = 42;
  Sampler a(p), b(p);
  std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.25f, 0.15f};
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.sample(logits, {}), b.sample(logits, {}));
}

// Every parameter out of its range (NaN included) is refused with its name, before any draw.
TEST(Sampler, ParametersOutOfRangeAreRefusedByName) {
  const float nan = std::nanf(""), inf = INFINITY;
  struct Bad {
    const char* name;
    void (*set)(SamplerParams&, float);
    std::vector<float> values;
  };
  const std::vector<Bad> cases = {
      {"temperature", [](SamplerParams& p, float v) { p.temperature = v; }, {-0.5f, nan, inf}},
      {"top_p", [](SamplerParams& p, float v) { p.top_p = v; }, {-0.1f, 1.5f, nan}},
      {"min_p", [](SamplerParams& p, float v) { p.min_p = v; }, {-0.1f, 1.01f, 2.0f, nan}},
      {"repeat_penalty", [](SamplerParams& p, float v) { p.repeat_penalty = v; }, {0.0f, -1.0f, nan, inf}},
      {"top_k", [](SamplerParams& p, float v) { p.top_k = static_cast<int>(v); }, {-1.0f}},
      {"repeat_last_n", [](SamplerParams& p, float v) { p.repeat_last_n = static_cast<int>(v); }, {-2.0f}},
  };
  for (const Bad& b : cases)
    for (float v : b.values) {
      SamplerParams p;
      b.set(p, v);
      try {
        Sampler s(p);
        ADD_FAILURE() << b.name << " = " << v << " was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(b.name), std::string::npos) << e.what();
      }
    }
  // The edges of each range are valid.
  SamplerParams edge;
  edge.top_p = 0.0f;
  edge.min_p = 1.0f;
  edge.repeat_last_n = -1;
  edge.top_k = 0;
  EXPECT_NO_THROW(Sampler{edge});
}

// min_p = 1 keeps only the best candidate, top_p = 0 likewise: the chain never empties
// (min_p above 1 used to remove every candidate and read an empty vector).
TEST(Sampler, ChainAlwaysKeepsTheBestToken) {
  const std::vector<float> logits = {0.3f, 2.5f, -1.0f, 2.4f, 0.0f};
  for (int top_k : {0, 3, 40}) {
    SamplerParams a = unfiltered(top_k);
    a.min_p = 1.0f;
    SamplerParams b = unfiltered(top_k);
    b.top_p = 0.0f;
    for (const SamplerParams& p : {a, b}) {
      const auto f = frequencies(p, logits, 200);
      ASSERT_EQ(f.size(), 1u);
      EXPECT_EQ(f.begin()->first, 1);
    }
  }
}

// Temperatures so small that logit / T overflows: sampling becomes greedy (it used to give
// NaN probabilities and always pick the last candidate).
TEST(Sampler, TinyTemperatureIsGreedy) {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (float t : {1e-45f, 1e-30f, 1e-8f}) {
    for (int top_k : {0, 40}) {
      SamplerParams p = unfiltered(top_k);
      p.temperature = t;
      p.seed = 11;
      Sampler s(p);
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> logits(300);
        for (float& x : logits) x = n(rng);
        const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
        ASSERT_EQ(s.sample(logits, {}), best) << "T = " << t << ", top_k = " << top_k;
      }
    }
  }
}

// Infinite logits: a +inf one wins every draw; candidates at -inf are never drawn while a
// finite one exists, and when all are -inf they share the mass instead of giving NaN.
TEST(Sampler, InfiniteLogitsNeverGiveNaN) {
  SamplerParams p = unfiltered();
  const auto pos = frequencies(p, {0.5f, INFINITY, 1.0f, -INFINITY}, 200);
  ASSERT_EQ(pos.size(), 1u);
  EXPECT_EQ(pos.begin()->first, 1);
  const auto neg = frequencies(p, {-INFINITY, 0.0f, -INFINITY}, 200);
  ASSERT_EQ(neg.size(), 1u);
  EXPECT_EQ(neg.begin()->first, 1);
  const auto all = frequencies(p, {-INFINITY, -INFINITY, -INFINITY}, 600);
  EXPECT_EQ(all.size(), 3u);
}

}  // namespace
}  // namespace triattn
