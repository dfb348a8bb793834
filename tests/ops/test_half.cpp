// core/half.h: f16 and bf16 conversions at their edges (zero signs, subnormals, overflow,
// inf/NaN, ties to even), every f16 value round-tripped, and the scalar f16 code checked
// against the CPU's F16C instructions (what the SIMD kernels use) where present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace triattn {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
[[maybe_unused]] uint32_t bits_of(float f) {  // used by the x86 F16C comparison only
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(F16, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(f32_to_f16(inf), 0x7c00);
  EXPECT_EQ(f32_to_f16(-inf), 0xfc00);
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7c01)));  // signalling-style payloads stay NaN
  EXPECT_EQ(f16_to_f32(0x7c00), inf);
  EXPECT_EQ(f16_to_f32(0xfc00), -inf);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
}

TEST(F16, OverflowAndRounding) {
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);  // below the midpoint to 65536: stays finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);   // the midpoint rounds to even = inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  // Ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // A carry out of the mantissa bumps the exponent: 2 - 2^-12 rounds to 2.
  EXPECT_EQ(f32_to_f16(2.0f - std::ldexp(1.0f, -12)), 0x4000);
}

TEST(F16, Subnormals) {
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));         // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));         // smallest normal
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // halfway to 2^-24: ties to even 0
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: ties to even 2
  EXPECT_EQ(f32_to_f16(std::ldexp(5.0f, -25)), 0x0002);  // 2.5 units: ties to even 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f32_to_f16(1023.5f * std::ldexp(1.0f, -24)), 0x0400);  // rounds up into normal
}

TEST(F16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), h) << "f16 0x" << std::hex << h;
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hw_f32_to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

TEST(F16, MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C";
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float sw = f16_to_f32(static_cast<uint16_t>(h)),
                hw = hw_f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(sw));
      continue;
    }
    ASSERT_EQ(bits_of(sw), bits_of(hw)) << h;
  }
  // Random f32 bit patterns weighted to the f16 range, plus every exponent near its edges.
  std::mt19937 rng(42);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t b = rng();
    if (i % 2) b = (b & 0x807fffff) | ((96 + rng() % 50) << 23);  // exponents 2^-31..2^18
    const float f = from_bits(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), hw_f32_to_f16(f)) << "f32 bits 0x" << std::hex << b;
  }
}
#endif

TEST(BF16, ConversionsAndRounding) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-inf), 0xff80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000)), 0x3f80);    // tie, even stays
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000)), 0x3f82);    // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001)), 0x3f81);    // above the tie
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);    // max float rounds to inf
  EXPECT_EQ(f32_to_bf16(from_bits(0x00010000)), 0x0001);    // subnormals keep their top bits
  const uint16_t nan = f32_to_bf16(from_bits(0x7f800001));  // NaN whose payload is all low bits
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  EXPECT_EQ(bf16_to_f32(0x4049), from_bits(0x40490000));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h);
  }
}

}  // namespace
}  // namespace triattn
