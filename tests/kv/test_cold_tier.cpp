// The cold tier (kv/cold_store.h, KvCache::apply/recall) and query-aware recall (kv/recall.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "kv/cold_store.h"
#include "kv/kv_cache.h"
#include "kv/recall.h"
#include "ops/ops.h"

namespace triattn {
namespace {

// Key element i of token `pos` in stream (layer, head); values are the keys + 0.5.
float cold_code(int layer, int head, int pos, int i) {
  return static_cast<float>(layer * 100 + head * 10) + 0.25f * static_cast<float>(pos) + 0.01f * static_cast<float>(i);
}

void cold_append(KvCache& c, int from, int to) {
  const KvCacheShape& s = c.shape();
  std::vector<float> k(static_cast<size_t>(s.n_kv_heads * s.head_dim)), v(k.size());
  for (int p = from; p < to; ++p)
    for (int l = 0; l < s.n_layers; ++l) {
      for (int h = 0; h < s.n_kv_heads; ++h)
        for (int i = 0; i < s.head_dim; ++i) {
          k[h * s.head_dim + i] = cold_code(l, h, p, i);
          v[h * s.head_dim + i] = cold_code(l, h, p, i) + 0.5f;
        }
      c.append(l, p, k.data(), v.data());
    }
}

std::vector<int32_t> cold_positions(const ColdStore& cold, int s) {
  return {cold.positions(s), cold.positions(s) + cold.size(s)};
}

std::vector<int32_t> hot_positions(const KvCache& c, int l, int h) {
  return {c.positions(l, h), c.positions(l, h) + c.size(l, h)};
}

float cold_hot_key(const KvCache& c, int l, int h, int row, int i) {
  std::vector<float> f(static_cast<size_t>(c.shape().head_dim));
  ops::dequantize_row(c.shape().type, static_cast<const uint8_t*>(c.keys(l, h)) + row * c.row_bytes(), f.data(),
                      c.shape().head_dim);
  return f[static_cast<size_t>(i)];
}

TEST(ColdTier, EvictedRowsGoColdAndComeBackInPositionOrder) {
  KvCache c(KvCacheShape{2, 2, 32, DType::F16});
  c.enable_cold(size_t{1} << 20);
  cold_append(c, 0, 10);
  c.apply(KeepPlan{std::vector<std::vector<int32_t>>(4, {0, 5, 9})});
  for (int s = 0; s < 4; ++s) EXPECT_EQ(cold_positions(c.cold(), s), (std::vector<int32_t>{1, 2, 3, 4, 6, 7, 8}));
  EXPECT_EQ(c.cold().type(0), DType::Q8_0);
  EXPECT_GT(c.peak_cold_bytes(), 0u);

  // Stream (1, 0) takes back position 3 (cold index 2) for its hot row of position 5.
  RecallPlan plan{std::vector<std::vector<int32_t>>(4), std::vector<std::vector<int32_t>>(4)};
  const int s = c.stream_index(1, 0);
  plan.take[s] = {2};
  plan.give[s] = {1};
  c.recall(plan);
  EXPECT_EQ(hot_positions(c, 1, 0), (std::vector<int32_t>{0, 3, 9}));
  EXPECT_EQ(hot_positions(c, 0, 0), (std::vector<int32_t>{0, 5, 9}));
  EXPECT_EQ(cold_positions(c.cold(), s), (std::vector<int32_t>{1, 2, 4, 6, 7, 8, 5}));
  // F16 -> Q8_0 -> F16: within a Q8_0 step of the block's largest element.
  for (int i : {0, 31}) EXPECT_NEAR(cold_hot_key(c, 1, 0, 1, i), cold_code(1, 0, 3, i), 101.1 / 127);
  EXPECT_EQ(c.recalled_rows(), 1);
  EXPECT_EQ(c.size(1, 0), 3);

  // The row that went cold comes back too.
  plan.take[s] = {6};
  plan.give[s] = {0};
  c.recall(plan);
  EXPECT_EQ(hot_positions(c, 1, 0), (std::vector<int32_t>{3, 5, 9}));
  for (int i : {0, 31}) EXPECT_NEAR(cold_hot_key(c, 1, 0, 1, i), cold_code(1, 0, 5, i), 2 * 101.1 / 127);
}

TEST(ColdTier, BadRecallPlanLeavesTheCacheUntouched) {
  KvCache c(KvCacheShape{1, 1, 32, DType::F16});
  cold_append(c, 0, 4);
  RecallPlan plan{{{0}}, {{1}}};
  EXPECT_THROW(c.recall(plan), Error);  // no cold tier
  c.enable_cold(size_t{1} << 20);
  c.apply(KeepPlan{{{0, 3}}});
  for (RecallPlan bad : {RecallPlan{{{0, 1}}, {{1}}}, RecallPlan{{{2}}, {{1}}}, RecallPlan{{{0}}, {{2}}},
                         RecallPlan{{{1, 0}}, {{0, 1}}}}) {
    EXPECT_THROW(c.recall(bad), Error);
    EXPECT_EQ(hot_positions(c, 0, 0), (std::vector<int32_t>{0, 3}));
    EXPECT_EQ(cold_positions(c.cold(), 0), (std::vector<int32_t>{1, 2}));
  }
}

TEST(ColdTier, CapDropsTheLeastUsefulRowsThenTheOldest) {
  ColdStore cold({32}, 0);
  std::vector<uint8_t> row(row_bytes(DType::F16, 32), 0);
  for (int p = 10; p < 15; ++p) cold.add(0, p, DType::F16, row.data(), row.data());
  const size_t slot = cold.bytes() / 5;
  EXPECT_EQ(slot, 2 * row_bytes(DType::Q8_0, 32) + 8);
  const std::vector<float> useful = {5, 1, INFINITY, 1, 3};
  std::copy(useful.begin(), useful.end(), cold.usefulness(0).begin());
  cold = [&] {
    ColdStore capped({32}, 3 * slot);
    for (int p = 10; p < 15; ++p) capped.add(0, p, DType::F16, row.data(), row.data());
    std::copy(useful.begin(), useful.end(), capped.usefulness(0).begin());
    return capped;
  }();
  EXPECT_EQ(cold.enforce_cap(), 2);
  EXPECT_EQ(cold_positions(cold, 0), (std::vector<int32_t>{10, 12, 14}));
  EXPECT_LE(cold.bytes(), cold.cap_bytes());
  EXPECT_EQ(cold.dropped(), 2);
}

TEST(ColdTier, TakesBackOnlyTheNewestRowsEveryStreamHolds) {
  KvCache c(KvCacheShape{2, 2, 32, DType::F16});
  c.enable_cold(size_t{1} << 20);
  cold_append(c, 0, 10);
  c.advance(10);  // what the forward pass does once the tokens are in
  EXPECT_EQ(c.rewindable(), 10);
  // Stream 3 lost position 8: only position 9 is the newest row of every stream.
  c.apply(KeepPlan{{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
                    {0, 1, 2, 3, 4, 5, 6, 7, 9}}});
  EXPECT_EQ(c.rewindable(), 1);
  EXPECT_THROW(c.rewind_last(2), Error);
  EXPECT_EQ(c.n_processed(), 10);  // refused whole
  EXPECT_EQ(hot_positions(c, 1, 1).size(), 9u);
  c.rewind_last(1);
  EXPECT_EQ(c.n_processed(), 9);
  EXPECT_EQ(hot_positions(c, 0, 0), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(hot_positions(c, 1, 1), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(c.rewindable(), 0);  // position 8 is gone from stream 3
  // Fed again, the rows are the new ones.
  cold_append(c, 9, 12);
  c.advance(3);
  EXPECT_EQ(c.rewindable(), 3);
  c.rewind_last(3);
  EXPECT_EQ(c.n_processed(), 9);
  EXPECT_EQ(c.cold().size(3), 1);  // the cold tier keeps what was evicted
}

TEST(ColdTier, ClearEmptiesTheColdStore) {
  KvCache c(KvCacheShape{1, 1, 32, DType::F16});
  c.enable_cold(size_t{1} << 20);
  cold_append(c, 0, 4);
  c.apply(KeepPlan{{{3}}});
  EXPECT_EQ(c.cold().size(0), 3);
  c.clear();
  EXPECT_EQ(c.cold().size(0), 0);
  EXPECT_EQ(c.cold().bytes(), 0u);
}

// One layer (or two), one KV head of 32 with two query heads; random keys, except that the key
// at position `needle` points along e0, which the recent queries also point along.
struct RecallCase {
  AttentionGeometry g;
  KvCache cache;
  RecallCase(int layers, int needle) : cache(KvCacheShape{layers, 1, 32, DType::F32}) {
    g.n_layers = layers;
    g.n_heads = 2;
    g.n_kv_heads = 1;
    g.head_dim = 32;
    cache.enable_cold(size_t{1} << 20);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    std::vector<float> k(32), v(32);
    for (int p = 0; p < 40; ++p)
      for (int l = 0; l < layers; ++l) {
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        if (p == needle) k[0] = 6.0f;
        cache.append(l, p, k.data(), v.data());
      }
    // Keep positions 30..39 hot, the rest goes cold.
    std::vector<int32_t> keep;
    for (int r = 30; r < 40; ++r) keep.push_back(r);
    cache.apply(KeepPlan{std::vector<std::vector<int32_t>>(static_cast<size_t>(layers), keep)});
  }
  void ask(KvRecall& recall, int layer) const {
    std::vector<float> q(32, 0.0f);
    q[0] = 6.0f;
    for (int p = 40; p < 48; ++p)
      for (int h = 0; h < 2; ++h) recall.observe_query(layer, h, p, q.data());
  }
};

TEST(Recall, BringsBackTheRowsTheQueriesAttendToInPlaceOfTheLeastWanted) {
  RecallCase rc(1, 7);
  KvRecall recall(rc.g, 64);
  rc.ask(recall, 0);
  const KeepRules rules{10, 4, 0, 0};
  const RecallPlan plan = recall.plan(rc.cache, PruningMode::PerLayerPerHead, rules, nullptr);
  // Six hot rows may leave (four are the window); the needle and its neighbours replace them.
  ASSERT_EQ(plan.take[0].size(), 6u);
  ASSERT_EQ(plan.give[0].size(), 6u);
  // Every cold row was scored (its usefulness, what the cap drops by); the best still cold after
  // the swap is one of the needle's neighbours.
  {
    const ColdStore& cold = rc.cache.cold();
    const std::span<float> useful = rc.cache.cold().usefulness(0);
    EXPECT_TRUE(std::all_of(useful.begin(), useful.end(), [](float u) { return std::isfinite(u); }));
    int32_t best = -1;
    float best_u = -1;
    for (int64_t i = 0; i < cold.size(0); ++i)
      if (!std::count(plan.take[0].begin(), plan.take[0].end(), i) && useful[i] > best_u)
        best_u = useful[i], best = cold.positions(0)[i];
    EXPECT_GE(best, 7 - KvRecall::kPoolBefore);
    EXPECT_LE(best, 7 + KvRecall::kPoolAfter);
  }
  rc.cache.recall(plan);
  const std::vector<int32_t> hot = hot_positions(rc.cache, 0, 0);
  EXPECT_TRUE(std::count(hot.begin(), hot.end(), 7)) << ::testing::PrintToString(hot);
  EXPECT_TRUE(std::is_sorted(hot.begin(), hot.end()));
  for (int p = 36; p < 40; ++p) EXPECT_TRUE(std::count(hot.begin(), hot.end(), p)) << p;  // the window stays
  for (int32_t p : hot) EXPECT_TRUE((p >= 7 - KvRecall::kPoolBefore && p <= 7 + KvRecall::kPoolAfter) || p >= 30) << p;
  EXPECT_EQ(rc.cache.size(0, 0), 10);
  EXPECT_EQ(rc.cache.cold().size(0), 30);
}

TEST(Recall, QuotaBoundsAnEventAndNothingMovesWithoutBetterColdRows) {
  RecallCase rc(1, 7);
  KvRecall recall(rc.g, 2);
  rc.ask(recall, 0);
  const RecallPlan plan = recall.plan(rc.cache, PruningMode::PerLayerPerHead, KeepRules{10, 4, 0, 0}, nullptr);
  EXPECT_EQ(plan.take[0].size(), 2u);
  // No queries: nothing scores, nothing moves.
  RecallCase quiet(1, 7);
  KvRecall none(quiet.g, 64);
  const RecallPlan p2 = none.plan(quiet.cache, PruningMode::PerLayerPerHead, KeepRules{10, 4, 0, 0}, nullptr);
  EXPECT_TRUE(p2.take[0].empty());
}

TEST(Recall, StreamsSharingAKeepSetSwapTheSameRows) {
  RecallCase rc(2, 12);
  KvRecall recall(rc.g, 64);
  rc.ask(recall, 1);  // only layer 1's queries see the needle
  const RecallPlan plan = recall.plan(rc.cache, PruningMode::PerHead, KeepRules{10, 4, 0, 0}, nullptr);
  ASSERT_FALSE(plan.take[0].empty());
  EXPECT_EQ(plan.take[0], plan.take[1]);
  EXPECT_EQ(plan.give[0], plan.give[1]);
  rc.cache.recall(plan);
  EXPECT_EQ(hot_positions(rc.cache, 0, 0), hot_positions(rc.cache, 1, 0));
  const std::vector<int32_t> hot = hot_positions(rc.cache, 0, 0);
  EXPECT_TRUE(std::count(hot.begin(), hot.end(), 12));
  // Per (layer, head) on its own too, a position comes back by the best score any stream gives
  // it: layer 0 heard no query, yet takes back what layer 1's queries read.
  RecallCase own(2, 12);
  KvRecall r2(own.g, 64);
  own.ask(r2, 1);
  const RecallPlan p2 = r2.plan(own.cache, PruningMode::PerLayerPerHead, KeepRules{10, 4, 0, 0}, nullptr);
  for (int s = 0; s < 2; ++s) {
    std::vector<int32_t> back;
    for (int32_t c : p2.take[static_cast<size_t>(s)]) back.push_back(own.cache.cold().positions(s)[c]);
    EXPECT_TRUE(std::count(back.begin(), back.end(), 12)) << "stream " << s;
  }
}

TEST(Recall, TheSwapMapsEachRowToItsPreviousIndex) {
  KvCache c(KvCacheShape{1, 1, 32, DType::F16});
  c.enable_cold(size_t{1} << 20);
  cold_append(c, 0, 6);
  c.apply(KeepPlan{{{0, 2, 4, 5}}});  // cold: 1, 3
  const RecallPlan plan{{{1}}, {{1}}};  // position 3 back for position 2
  EXPECT_EQ(c.recall(plan)[0], (std::vector<int32_t>{0, -1, 2, 3}));
  EXPECT_EQ(hot_positions(c, 0, 0), (std::vector<int32_t>{0, 3, 4, 5}));
}

}  // namespace
}  // namespace triattn
