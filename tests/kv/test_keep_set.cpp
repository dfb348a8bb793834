// The shared keep-set rules: window, sinks, protect-prompt, budget, ties, trigger.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "kv/keep_set.h"

using namespace triattn;

namespace {

std::vector<int32_t> iota_pos(int n, int start = 0) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), start);
  return p;
}

PolicyParams keep_params(int64_t budget, int64_t window, int64_t sink = 0, bool protect_prompt = false) {
  PolicyParams p;
  p.budget = budget;
  p.window = window;
  p.sink = sink;
  p.protect_prompt = protect_prompt;
  p.divide_length = 2;
  return p;
}

}  // namespace

TEST(KeepRules, WindowIsClampedBelowTheBudget) {
  EXPECT_EQ(keep_rules(keep_params(8, 128), {}).window, 7);
  EXPECT_EQ(keep_rules(keep_params(8, 3), {}).window, 3);
  EXPECT_EQ(keep_rules(keep_params(1, 5), {}).window, 0);
  EXPECT_EQ(keep_rules(keep_params(8, -2), {}).window, 0);
}

TEST(KeepRules, ProtectPromptUsesThePromptLengthOnlyWhenAsked) {
  SequenceInfo seq{6};
  EXPECT_EQ(keep_rules(keep_params(8, 2, 0, true), seq).protect_below, 6);
  EXPECT_EQ(keep_rules(keep_params(8, 2, 0, false), seq).protect_below, 0);
}

TEST(KeepRules, RejectsAnEmptyBudget) { EXPECT_THROW(keep_rules(keep_params(0, 2), {}), Error); }

TEST(SplitStream, WindowAndSinksAreProtected) {
  const auto pos = iota_pos(10);
  const auto s = split_stream(pos, keep_rules(keep_params(6, 3, 2), {}));
  EXPECT_EQ(s.protected_rows, (std::vector<int32_t>{0, 1, 7, 8, 9}));
  EXPECT_EQ(s.candidates, (std::vector<int32_t>{2, 3, 4, 5, 6}));
}

TEST(SplitStream, WindowCountsRowsAndSinksCountPositionsAfterEvictions) {
  // Rows hold positions with gaps (earlier evictions): the window is the last W rows, the
  // sinks/prompt are by absolute position.
  const std::vector<int32_t> pos = {0, 3, 4, 9, 20, 21};
  const auto s = split_stream(pos, keep_rules(keep_params(5, 2, 4), {}));
  EXPECT_EQ(s.protected_rows, (std::vector<int32_t>{0, 1, 4, 5}));
  EXPECT_EQ(s.candidates, (std::vector<int32_t>{2, 3}));
}

TEST(SplitStream, ProtectPromptKeepsEveryPromptToken) {
  const auto pos = iota_pos(10);
  const auto s = split_stream(pos, keep_rules(keep_params(5, 1, 0, true), SequenceInfo{4}));
  EXPECT_EQ(s.protected_rows, (std::vector<int32_t>{0, 1, 2, 3, 9}));
  EXPECT_EQ(s.candidates, (std::vector<int32_t>{4, 5, 6, 7, 8}));
}

TEST(SelectKeep, FillsTheBudgetWithTheBestCandidates) {
  const auto pos = iota_pos(8);
  const auto s = split_stream(pos, keep_rules(keep_params(5, 2), {}));  // protected 6, 7
  const std::vector<float> scores = {0.1f, 3.0f, -1.0f, 2.0f, 0.5f, 2.5f};
  EXPECT_EQ(select_keep(s, scores, pos, 5), (std::vector<int32_t>{1, 3, 5, 6, 7}));
}

TEST(SelectKeep, TiesKeepTheOlderToken) {
  const auto pos = iota_pos(7);
  const auto s = split_stream(pos, keep_rules(keep_params(3, 1), {}));  // protected 6
  const std::vector<float> scores = {1.0f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f};
  EXPECT_EQ(select_keep(s, scores, pos, 3), (std::vector<int32_t>{1, 3, 6}));
  const std::vector<float> flat(6, 0.0f);
  EXPECT_EQ(select_keep(s, flat, pos, 3), (std::vector<int32_t>{0, 1, 6}));
}

TEST(SelectKeep, NaNRanksBelowEveryNumber) {
  const auto pos = iota_pos(4);
  const auto s = split_stream(pos, keep_rules(keep_params(3, 1), {}));
  const std::vector<float> scores = {NAN, -5.0f, NAN};
  EXPECT_EQ(select_keep(s, scores, pos, 3), (std::vector<int32_t>{0, 1, 3}));
}

TEST(SelectKeep, ProtectedRowsBeyondTheBudgetAreAllKeptAndNoCandidate) {
  const auto pos = iota_pos(10);
  const auto s = split_stream(pos, keep_rules(keep_params(3, 2, 0, true), SequenceInfo{5}));
  ASSERT_EQ(s.protected_rows.size(), 7u);
  const std::vector<float> scores(s.candidates.size(), 9.0f);
  EXPECT_EQ(select_keep(s, scores, pos, 3), (std::vector<int32_t>{0, 1, 2, 3, 4, 8, 9}));
}

TEST(SelectKeep, RejectsAScoreCountMismatch) {
  const auto pos = iota_pos(5);
  const auto s = split_stream(pos, keep_rules(keep_params(3, 1), {}));
  EXPECT_THROW(select_keep(s, std::vector<float>(2), pos, 3), Error);
}

TEST(PruneDue, TriggersOnlyWhenTheAppendWouldPassBudgetPlusDivideLength) {
  KvCache cache({1, 1, 2, DType::F32});
  const float k[2] = {1, 0}, v[2] = {0, 0};
  PolicyParams p = keep_params(4, 1);  // B + β = 6
  for (int i = 0; i < 5; ++i) cache.append(0, i, k, v);
  EXPECT_FALSE(prune_due(cache, 1, p, {}));  // 5 + 1 = 6
  EXPECT_TRUE(prune_due(cache, 2, p, {}));   // 5 + 2 = 7
  cache.append(0, 5, k, v);
  EXPECT_TRUE(prune_due(cache, 1, p, {}));
  // A cache at or under the budget has nothing to cut even for a huge append.
  KvCache small({1, 1, 2, DType::F32});
  for (int i = 0; i < 4; ++i) small.append(0, i, k, v);
  EXPECT_FALSE(prune_due(small, 100, p, {}));
}

// A protected prompt longer than B raises the trigger to prompt + window + β instead of
// scoring before every append (pruning could never get under B, so each event evicted
// nothing and the next append triggered again).
TEST(PruneDue, ProtectionLargerThanTheBudgetRaisesTheTrigger) {
  PolicyParams p = keep_params(4, 2, 0, true);  // B = 4, W = 2, β = 2
  const SequenceInfo prompt10{10};
  EXPECT_EQ(effective_budget(p, prompt10), 12);  // 10 prompt rows + 2 window rows
  EXPECT_EQ(effective_budget(p, SequenceInfo{1}), 4);
  KvCache cache({1, 1, 2, DType::F32});
  const float k[2] = {1, 0}, v[2] = {0, 0};
  for (int i = 0; i < 13; ++i) cache.append(0, i, k, v);
  EXPECT_FALSE(prune_due(cache, 1, p, prompt10));  // 13 + 1 <= 12 + 2
  EXPECT_TRUE(prune_due(cache, 2, p, prompt10));
  // Without protection the same cache is far past B + β.
  EXPECT_TRUE(prune_due(cache, 1, keep_params(4, 2), prompt10));
}

TEST(ValidateBudgetParams, RefusesOutOfRangeKnobsByName) {
  struct Bad {
    PolicyParams p;
    const char* name;
  };
  std::vector<Bad> bad;
  auto with = [](auto set) {
    PolicyParams p = keep_params(64, 8);
    set(p);
    return p;
  };
  bad.push_back({with([](PolicyParams& p) { p.budget = 0; }), "--kv-budget"});
  bad.push_back({with([](PolicyParams& p) { p.budget = INT64_MAX; }), "--kv-budget"});
  bad.push_back({with([](PolicyParams& p) { p.budget = kMaxBudgetTokens + 1; }), "--kv-budget"});
  bad.push_back({with([](PolicyParams& p) { p.divide_length = 0; }), "--divide-length"});
  bad.push_back({with([](PolicyParams& p) { p.divide_length = INT64_MAX - 10; }), "--divide-length"});
  bad.push_back({with([](PolicyParams& p) { p.window = -1; }), "--window"});
  bad.push_back({with([](PolicyParams& p) { p.sink = -3; }), "--sink"});
  bad.push_back({with([](PolicyParams& p) { p.sink = 64; }), "--sink"});  // S >= B
  for (const Bad& b : bad) {
    try {
      validate_budget_params(b.p);
      ADD_FAILURE() << b.name << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.name), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(validate_budget_params(with([](PolicyParams& p) { p.sink = 63; })));
  EXPECT_NO_THROW(validate_budget_params(with([](PolicyParams& p) { p.budget = kMaxBudgetTokens; })));
}
