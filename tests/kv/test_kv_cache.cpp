#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/half.h"

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
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::Values(DType::F32, DType::F16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(KvCache, RejectsBadShapesAndTypes) {
  EXPECT_THROW(KvCache(KvCacheShape{0, 1, 4, DType::F16}), Error);
  EXPECT_THROW(KvCache(KvCacheShape{1, 1, 4, DType::Q8_0}), Error);
}

}  // namespace
}  // namespace triattn
