#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"

namespace triattn {
namespace {

// Fills token `pos` of every stream with values that encode (layer, head, pos, dim).
float code(int layer, int head, int pos, int i, bool value) {
  return static_cast<float>(layer * 1000 + head * 100 + pos) + (value ? 0.5f : 0.25f) * static_cast<float>(i);
}

void append_tokens(KvCache& c, int from, int to) {
  const KvCacheShape& s = c.shape();
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
  for (int p = from; p < to; ++p)
    for (int l = 0; l < s.n_layers; ++l) {
      for (int h = 0; h < s.n_kv_heads; ++h)
        for (int i = 0; i < s.head_dim; ++i) {
          k[h * s.head_dim + i] = code(l, h, p, i, false);
          v[h * s.head_dim + i] = code(l, h, p, i, true);
        }
      c.append(l, p, k.data(), v.data());
    }
}

float key_at(const KvCache& c, int l, int h, int row, int i) {
  const auto* base = static_cast<const uint8_t*>(c.keys(l, h)) + row * c.row_bytes();
  if (c.shape().type == DType::F32) return reinterpret_cast<const float*>(base)[i];
  return f16_to_f32(reinterpret_cast<const uint16_t*>(base)[i]);
}

class KvCacheTest : public ::testing::TestWithParam<DType> {};

TEST_P(KvCacheTest, AppendStoresRowsAndPositionsPerStream) {
  KvCache c(KvCacheShape{2, 3, 4, GetParam()});
  append_tokens(c, 0, 5);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      ASSERT_EQ(c.size(l, h), 5);
      for (int p = 0; p < 5; ++p) {
        EXPECT_EQ(c.positions(l, h)[p], p);
        // f16 holds these small integers + quarters exactly up to 2048
        EXPECT_NEAR(key_at(c, l, h, p, 3), code(l, h, p, 3, false), 0.5);
      }
    }
  EXPECT_EQ(c.peak_tokens(), 5);
  EXPECT_EQ(c.bytes_in_use(), 2u * 3 * 5 * 2 * c.row_bytes());
  EXPECT_EQ(c.peak_bytes(), c.bytes_in_use());
}

TEST_P(KvCacheTest, ApplyCompactsEachStreamIndependently) {
  KvCache c(KvCacheShape{2, 2, 8, GetParam()});
  append_tokens(c, 0, 10);
  KeepPlan plan;
  plan.keep = {{0, 9}, {1, 2, 3}, {5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  c.apply(plan);
  EXPECT_EQ(c.size(0, 0), 2);
  EXPECT_EQ(c.size(0, 1), 3);
  EXPECT_EQ(c.size(1, 0), 1);
  EXPECT_EQ(c.size(1, 1), 10);
  EXPECT_EQ(c.positions(0, 0)[1], 9);
  EXPECT_EQ(c.positions(0, 1)[0], 1);
  EXPECT_EQ(c.positions(1, 0)[0], 5);
  EXPECT_NEAR(key_at(c, 0, 0, 1, 2), code(0, 0, 9, 2, false), 0.5);
  EXPECT_NEAR(key_at(c, 1, 0, 0, 7), code(1, 0, 5, 7, false), 0.5);
  EXPECT_EQ(c.prune_events(), 1);
  EXPECT_EQ(c.peak_tokens(), 10);  // peak is remembered
  EXPECT_EQ(c.bytes_in_use(), (2u + 3 + 1 + 10) * 2 * c.row_bytes());
  // appending after a prune continues every stream
  append_tokens(c, 10, 11);
  EXPECT_EQ(c.size(1, 0), 2);
  EXPECT_EQ(c.positions(1, 0)[1], 10);
}

TEST_P(KvCacheTest, RejectsMalformedPlans) {
  KvCache c(KvCacheShape{1, 2, 4, GetParam()});
  append_tokens(c, 0, 4);
  KeepPlan wrong_count;
  wrong_count.keep = {{0}};
  EXPECT_THROW(c.apply(wrong_count), Error);
  KeepPlan unsorted;
  unsorted.keep = {{2, 1}, {0}};
  EXPECT_THROW(c.apply(unsorted), Error);
  KeepPlan out_of_range;
  out_of_range.keep = {{0}, {4}};
  EXPECT_THROW(c.apply(out_of_range), Error);
  // A plan whose first stream is fine and second is not moves nothing.
  KeepPlan half_bad;
  half_bad.keep = {{1, 3}, {3, 3}};
  EXPECT_THROW(c.apply(half_bad), Error);
  EXPECT_EQ(c.size(0, 0), 4);
  EXPECT_EQ(c.positions(0, 0)[1], 1);
  EXPECT_NEAR(key_at(c, 0, 0, 1, 2), code(0, 0, 1, 2, false), 0.5);
  EXPECT_EQ(c.prune_events(), 0);
  EXPECT_EQ(c.bytes_in_use(), 2u * 4 * 2 * c.row_bytes());
}

TEST_P(KvCacheTest, ApplyOnAPoolMatchesSerial) {
  const KvCacheShape shape{3, 4, 8, GetParam()};
  KvCache serial(shape), pooled(shape);
  append_tokens(serial, 0, 40);
  append_tokens(pooled, 0, 40);
  KeepPlan plan;
  for (int s = 0; s < serial.n_streams(); ++s) {  // a different subset per stream
    plan.keep.emplace_back();
    for (int32_t i = 0; i < 40; ++i)
      if ((i * (s + 3)) % 7 < 3) plan.keep.back().push_back(i);
  }
  ThreadPool pool(3);
  serial.apply(plan);
  pooled.apply(plan, &pool);
  EXPECT_EQ(pooled.bytes_in_use(), serial.bytes_in_use());
  EXPECT_EQ(pooled.prune_events(), 1);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 4; ++h) {
      const int64_t n = serial.size(l, h);
      ASSERT_EQ(pooled.size(l, h), n);
      ASSERT_GT(n, 0);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(pooled.positions(l, h)[i], serial.positions(l, h)[i]);
      EXPECT_EQ(std::memcmp(pooled.keys(l, h), serial.keys(l, h), static_cast<size_t>(n) * serial.row_bytes()), 0);
      EXPECT_EQ(std::memcmp(pooled.values(l, h), serial.values(l, h), static_cast<size_t>(n) * serial.row_bytes()), 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::Values(DType::F32, DType::F16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(KvCache, RejectsBadShapesAndTypes) {
  EXPECT_THROW(KvCache(KvCacheShape{0, 1, 4, DType::F16}), Error);
  EXPECT_THROW(KvCache(KvCacheShape{1, 1, 4, DType::Q8_0}), Error);
}

}  // namespace
}  // namespace triattn
