// Attention kernels (scalar, AVX2, AVX-512 and NEON, through attend() and directly) against a
// double-precision reference: random q/K/V, keys at random positions so that some are masked for each query
// (masking is by position, not by index), F32, F16 and Q8_0 streams, 1..16 queries per call (a GQA
// group, or a prefill run), 1..5000 keys (several online-softmax blocks, partial last block).
// Tolerance: outputs (convex combinations of N(0,1) values) within 1e-4 absolute — f32
// accumulation over up to 5000 keys with the ~2 ulp polynomial exp; weights within 1e-4
// relative + 1e-7 absolute, masked weights exactly 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "ops/attention.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace triattn {
namespace {

struct Case {
  DType type;
  int head_dim;
  int n_q;
  int64_t n;
};

struct Data {
  std::vector<float> q;         // [n_q][d]
  std::vector<int32_t> q_pos;   // [n_q]
  std::vector<uint8_t> k, v;    // stream rows in `type`
  std::vector<double> kd, vd;   // the same rows as the kernel sees them (after f16 rounding or
                                // Q8_0 quantization)
  std::vector<int32_t> pos;     // [n]
  AttentionStream stream() const {
    return AttentionStream{type, k.data(), v.data(), pos.data(), n, d, window, softcap, nullptr, max_pos, score_parts};
  }
  DType type;
  int d;
  int64_t n;
  int32_t window = 0;  // sliding-window layers: q_pos - pos < window
  float softcap = 0;   // Gemma 2: scores -> cap * tanh(scores / cap)
  int32_t max_pos = std::numeric_limits<int32_t>::max();  // the caller's bound on pos (none)
  int score_parts = 1;  // parts per score (the 512-bit kernel; the others sum in one)
  bool visible(int64_t i, int j) const {
    return pos[i] <= q_pos[j] && (window == 0 || q_pos[j] - pos[i] < window);
  }
};

Data make(const Case& c, uint32_t seed, float q_scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data x;
  x.type = c.type;
  x.d = c.head_dim;
  x.n = c.n;
  const size_t elems = static_cast<size_t>(c.n) * c.head_dim;
  x.kd.resize(elems);
  x.vd.resize(elems);
  const size_t row = row_bytes(c.type, c.head_dim);
  x.k.resize(static_cast<size_t>(c.n) * row);
  x.v.resize(static_cast<size_t>(c.n) * row);
  for (int which = 0; which < 2; ++which) {
    std::vector<uint8_t>& raw = which ? x.v : x.k;
    std::vector<double>& dbl = which ? x.vd : x.kd;
    for (size_t i = 0; i < elems; ++i) {
      const float f = nd(rng);
      if (c.type == DType::F16) {
        const uint16_t h = f32_to_f16(f);
        std::memcpy(raw.data() + 2 * i, &h, 2);
        dbl[i] = f16_to_f32(h);
      } else {
        dbl[i] = f;
        if (c.type == DType::F32) std::memcpy(raw.data() + 4 * i, &f, 4);
      }
    }
    if (c.type != DType::Q8_0) continue;
    // Q8_0 rows as the KV cache writes them (the library's quantizer), read back here from
    // the GGML block layout itself: per block of 32, an f16 scale, then 32 int8s.
    for (int64_t r = 0; r < c.n; ++r) {
      std::vector<float> f(dbl.begin() + r * c.head_dim, dbl.begin() + (r + 1) * c.head_dim);
      uint8_t* dst = raw.data() + r * row;
      ops::quantize_row(DType::Q8_0, f.data(), dst, c.head_dim);
      for (int e = 0; e < c.head_dim; ++e) {
        const uint8_t* block = dst + (e / 32) * 34;
        uint16_t h;
        std::memcpy(&h, block, 2);
        dbl[r * c.head_dim + e] = static_cast<double>(f16_to_f32(h)) * static_cast<int8_t>(block[2 + e % 32]);
      }
    }
  }
  // Positions: a shuffled subset of [0, 2n), so order in the stream says nothing.
  std::vector<int32_t> all(static_cast<size_t>(2 * c.n));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  x.pos.assign(all.begin(), all.begin() + c.n);
  x.q.resize(static_cast<size_t>(c.n_q) * c.head_dim);
  for (float& f : x.q) f = q_scale * nd(rng);
  std::uniform_int_distribution<int32_t> qp(0, static_cast<int32_t>(2 * c.n));
  for (int j = 0; j < c.n_q; ++j) x.q_pos.push_back(qp(rng));
  x.q_pos[0] = static_cast<int32_t>(2 * c.n);  // one query sees every key
  return x;
}

// Double-precision softmax attention of query j; fills weights (n) and out (d).
void reference(const Data& x, int j, double scale, std::vector<double>& w, std::vector<double>& out) {
  const int d = x.d;
  w.assign(static_cast<size_t>(x.n), 0.0);
  out.assign(static_cast<size_t>(d), 0.0);
  double mx = -std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(x.n), 0.0);
  for (int64_t i = 0; i < x.n; ++i) {
    if (!x.visible(i, j)) continue;
    double dot = 0;
    for (int e = 0; e < d; ++e) dot += static_cast<double>(x.q[j * d + e]) * x.kd[i * d + e];
    s[i] = scale * dot;
    if (x.softcap > 0) s[i] = x.softcap * std::tanh(s[i] / x.softcap);
    mx = std::max(mx, s[i]);
  }
  if (mx == -std::numeric_limits<double>::infinity()) return;
  double sum = 0;
  for (int64_t i = 0; i < x.n; ++i)
    if (x.visible(i, j)) sum += (w[i] = std::exp(s[i] - mx));
  for (int64_t i = 0; i < x.n; ++i) {
    w[i] /= sum;
    for (int e = 0; e < d; ++e) out[e] += w[i] * x.vd[i * d + e];
  }
}

using Kernel = void (*)(const float* const*, const int32_t*, int, const AttentionStream&, float,
                        float* const*, float*, float*);

// attend() in the kernels' form (it reports no softmax state).
void attend_entry(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s, float scale,
                  float* const* out, float* weights, float*) {
  attend(q, q_pos, n_q, s, scale, out, weights);
}

void check_data(const Data& x, const Case& c, Kernel kernel);

void check(const Case& c, Kernel kernel, const char* name, uint32_t seed, float q_scale = 1.0f,
           int32_t window = 0, float softcap = 0) {
  SCOPED_TRACE(::testing::Message() << name << " " << dtype_name(c.type) << " d=" << c.head_dim
                                    << " n_q=" << c.n_q << " n=" << c.n << " q_scale=" << q_scale
                                    << " window=" << window << " softcap=" << softcap);
  Data x = make(c, seed, q_scale);
  x.window = window;
  x.softcap = softcap;
  check_data(x, c, kernel);
}

// The kernel's outputs and weights for x against the reference, and their independence of
// the weights being asked for and of the call's other queries.
void check_data(const Data& x, const Case& c, Kernel kernel) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> out(static_cast<size_t>(c.n_q) * c.head_dim, NAN);
  std::vector<float> weights(static_cast<size_t>(c.n_q * c.n), NAN);
  std::vector<const float*> qs;
  std::vector<float*> outs;
  for (int j = 0; j < c.n_q; ++j) {
    qs.push_back(x.q.data() + j * c.head_dim);
    outs.push_back(out.data() + j * c.head_dim);
  }
  kernel(qs.data(), x.q_pos.data(), c.n_q, x.stream(), scale, outs.data(), weights.data(), nullptr);

  std::vector<double> rw, ro;
  for (int j = 0; j < c.n_q; ++j) {
    reference(x, j, scale, rw, ro);
    for (int e = 0; e < c.head_dim; ++e)
      ASSERT_NEAR(out[j * c.head_dim + e], ro[e], 1e-4) << "query " << j << " dim " << e;
    double wsum = 0;
    for (int64_t i = 0; i < c.n; ++i) {
      const float w = weights[j * c.n + i];
      if (!x.visible(i, j)) {
        ASSERT_EQ(w, 0.0f) << "masked key " << i << " query " << j;
      }
      ASSERT_NEAR(w, rw[i], 1e-4 * rw[i] + 1e-7) << "weight " << i << " query " << j;
      wsum += w;
    }
    bool any = false;
    for (int64_t i = 0; i < x.n; ++i) any = any || x.visible(i, j);
    EXPECT_NEAR(wsum, any ? 1.0 : 0.0, 1e-4) << "query " << j;
  }

  // Without weights the outputs are the same, bit for bit.
  std::vector<float> out2(out.size(), NAN);
  std::vector<float*> outs2;
  for (int j = 0; j < c.n_q; ++j) outs2.push_back(out2.data() + j * c.head_dim);
  kernel(qs.data(), x.q_pos.data(), c.n_q, x.stream(), scale, outs2.data(), nullptr, nullptr);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out2[i], out[i]) << "output " << i;

  // Grouping does not mix queries: each query alone gives the same result, bit for bit.
  for (int j = 0; j < c.n_q; ++j) {
    std::vector<float> one(static_cast<size_t>(c.head_dim), NAN);
    const float* q1 = qs[j];
    float* o1 = one.data();
    kernel(&q1, &x.q_pos[j], 1, x.stream(), scale, &o1, nullptr, nullptr);
    for (int e = 0; e < c.head_dim; ++e)
      ASSERT_EQ(one[e], out[j * c.head_dim + e]) << "query " << j << " alone, dim " << e;
  }
}

#if defined(__x86_64__)
bool cpu_has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}
bool cpu_has_avx512() {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
#endif

// The scalar kernel and every SIMD kernel this CPU runs, by name (head dims that are
// multiples of 16 suit them all).
std::vector<std::pair<Kernel, const char*>> cpu_kernels() {
  std::vector<std::pair<Kernel, const char*>> kernels = {{attention_detail::attend_scalar, "scalar"}};
#if defined(__x86_64__)
  if (cpu_has_avx2()) kernels.push_back({attention_detail::attend_avx2, "avx2"});
  if (cpu_has_avx512()) kernels.push_back({attention_detail::attend_avx512, "avx512"});
#elif defined(__aarch64__)
  kernels.push_back({attention_detail::attend_neon, "neon"});
#endif
  return kernels;
}

// Every SIMD kernel this CPU runs, each where its head_dim rule lets attend() choose it.
template <class... Extra>
void check_simd(const Case& c, uint32_t seed, Extra... extra) {
#if defined(__x86_64__)
  if (cpu_has_avx2() && c.head_dim % 8 == 0) check(c, attention_detail::attend_avx2, "avx2", seed, extra...);
  if (cpu_has_avx512() && c.head_dim % 16 == 0) check(c, attention_detail::attend_avx512, "avx512", seed, extra...);
#elif defined(__aarch64__)
  if (c.head_dim % 4 == 0) check(c, attention_detail::attend_neon, "neon", seed, extra...);
#endif
}

TEST(Attention, MatchesReferenceAcrossTypesGroupsAndLengths) {
  uint32_t seed = 10;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    // 7: a tile of 4 queries (AVX-512), then 2, then 1; 16: a prefill run of 8 tokens x 2.
    for (int n_q : {1, 2, 3, 4, 7, 8, 16})
      // 47-49, 95-97: around the blocks of F16 rows of head dim 128 (block_keys: 48); 63-65
      // around those of Q8_0 (64) and F32 (32, 64).
      for (int64_t n : {1, 5, 47, 48, 49, 63, 64, 65, 95, 96, 97, 200, 1000, 5000}) {
        if (n == 5000 && n_q != 8 && n_q != 1) continue;  // keep the test fast
        const Case c{t, 128, n_q, n};
        check(c, attend_entry, "attend", ++seed);
        check(c, attention_detail::attend_scalar, "scalar", seed);
        check_simd(c, seed);
      }
}

TEST(Attention, SlidingWindowAndSoftcap) {
  // Windows narrower than a block, about a block and wider than the stream; soft-caps that
  // bite (scores of N(0,1) q and keys reach ~4 after scaling; caps 1 and 5).
  uint32_t seed = 900;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    for (int32_t window : {0, 1, 7, 64, 300, 100000})
      for (float cap : {0.0f, 1.0f, 5.0f})
        for (int n_q : {1, 4}) {
          if (window == 0 && cap == 0) continue;  // the plain case is covered above
          const Case c{t, 64, n_q, 250};
          check(c, attend_entry, "attend", ++seed, 2.0f, window, cap);
          check(c, attention_detail::attend_scalar, "scalar", seed, 2.0f, window, cap);
          check_simd(c, seed, 2.0f, window, cap);
        }
}

TEST(Attention, OtherHeadDims) {
  // 64, 48 and 8 use the vector kernels (48: 512-bit with a 32+16 split; 8: 256-bit only);
  // 40 has a 32+8 split; 12 and 1 take the scalar path. Q8_0 (blocks of 32): 32, 64, 96
  // (512-bit: a 64-element value tile, then a one-vector tail that reads its own scales), 256.
  // 64, 128 and 256 have score loops of their own, unrolled at compile time: 3 queries take
  // their tiles of 2 and 1, 5 the 512-bit tile of 4.
  uint32_t seed = 500;
  for (int d : {64, 48, 8, 40, 12, 1, 32, 96, 256})
    for (DType t : {DType::F32, DType::F16, DType::Q8_0})
      for (int n_q : {3, 5}) {
        if (t == DType::Q8_0 && d % 32 != 0) continue;
        const Case c{t, d, n_q, 150};
        check(c, attend_entry, "attend", ++seed);
        check_simd(c, seed);
      }
}

TEST(Attention, PeakedScoresRescaleAcrossBlocks) {
  // Large q: scores span hundreds, so the running max jumps between blocks and early blocks
  // underflow to zero weight; the rescaling must still give the reference.
  uint32_t seed = 900;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0}) {
    const Case c{t, 128, 4, 700};
    check(c, attend_entry, "attend", ++seed, 40.0f);
    check(c, attention_detail::attend_scalar, "scalar", seed, 40.0f);
    check_simd(c, seed, 40.0f);
  }
}

// Scores summed in two parts (AttentionStream::score_parts, what forward.cpp asks for when a
// model's GQA group is 1 or 2 queries): every kernel against the reference, and a query's
// outputs the same bit for bit alone as in its call (check_data) on the 512-bit kernel's
// every tile: 1, 2, 4 (whose two parts are made one after the other) and 4 + 2 + 1 queries;
// head dims unrolled at compile time (64, 128, 256) and not (48 and 96: an odd last vector
// goes to the first part); partial last tiles and blocks. On AVX-512 the parts must change
// the sums' rounding somewhere, or the field would be ignored.
TEST(Attention, TwoPartScoresMatchReferenceAndDoNotMixQueries) {
  uint32_t seed = 1500;
  for (auto [kernel, name] : cpu_kernels())
    for (DType t : {DType::F32, DType::F16, DType::Q8_0})
      for (int d : {64, 128, 256, 48, 96})
        for (int n_q : {1, 2, 4, 5, 7}) {
          if (t == DType::Q8_0 && d % 32 != 0) continue;
          const Case c{t, d, n_q, n_q == 7 ? 63 : 201};
          SCOPED_TRACE(::testing::Message() << name << " " << dtype_name(t) << " d=" << d << " n_q=" << n_q);
          Data x = make(c, ++seed);
          x.score_parts = 2;
          check_data(x, c, kernel);
        }
#if defined(__x86_64__)
  if (!cpu_has_avx512()) return;
  const Case c{DType::F16, 128, 2, 200};
  Data x = make(c, 1600);
  std::vector<const float*> qs = {x.q.data(), x.q.data() + c.head_dim};
  auto run = [&](int parts) {
    x.score_parts = parts;
    std::vector<float> w(static_cast<size_t>(c.n_q * c.n));
    std::vector<float> out(static_cast<size_t>(c.n_q) * c.head_dim);
    std::vector<float*> outs = {out.data(), out.data() + c.head_dim};
    attention_detail::attend_avx512(qs.data(), x.q_pos.data(), c.n_q, x.stream(), 0.1f, outs.data(), w.data(), nullptr);
    return w;
  };
  EXPECT_NE(run(1), run(2)) << "the 512-bit kernel summed both ways alike";
#endif
}

// The caller's bound on a stream's positions (AttentionStream::max_pos, the KV cache's
// max_position) lets the kernels skip the per-block position pass when every query is at or
// after it, as in decode; a bound above some query must leave the masking as it is. Every
// kernel against the reference, and bit for bit against the same call without a bound.
TEST(Attention, APositionBoundMasksExactlyAsWithout) {
  uint32_t seed = 1200;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    for (int64_t n : {5, 64, 200}) {
      const Case c{t, 128, 4, n};
      // 0: queries spread over the stream (keys after some of them), bound = the true max;
      // 1: decode, every query after the newest key; 2: the newest query at the bound itself
      // and the others before it (keys at the bound are visible to it, later ones to none).
      for (int shape = 0; shape < 3; ++shape) {
        SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n << " shape " << shape);
        Data x = make(c, ++seed);
        const int32_t newest = *std::max_element(x.pos.begin(), x.pos.end());
        if (shape == 1)
          for (int j = 0; j < c.n_q; ++j) x.q_pos[j] = newest + j;
        if (shape == 2)
          for (int j = 0; j < c.n_q; ++j) x.q_pos[j] = newest - 3 * j;
        const float scale = 0.125f;
        std::vector<const float*> qs;
        for (int j = 0; j < c.n_q; ++j) qs.push_back(x.q.data() + j * c.head_dim);
        auto run = [&](Kernel kernel, const Data& d) {
          std::vector<float> out(static_cast<size_t>(c.n_q) * c.head_dim, NAN);
          std::vector<float*> outs;
          for (int j = 0; j < c.n_q; ++j) outs.push_back(out.data() + j * c.head_dim);
          kernel(qs.data(), d.q_pos.data(), c.n_q, d.stream(), scale, outs.data(), nullptr, nullptr);
          return out;
        };
        Data bounded = x;
        bounded.max_pos = newest;
        auto kernels = cpu_kernels();
        kernels.insert(kernels.begin(), {attend_entry, "attend"});
        for (auto [kernel, name] : kernels) {
          SCOPED_TRACE(name);
          check_data(bounded, c, kernel);
          EXPECT_EQ(run(kernel, bounded), run(kernel, x));
        }
      }
    }
}

TEST(Attention, NoVisibleKeyGivesZeros) {
  const Case c{DType::F16, 128, 2, 100};
  Data x = make(c, 7);
  for (int32_t& p : x.pos) p += 1000;  // every key after every query
  std::vector<float> out(2 * 128, NAN), w(2 * 100, NAN);
  const float* qs[2] = {x.q.data(), x.q.data() + 128};
  float* outs[2] = {out.data(), out.data() + 128};
  attend(qs, x.q_pos.data(), 2, x.stream(), 0.1f, outs, w.data());
  for (float f : out) ASSERT_EQ(f, 0.0f);
  for (float f : w) ASSERT_EQ(f, 0.0f);
}

// Three blocks of rows (a block's K and V rows and the next block's K rows, which the kernel
// prefetches while it reads the block's V rows) must fit a 48 KiB L1D with room to spare:
// each block at most 12 KiB, a multiple of 16 keys (the softmax's widest vector), and no
// fewer than 32 keys (less lead than the prefetch needs).
TEST(Attention, BlockKeysKeepThreeBlocksOfRowsInL1) {
  using attention_detail::block_keys;
  using attention_detail::kMaxBlock;
  EXPECT_EQ(block_keys(row_bytes(DType::F16, 128)), 48);  // Qwen3, Llama 3 8B
  EXPECT_EQ(block_keys(row_bytes(DType::F16, 64)), 64);   // Llama 3.2 1B
  EXPECT_EQ(block_keys(row_bytes(DType::Q8_0, 128)), 64);
  EXPECT_EQ(block_keys(row_bytes(DType::F32, 128)), 32);
  EXPECT_EQ(block_keys(row_bytes(DType::F16, 256)), 32);  // Gemma
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    for (int d = 32; d <= 512; d += 32) {
      const size_t row = row_bytes(t, d);
      const int keys = block_keys(row);
      EXPECT_EQ(keys % 16, 0) << d;
      EXPECT_GE(keys, 32) << d;
      EXPECT_LE(keys, kMaxBlock) << d;
      if (keys > 32) {
        EXPECT_LE(static_cast<size_t>(keys) * row, size_t{12 * 1024}) << d;
      }
      if (keys < kMaxBlock) {  // the next size up would not fit
        EXPECT_GT(static_cast<size_t>(keys + 16) * row, size_t{12 * 1024}) << d;
      }
    }
}

TEST(Attention, ChunkCount) {
  EXPECT_EQ(attention_chunks(0), 1);
  EXPECT_EQ(attention_chunks(1), 1);
  EXPECT_EQ(attention_chunks(kChunkKeys), 1);
  EXPECT_EQ(attention_chunks(kChunkKeys + 1), 2);
  EXPECT_EQ(attention_chunks(2 * kChunkKeys), 2);
  EXPECT_EQ(attention_chunks(2 * kChunkKeys + 1), 3);
  EXPECT_EQ(attention_partial_floats(3, 128), size_t{3 * 130});
}

// Every kernel's softmax state (what chunks merge by): m = the largest visible scaled score,
// l = the sum of exp(score - m) over visible keys, against double precision; a query that sees
// no key reports m = -inf, l = 0.
TEST(Attention, KernelsReportTheirSoftmaxState) {
  uint32_t seed = 40;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    for (auto [kernel, name] : cpu_kernels()) {
      const Case c{t, 64, 3, 300};
      Data x = make(c, ++seed);
      x.q_pos[2] = -1;  // sees nothing
      SCOPED_TRACE(::testing::Message() << name << " " << dtype_name(t));
      const float scale = 0.125f;
      std::vector<float> out(3 * 64), state(6, NAN);
      const float* qs[3] = {x.q.data(), x.q.data() + 64, x.q.data() + 128};
      float* outs[3] = {out.data(), out.data() + 64, out.data() + 128};
      kernel(qs, x.q_pos.data(), 3, x.stream(), scale, outs, nullptr, state.data());
      for (int j = 0; j < 2; ++j) {
        double mx = -INFINITY;
        std::vector<double> sc;
        for (int64_t i = 0; i < x.n; ++i) {
          if (!x.visible(i, j)) continue;
          double dot = 0;
          for (int e = 0; e < 64; ++e) dot += static_cast<double>(x.q[j * 64 + e]) * x.kd[i * 64 + e];
          sc.push_back(scale * dot);
          mx = std::max(mx, sc.back());
        }
        ASSERT_FALSE(sc.empty());
        double sum = 0;
        for (double v : sc) sum += std::exp(v - state[2 * j]);  // l is relative to the kernel's m
        EXPECT_NEAR(state[2 * j], mx, 1e-5 * (1 + std::fabs(mx))) << "query " << j;
        EXPECT_NEAR(state[2 * j + 1], sum, 1e-5 * sum) << "query " << j;
      }
      EXPECT_EQ(state[4], -INFINITY);
      EXPECT_EQ(state[5], 0.0f);
    }
}

// attend_chunk on every chunk, then merge_attention_chunks: what the forward pass does with
// more threads than streams; it must give attend()'s outputs bit for bit, whatever order the
// chunks ran in, and attend()'s must match the reference (a chunk entirely after every query
// is skipped without reading it).
TEST(Attention, ChunksRunApartMergeToAttendBitForBit) {
  uint32_t seed = 70;
  for (DType t : {DType::F32, DType::F16, DType::Q8_0})
    for (int64_t n : {kChunkKeys + 1, int64_t{5000}})
      for (int n_q : {1, 2, 8})
        for (bool ordered : {false, true}) {
          const Case c{t, 64, n_q, n};
          Data x = make(c, ++seed);
          if (ordered) {  // positions in stream order, every query before chunk 1
            for (int64_t i = 0; i < n; ++i) x.pos[i] = static_cast<int32_t>(i);
            for (int j = 0; j < n_q; ++j) x.q_pos[j] = static_cast<int32_t>(kChunkKeys - 1 - 50 * j);
          }
          SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n << " n_q=" << n_q << " ordered=" << ordered);
          const float scale = 0.125f;
          std::vector<const float*> qs;
          std::vector<float> want(static_cast<size_t>(n_q) * 64, NAN), got(want.size(), NAN);
          std::vector<float*> want_outs, got_outs;
          for (int j = 0; j < n_q; ++j) {
            qs.push_back(x.q.data() + j * 64);
            want_outs.push_back(want.data() + j * 64);
            got_outs.push_back(got.data() + j * 64);
          }
          attend(qs.data(), x.q_pos.data(), n_q, x.stream(), scale, want_outs.data(), nullptr);
          const int64_t chunks = attention_chunks(n);
          const size_t stride = attention_partial_floats(n_q, 64);
          std::vector<float> partials(static_cast<size_t>(chunks) * stride, NAN);
          for (int64_t c2 = chunks - 1; c2 >= 0; --c2)
            attend_chunk(qs.data(), x.q_pos.data(), n_q, x.stream(), c2, scale, partials.data() + c2 * stride);
          merge_attention_chunks(n_q, 64, chunks, partials.data(), got_outs.data());
          for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "output " << i;
          std::vector<double> rw, ro;
          for (int j = 0; j < n_q; ++j) {
            reference(x, j, scale, rw, ro);
            for (int e = 0; e < 64; ++e) ASSERT_NEAR(want[j * 64 + e], ro[e], 1e-4) << "query " << j << " dim " << e;
          }
          if (ordered) {  // the last chunk starts after every query: skipped, weight 0
            const float* st = partials.data() + (chunks - 1) * stride + static_cast<size_t>(n_q) * 64;
            for (int j = 0; j < n_q; ++j) EXPECT_EQ(st[2 * j + 1], 0.0f);
          }
        }
  std::vector<float> partial(attention_partial_floats(1, 64));
  Data x = make(Case{DType::F32, 64, 1, 100}, 3);
  const float* q = x.q.data();
  EXPECT_THROW(attend_chunk(&q, x.q_pos.data(), 1, x.stream(), 1, 0.1f, partial.data()), Error);
}

TEST(Attention, RefusesRowsThatAreNotWholeBlocks) {
  // A Q8_0 stream of head_dim 48 is not a whole number of 32-element blocks.
  std::vector<uint8_t> rows(64);
  const int32_t pos = 0;
  const AttentionStream s{DType::Q8_0, rows.data(), rows.data(), &pos, 1, 48};
  std::vector<float> q(48, 1.0f), out(48);
  const float* qp = q.data();
  float* op = out.data();
  try {
    attend(&qp, &pos, 1, s, 1.0f, &op, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim 48 is not a whole number of q8_0 blocks"), std::string::npos) << e.what();
  }
}

TEST(Attention, OneHeadWrapperMatchesGroupCall) {
  const Case c{DType::F32, 64, 1, 300};
  const Data x = make(c, 11);
  std::vector<float> scores(300), out(64), out2(64);
  attend_one_head(x.q.data(), x.stream(), x.q_pos[0], 0.125f, scores.data(), out.data());
  const float* q = x.q.data();
  float* o = out2.data();
  attend(&q, x.q_pos.data(), 1, x.stream(), 0.125f, &o, nullptr);
  EXPECT_EQ(out, out2);
  double sum = 0;
  for (float s : scores) sum += s;
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

// attend() runs the kernel the active table names for the stream's head_dim, else the
// portable one: under each ISA forced in turn, its output is that kernel's bit for bit.
TEST(Attention, AttendRunsTheActiveTablesKernel) {
  for (ops::Isa isa : ops::supported_isas()) {
    ops::testing::IsaGuard guard(isa);
    for (int d : {12, 24, 32, 64}) {  // multiples of 4 only, of 8, of 16
      SCOPED_TRACE(::testing::Message() << ops::isa_name(isa) << " d=" << d);
      const Case c{DType::F16, d, 3, 200};
      const Data x = make(c, 40 + d);
      Kernel want = attention_detail::attend_scalar;
      for (const ops::AttendKernel& k : ops::active_kernels().attend) {
        if (k.fn && d % k.head_dim_multiple == 0) {
          want = k.fn;
          break;
        }
      }
      if (isa == ops::Isa::Scalar) {
        EXPECT_EQ(want, attention_detail::attend_scalar);
      }
      std::vector<const float*> qs;
      for (int j = 0; j < c.n_q; ++j) qs.push_back(x.q.data() + j * d);
      auto run = [&](Kernel kernel) {
        std::vector<float> out(static_cast<size_t>(c.n_q) * d, NAN);
        std::vector<float*> outs;
        for (int j = 0; j < c.n_q; ++j) outs.push_back(out.data() + j * d);
        kernel(qs.data(), x.q_pos.data(), c.n_q, x.stream(), 0.125f, outs.data(), nullptr, nullptr);
        return out;
      };
      EXPECT_EQ(run(attend_entry), run(want));
    }
  }
}

}  // namespace
}  // namespace triattn
