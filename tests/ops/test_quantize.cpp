// quantize_row / dequantize_row for every type: layouts checked on hand-built blocks, the
// fast dequantizer against the per-element reference on arbitrary blocks, and round-trip
// error within each format's stated bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/half.h"
#include "ops/act_quant.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;
using testing::random_blocks;
using testing::random_floats;
using testing::weight_types;

TEST(BlockLayout, SizesMatchDtypeTable) {
  EXPECT_EQ(sizeof(BlockQ8_0), block_bytes(DType::Q8_0));
  EXPECT_EQ(sizeof(BlockQ4_0), block_bytes(DType::Q4_0));
  EXPECT_EQ(sizeof(BlockQ4_K), block_bytes(DType::Q4_K));
  EXPECT_EQ(sizeof(BlockQ5_K), block_bytes(DType::Q5_K));
  EXPECT_EQ(sizeof(BlockQ6_K), block_bytes(DType::Q6_K));
  EXPECT_EQ(block_size(DType::Q4_0), kQK);
  EXPECT_EQ(block_size(DType::Q6_K), kQKK);
}

TEST(BlockLayout, Q8_0HandBuilt) {
  BlockQ8_0 b{};
  b.d = f32_to_f16(0.5f);
  b.qs[3] = -128;
  b.qs[31] = 127;
  float y[32];
  dequantize_row(DType::Q8_0, &b, y, 32);
  EXPECT_EQ(y[3], -64.0f);
  EXPECT_EQ(y[31], 63.5f);
  EXPECT_EQ(y[0], 0.0f);
}

TEST(BlockLayout, Q4_0HandBuilt) {
  BlockQ4_0 b{};
  b.d = f32_to_f16(2.0f);
  b.qs[0] = 0x1F;   // element 0 = 15 - 8, element 16 = 1 - 8
  b.qs[15] = 0x80;  // element 15 = 0 - 8, element 31 = 8 - 8
  float y[32];
  dequantize_row(DType::Q4_0, &b, y, 32);
  EXPECT_EQ(y[0], 14.0f);
  EXPECT_EQ(y[16], -14.0f);
  EXPECT_EQ(y[15], -16.0f);
  EXPECT_EQ(y[31], 0.0f);
  EXPECT_EQ(y[1], -16.0f);  // nibble 0
}

TEST(BlockLayout, Q4_KHandBuilt) {
  BlockQ4_K b{};
  b.d = f32_to_f16(1.0f);
  b.dmin = f32_to_f16(0.5f);
  // Sub-block 1: scale in scales[1] & 63, min in scales[5] & 63.
  b.scales[1] = 0xC0 | 3;   // sc1 = 3; top bits (3) are bits 4-5 of sc5
  b.scales[5] = 0x40 | 10;  // m1 = 10; top bits (1) are bits 4-5 of m5
  b.scales[9] = 0x27;       // sc5 low = 7, m5 low = 2
  b.qs[0] = 0x50;           // element 0 (sub 0) = 0, element 32 (sub 1) = 5
  b.qs[32 * 2 + 4] = 0x90;  // chunk 2: element 128+4 (sub 4) = 0, element 160+4 (sub 5) = 9
  float y[256];
  dequantize_row(DType::Q4_K, &b, y, 256);
  EXPECT_EQ(y[32], 1.0f * 3 * 5 - 0.5f * 10);
  const float sc5 = 7 | (3 << 4), m5 = 2 | (1 << 4);
  EXPECT_EQ(y[164], 1.0f * sc5 * 9 - 0.5f * m5);
  EXPECT_EQ(y[0], 0.0f);  // sub 0: scale 0, min 0
}

TEST(BlockLayout, Q5_KHighBits) {
  BlockQ5_K b{};
  b.d = f32_to_f16(1.0f);
  b.dmin = f32_to_f16(0.0f);
  for (int j = 0; j < 4; ++j) b.scales[j] = 1;   // sc0..3 = 1
  for (int j = 8; j < 12; ++j) b.scales[j] = 1;  // sc4..7 low bits = 1
  b.qh[7] = 1 << 5;         // sub-block 5 (chunk 2, high nibbles), element 160 + 7
  b.qs[32 * 2 + 7] = 0x30;  // its low 4 bits = 3
  b.qh[2] = 1 << 0;         // sub-block 0, element 2
  float y[256];
  dequantize_row(DType::Q5_K, &b, y, 256);
  EXPECT_EQ(y[167], 19.0f);
  EXPECT_EQ(y[2], 16.0f);
  EXPECT_EQ(y[135], 0.0f);  // low nibble of the same byte, sub-block 4
}

TEST(BlockLayout, Q6_KHandBuilt) {
  BlockQ6_K b{};
  b.d = f32_to_f16(0.25f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s - 8);
  b.ql[0] = 0x5A;            // element 0 low 4 = 10, element 64 low 4 = 5
  b.ql[32 + 17] = 0x3C;      // element 32+17 low = 12, element 96+17 low = 3
  b.qh[0] = 0b10'00'00'01;   // element 0 hi = 1; element 96 hi = 2
  b.qh[17] = 0b11'00'10'00;  // element 49 hi = 2, element 113 hi = 3
  b.ql[64 + 1] = 0x07;       // second half: element 128+1 low = 7
  b.ql[32] = 0x90;           // element 32 low = 0, element 96 low = 9
  float y[256];
  dequantize_row(DType::Q6_K, &b, y, 256);
  EXPECT_EQ(y[0], 0.25f * (0 - 8) * ((10 | 1 << 4) - 32));
  EXPECT_EQ(y[64], 0.25f * (4 - 8) * (5 - 32));
  EXPECT_EQ(y[49], 0.25f * (3 - 8) * ((12 | 2 << 4) - 32));
  EXPECT_EQ(y[113], 0.25f * (7 - 8) * ((3 | 3 << 4) - 32));
  EXPECT_EQ(y[129], 0.25f * (8 - 8) * (7 - 32));
  EXPECT_EQ(y[96], 0.25f * (6 - 8) * ((9 | 2 << 4) - 32));  // qh[0] bits 6-7 belong to 96
  EXPECT_EQ(y[32], 0.25f * (2 - 8) * (0 - 32));
}

TEST(Dequantize, MatchesReferenceOnArbitraryBlocks) {
  for (DType t : weight_types()) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t cols = 512, rows = 3;
    const std::vector<uint8_t> w = random_blocks(t, rows, cols, 7);
    std::vector<float> fast(cols), slow(cols);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* row = w.data() + r * row_bytes(t, cols);
      dequantize_row(t, row, fast.data(), cols);
      ref::dequantize_row(t, row, slow.data(), cols);
      for (int64_t i = 0; i < cols; ++i)
        ASSERT_EQ(fast[i], slow[i]) << "row " << r << " element " << i;
    }
  }
}

TEST(Dequantize, RejectsPartialBlocks) {
  std::vector<uint8_t> buf(1024);
  std::vector<float> f(64);
  EXPECT_THROW(dequantize_row(DType::Q8_0, buf.data(), f.data(), 33), Error);
  EXPECT_THROW(quantize_row(DType::Q4_K, f.data(), buf.data(), 64), Error);
  EXPECT_THROW(quantize_row(DType::I32, f.data(), buf.data(), 4), Error);
}

// Input with varied magnitudes per block, an all-zero block and a lone outlier.
std::vector<float> round_trip_input(int64_t n) {
  std::vector<float> x = random_floats(static_cast<size_t>(n), 11);
  for (int64_t i = 0; i < n; ++i) x[i] *= std::pow(10.0f, static_cast<float>((i / 256) % 4) - 2);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  x[777] = 40.0f;
  return x;
}

float amax_of(const float* x, int64_t n) {
  float a = 0;
  for (int64_t i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

// Per element error bound of each format's quantizer (see quantize.cpp's header).
float error_bound(DType t, const float* x, const uint8_t* q, int64_t i) {
  switch (t) {
    case DType::F32:
      return 0;
    case DType::F16:
      return std::fabs(x[i]) * std::ldexp(1.0f, -11) + std::ldexp(1.0f, -25);
    case DType::BF16:
      return std::fabs(x[i]) * std::ldexp(1.0f, -8);
    case DType::Q8_0:  // d/2 plus up to 127 times the f16 rounding of d
      return 0.57f * amax_of(x + i / 32 * 32, 32) / 127.0f;
    case DType::Q4_0:  // the extreme opposite the max clips by one step
      return 1.01f * amax_of(x + i / 32 * 32, 32) / 8.0f;
    case DType::Q4_K:
    case DType::Q5_K: {
      const auto* b = q + (i / 256) * block_bytes(t);
      uint16_t d;
      std::memcpy(&d, b, 2);
      uint8_t sc, m;
      unpack_scale_min_k4(static_cast<int>(i % 256) / 32, b + 4, &sc, &m);
      return 0.5f * f16_to_f32(d) * sc * 1.001f +
             amax_of(x + i / 256 * 256, 256) * std::ldexp(1.0f, -9);
    }
    case DType::Q6_K: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(q) + i / 256;
      return 0.5f * f16_to_f32(b->d) * std::abs(b->scales[(i % 256) / 16]) * 1.001f +
             amax_of(x + i / 256 * 256, 256) * std::ldexp(1.0f, -9);
    }
    case DType::MXFP4:  // tests/ops/test_mxfp4.cpp checks its bound
    case DType::I32:
    case DType::U8:
    case DType::Q8_0x4:  // not quantizer targets (interleaved from Q8_0 / Q4_K / Q4_0)
    case DType::Q4_Kx8:
    case DType::Q4_0x8:
    case DType::Q8_0x16:
      break;
  }
  return 0;
}

TEST(QuantizeRoundTrip, ErrorWithinBoundPerType) {
  const int64_t n = 2048;
  const std::vector<float> x = round_trip_input(n);
  for (DType t : weight_types()) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<uint8_t> q(row_bytes(t, n));
    std::vector<float> y(n);
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(y[i] - x[i]), error_bound(t, x.data(), q.data(), i)) << "element " << i;
    for (int64_t i = 256; i < 512; ++i) ASSERT_EQ(y[i], 0.0f) << "zero block element " << i;
  }
}

TEST(QuantizeRoundTrip, RmsErrorOnNormalData) {
  // Relative RMS error ceilings (measured on this data, plus ~25%): they catch a quantizer
  // that stays within its bound only by choosing needlessly coarse steps.
  const std::pair<DType, double> ceilings[] = {
      {DType::F32, 0.0},    {DType::F16, 2.7e-4}, {DType::BF16, 2.1e-3}, {DType::Q8_0, 0.0067},
      {DType::Q4_0, 0.107}, {DType::Q4_K, 0.10},  {DType::Q5_K, 0.049},  {DType::Q6_K, 0.025}};
  const int64_t n = 256 * 64;
  const std::vector<float> x = random_floats(static_cast<size_t>(n), 5);
  for (auto [t, ceiling] : ceilings) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<uint8_t> q(row_bytes(t, n));
    std::vector<float> y(n);
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      err2 += (y[i] - x[i]) * static_cast<double>(y[i] - x[i]);
      ref2 += static_cast<double>(x[i]) * x[i];
    }
    EXPECT_LE(std::sqrt(err2 / ref2), ceiling);
  }
}

TEST(ActivationQuant, Q8BlocksAndSums) {
  // Every ISA: error within half a step, exact sums, d = amax/127, and the same bits as the
  // scalar table (so the ISA never changes a matmul's result). Block 3 is all zeros and
  // block 5 holds exact half steps, where the rounding (ties to even) must agree.
  std::vector<float> x = random_floats(512, 3, 2.0f);
  std::fill(x.begin() + 96, x.begin() + 128, 0.0f);
  for (int i = 0; i < 32; ++i) x[160 + i] = (i == 0) ? 127.0f : static_cast<float>(i % 9) - 3.5f;
  std::vector<ActQ8> scalar8(16);
  std::vector<ActQ8K> scalar8k(2);
  {
    IsaGuard guard(Isa::Scalar);
    quantize_act_q8(x.data(), scalar8.data(), 512);
    quantize_act_q8k(x.data(), scalar8k.data(), 512);
  }
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    IsaGuard guard(isa);
    std::vector<ActQ8> a(512 / 32);
    quantize_act_q8(x.data(), a.data(), 512);
    for (int b = 0; b < 16; ++b) {
      int sum = 0;
      for (int i = 0; i < 32; ++i) {
        EXPECT_LE(std::fabs(a[b].qs[i] * a[b].d - x[32 * b + i]), a[b].d * 0.5f * 1.0001f);
        sum += a[b].qs[i];
        ASSERT_EQ(a[b].qs[i], scalar8[b].qs[i]) << "block " << b << " element " << i;
      }
      EXPECT_EQ(a[b].sum, sum);
      EXPECT_EQ(a[b].sum, scalar8[b].sum);
      EXPECT_FLOAT_EQ(a[b].d, amax_of(x.data() + 32 * b, 32) / 127.0f);
      EXPECT_EQ(a[b].d, scalar8[b].d);
    }
    EXPECT_EQ(a[3].d, 0.0f);
    EXPECT_EQ(a[5].qs[1], -2);  // -2.5 -> -2 (ties to even)
    std::vector<ActQ8K> k(2);
    quantize_act_q8k(x.data(), k.data(), 512);
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(k[b].d, scalar8k[b].d);
      for (int s = 0; s < 16; ++s) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) {
          const int e = 16 * s + i;
          EXPECT_LE(std::fabs(k[b].qs[e] * k[b].d - x[256 * b + e]), k[b].d * 0.5f * 1.0001f);
          sum += k[b].qs[e];
          ASSERT_EQ(k[b].qs[e], scalar8k[b].qs[e]) << "super-block " << b << " element " << e;
        }
        EXPECT_EQ(k[b].bsums[s], sum);
      }
    }
  }
}

TEST(Q8_0Row, EveryIsaQuantizesLikeQuantizeRow) {
  // Random blocks, a zero block, blocks whose values sit exactly on and next to the rounding
  // ties (k + 0.5 steps and the floats either side of them), and one with a single nonzero value.
  std::vector<float> x = random_floats(32 * 12, 21, 3.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  for (int i = 0; i < 32; ++i) {  // amax 127 steps of 1: x * (1/d) lands on k + 0.5
    const float tie = static_cast<float>(i - 16) + 0.5f;
    x[64 + i] = tie;
    x[96 + i] = std::nextafter(tie, 0.0f);
    x[128 + i] = std::nextafter(tie, 100.0f);
  }
  x[64] = x[96] = x[128] = 127.0f;
  std::fill(x.begin() + 160, x.begin() + 192, 0.0f);
  x[170] = -1e-30f;
  std::vector<uint8_t> want(row_bytes(DType::Q8_0, static_cast<int64_t>(x.size())));
  quantize_row(DType::Q8_0, x.data(), want.data(), static_cast<int64_t>(x.size()));
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    std::vector<uint8_t> got(want.size(), 0xAA);
    f32_to_q8_0_row(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " byte " << i << " (block " << i / 34 << ")";
  }
  std::vector<uint8_t> out(want.size());
  EXPECT_THROW(f32_to_q8_0_row(x.data(), out.data(), 48), Error);
}

TEST(HalfRow, EveryIsaRoundsLikeTheScalarConversion) {
  // Normal values, ties, subnormals, overflow to inf, both zeros, infinities; 37 values so the
  // SIMD loop leaves a tail.
  std::vector<float> x = random_floats(37, 11, 70000.0f);
  const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 1e-8f, -3e-5f,
                            6.1e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, INFINITY, -INFINITY};
  std::copy(std::begin(specials), std::end(specials), x.begin());
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    std::vector<uint16_t> h(x.size());
    f32_to_f16_row(x.data(), h.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(h[i], f32_to_f16(x[i])) << isa_name(isa) << " value " << x[i];
  }
}

}  // namespace
}  // namespace triattn::ops
