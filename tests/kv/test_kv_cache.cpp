#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/ops.h"

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

// Element i of a stored key (value: a stored value) row, as floats.
float row_at(const KvCache& c, int l, int h, int row, int i, bool value) {
  std::vector<float> f(static_cast<size_t>(c.shape().head_dim));
  const void* rows = value ? c.values(l, h) : c.keys(l, h);
  ops::dequantize_row(c.shape().type, static_cast<const uint8_t*>(rows) + row * c.row_bytes(), f.data(),
                      c.shape().head_dim);
  return f[i];
}

float key_at(const KvCache& c, int l, int h, int row, int i) { return row_at(c, l, h, row, i, false); }

// How far a stored key of token `pos` may be from code(): f16 holds these small integers +
// quarters exactly up to 2048 (0.5 is slack); Q8_0 rounds to its block's step amax/127
// (half a step), and the step is stored in f16 (2^-11 relative, times up to 127 steps).
double tol(const KvCache& c, int l, int h, int pos, bool value = false) {
  if (c.shape().type != DType::Q8_0) return 0.5;
  const double amax = code(l, h, pos, c.shape().head_dim - 1, value);
  return amax / 254 + amax * 1e-3;
}

float value_at(const KvCache& c, int l, int h, int row, int i) { return row_at(c, l, h, row, i, true); }

// Stream (l, h) holds exactly the tokens `want`, in order, keys and values intact.
void expect_stream(const KvCache& c, int l, int h, const std::vector<int>& want) {
  ASSERT_EQ(c.size(l, h), static_cast<int64_t>(want.size())) << l << " " << h;
  for (size_t r = 0; r < want.size(); ++r) {
    const int p = want[r], row = static_cast<int>(r);
    EXPECT_EQ(c.positions(l, h)[r], p);
    for (int i : {0, c.shape().head_dim - 1}) {
      EXPECT_NEAR(key_at(c, l, h, row, i), code(l, h, p, i, false), tol(c, l, h, p)) << l << h << p << i;
      EXPECT_NEAR(value_at(c, l, h, row, i), code(l, h, p, i, true), tol(c, l, h, p, true)) << l << h << p << i;
    }
  }
}

class KvCacheTest : public ::testing::TestWithParam<DType> {};

TEST_P(KvCacheTest, AppendStoresRowsAndPositionsPerStream) {
  KvCache c(KvCacheShape{2, 3, 32, GetParam()});
  append_tokens(c, 0, 5);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      ASSERT_EQ(c.size(l, h), 5);
      for (int p = 0; p < 5; ++p) {
        EXPECT_EQ(c.positions(l, h)[p], p);
        EXPECT_NEAR(key_at(c, l, h, p, 3), code(l, h, p, 3, false), tol(c, l, h, p));
      }
    }
  EXPECT_EQ(c.peak_tokens(), 5);
  EXPECT_EQ(c.bytes_in_use(), 2u * 3 * 5 * 2 * c.row_bytes());
  EXPECT_EQ(c.peak_bytes(), c.bytes_in_use());
}

TEST_P(KvCacheTest, ApplyCompactsEachStreamIndependently) {
  KvCache c(KvCacheShape{2, 2, 32, GetParam()});
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
  EXPECT_NEAR(key_at(c, 0, 0, 1, 2), code(0, 0, 9, 2, false), tol(c, 0, 0, 9));
  EXPECT_NEAR(key_at(c, 1, 0, 0, 7), code(1, 0, 5, 7, false), tol(c, 1, 0, 5));
  EXPECT_EQ(c.prune_events(), 1);
  EXPECT_EQ(c.peak_tokens(), 10);  // peak is remembered
  EXPECT_EQ(c.bytes_in_use(), (2u + 3 + 1 + 10) * 2 * c.row_bytes());
  // appending after a prune continues every stream
  append_tokens(c, 10, 11);
  EXPECT_EQ(c.size(1, 0), 2);
  EXPECT_EQ(c.positions(1, 0)[1], 10);
}

TEST_P(KvCacheTest, ReservedStreamsSitSideBySideUntilTheyOutgrowTheirShare) {
  KvCache c(KvCacheShape{2, 3, 32, GetParam()});
  c.reserve(6);  // on an empty cache: one buffer, each stream's K rows then its V rows
  const size_t share = 6 * c.row_bytes();
  const auto* base = static_cast<const uint8_t*>(c.keys(0, 0));
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      const size_t at = 2 * share * static_cast<size_t>(c.stream_index(l, h));
      EXPECT_EQ(static_cast<const uint8_t*>(c.keys(l, h)), base + at);
      EXPECT_EQ(static_cast<const uint8_t*>(c.values(l, h)), base + at + share);
    }
  EXPECT_EQ(c.capacity(), 6);
  append_tokens(c, 0, 6);
  const std::vector<int> six = {0, 1, 2, 3, 4, 5};
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) expect_stream(c, l, h, six);

  KvCache copy = c;  // its own rows, at the same places in its own buffer
  EXPECT_NE(copy.keys(1, 2), c.keys(1, 2));
  KeepPlan plan;
  plan.keep.assign(6, {0, 1, 2, 3, 4, 5});
  plan.keep[0] = {0, 5};
  plan.keep[4] = {2};
  c.apply(plan);
  expect_stream(c, 0, 0, {0, 5});
  expect_stream(c, 1, 1, {2});

  // Streams 0 and 4 still fit; the others outgrow their share and move to their own rows.
  append_tokens(c, 6, 9);
  expect_stream(c, 0, 0, {0, 5, 6, 7, 8});
  expect_stream(c, 1, 1, {2, 6, 7, 8});
  for (int i : {1, 2, 3, 5}) expect_stream(c, i / 3, i % 3, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  append_tokens(c, 9, 12);  // now every stream has left; the last ones take the buffer's rows along
  expect_stream(c, 1, 1, {2, 6, 7, 8, 9, 10, 11});
  c.drop_before(0, 7);
  expect_stream(c, 0, 0, {7, 8, 9, 10, 11});
  expect_stream(c, 0, 2, {7, 8, 9, 10, 11});
  EXPECT_EQ(c.bytes_in_use(), (5u * 3 + 7 + 12 * 2) * 2 * c.row_bytes());

  // The copy never saw any of it, and grows on its own.
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) expect_stream(copy, l, h, six);
  append_tokens(copy, 6, 8);
  expect_stream(copy, 1, 0, {0, 1, 2, 3, 4, 5, 6, 7});

  // Reserving a cache that already has rows grows each stream in place of a new layout.
  KvCache d(KvCacheShape{1, 2, 32, GetParam()});
  append_tokens(d, 0, 2);
  d.reserve(40);
  EXPECT_EQ(d.capacity(), 64);  // the stream's own doubling rule: at least 64 rows
  expect_stream(d, 0, 1, {0, 1});
}

// max_position bounds every row's position through appends (in or out of order), pruning,
// a window's drop and copies, and starts again at clear(): attention skips its masking pass
// on it, so a bound below a kept row would let a query see a key after it.
TEST_P(KvCacheTest, MaxPositionBoundsEveryRow) {
  KvCache c(KvCacheShape{2, 2, 32, GetParam()});
  const int32_t none = std::numeric_limits<int32_t>::min();
  auto bounds_all = [](const KvCache& k) {
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 2; ++h)
        for (int64_t r = 0; r < k.size(l, h); ++r)
          if (k.positions(l, h)[r] > k.max_position(l, h)) return false;
    return true;
  };
  EXPECT_EQ(c.max_position(1, 1), none);
  append_tokens(c, 0, 10);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) EXPECT_EQ(c.max_position(l, h), 9);
  KeepPlan plan;
  plan.keep = {{0, 9}, {1, 2, 3}, {5}, {}};
  c.apply(plan);
  EXPECT_TRUE(bounds_all(c));
  EXPECT_EQ(c.max_position(0, 0), 9);
  append_tokens(c, 20, 21);
  append_tokens(c, 15, 16);  // out of order: the bound is the largest, not the last
  EXPECT_TRUE(bounds_all(c));
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) EXPECT_EQ(c.max_position(l, h), 20);
  const KvCache copy = c;
  c.drop_before(0, 16);
  EXPECT_TRUE(bounds_all(c));
  EXPECT_EQ(copy.max_position(0, 0), 20);
  c.clear();
  EXPECT_EQ(c.max_position(0, 1), none);
  append_tokens(c, 3, 4);
  EXPECT_EQ(c.max_position(0, 1), 3);
  EXPECT_EQ(copy.max_position(0, 1), 20);
}

TEST_P(KvCacheTest, RejectsMalformedPlans) {
  KvCache c(KvCacheShape{1, 2, 32, GetParam()});
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
  EXPECT_NEAR(key_at(c, 0, 0, 1, 2), code(0, 0, 1, 2, false), tol(c, 0, 0, 1));
  EXPECT_EQ(c.prune_events(), 0);
  EXPECT_EQ(c.bytes_in_use(), 2u * 4 * 2 * c.row_bytes());
}

TEST_P(KvCacheTest, ApplyOnAPoolMatchesSerial) {
  const KvCacheShape shape{3, 4, 32, GetParam()};
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

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::Values(DType::F32, DType::F16, DType::Q8_0),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(KvCache, RejectsBadShapesAndTypes) {
  EXPECT_THROW(KvCache(KvCacheShape{0, 1, 4, DType::F16}), Error);
  EXPECT_THROW(KvCache(KvCacheShape{1, 1, 32, DType::BF16}), Error);
  EXPECT_THROW(KvCache(KvCacheShape{1, 1, 32, DType::Q4_0}), Error);
  try {
    KvCache(KvCacheShape{1, 1, 16, DType::Q8_0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0 holds rows in blocks of 32 elements, but this model's head_dim is 16"),
              std::string::npos)
        << e.what();
  }
}

TEST(KvCache, LargeStreamsStartOnHugePages) {
  // 8192 F16 rows of 128 are 2 MiB: from there a stream's K and V rows are 2 MiB aligned
  // (huge pages where the system gives them); smaller streams are cache-line aligned.
  const uintptr_t mib2 = uintptr_t(2) << 20;
  KvCache big(KvCacheShape{2, 2, 128, DType::F16}, 8192);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(big.keys(l, h)) % mib2, 0u) << l << " " << h;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(big.values(l, h)) % mib2, 0u) << l << " " << h;
    }
  KvCache small(KvCacheShape{1, 1, 128, DType::Q8_0});
  append_tokens(small, 0, 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.keys(0, 0)) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.values(0, 0)) % 64, 0u);
}

TEST(KvCache, AStreamLeavingTheSharedBufferLeavesTheOthersIntact) {
  // 64 F16 rows of 128: each stream's share is 32 KiB, whole pages that go back to the system
  // when the stream moves out (release_pages); the stream still in the buffer keeps its rows.
  KvCache c(KvCacheShape{1, 2, 128, DType::F16});
  c.reserve(64);
  std::vector<int> all;
  for (int p = 0; p < 64; ++p) all.push_back(p);
  append_tokens(c, 0, 64);
  KeepPlan plan;
  plan.keep = {{}, {1, 2, 3}};
  for (int i = 0; i < 64; ++i) plan.keep[0].push_back(i);
  c.apply(plan);
  append_tokens(c, 64, 66);  // stream 0 outgrows its share, stream 1 does not
  all.push_back(64);
  all.push_back(65);
  expect_stream(c, 0, 0, all);
  expect_stream(c, 0, 1, {1, 2, 3, 64, 65});
  EXPECT_EQ(c.capacity(), 128);
}

TEST(KvCache, Q8_0RowsAreTheGgmlBlocksOfTheAppendedValues) {
  // A row of head_dim 64 is two blocks of (f16 scale, 32 int8): 68 bytes, 0.53 of f16's 128.
  KvCache c(KvCacheShape{1, 1, 64, DType::Q8_0});
  EXPECT_EQ(c.row_bytes(), 68u);
  std::vector<float> k(64), v(64);
  for (int i = 0; i < 64; ++i) {
    k[i] = i < 32 ? 0.1f * static_cast<float>(i - 16) : -3.0f + 0.01f * static_cast<float>(i);
    v[i] = static_cast<float>(i % 7) - 3.0f;
  }
  c.append(0, 0, k.data(), v.data());
  const auto* row = static_cast<const uint8_t*>(c.keys(0, 0));
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(k[32 * b + i]));
    uint16_t h;
    std::memcpy(&h, row + 34 * b, 2);
    EXPECT_EQ(h, f32_to_f16(amax / 127)) << "block " << b;
    for (int i = 0; i < 32; ++i)  // round to nearest of the block's step
      EXPECT_EQ(static_cast<int8_t>(row[34 * b + 2 + i]), static_cast<int>(std::lround(k[32 * b + i] * 127 / amax)))
          << "block " << b << " element " << i;
  }
  EXPECT_EQ(c.bytes_in_use(), 2u * 68);
}

}  // namespace
}  // namespace triattn
