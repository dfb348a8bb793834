// dot, axpy, rmsnorm, softmax and swiglu on every ISA against the double reference, with
// lengths that leave SIMD tails and inputs at the edges (masked -inf, large magnitudes).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;
using testing::random_floats;

const int64_t kLengths[] = {0, 1, 3, 8, 15, 33, 100, 1031};

TEST(Vec, DotAndAxpy) {
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : kLengths) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " n " << n);
      const std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(a[i] * b[i]);
      EXPECT_NEAR(dot_f32(a.data(), b.data(), n), ref::dot(a.data(), b.data(), n),
                  1e-6 * mag + 1e-30);

      std::vector<float> y = random_floats(n, 3), y_ref = y;
      axpy_f32(-0.75f, a.data(), y.data(), n);
      ref::axpy(-0.75f, a.data(), y_ref.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[i], y_ref[i], 1e-6f * (std::fabs(y_ref[i]) + 1));
    }
  }
}

TEST(Vec, RmsnormInPlaceAndOutOfPlace) {
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : {1, 7, 64, 1031}) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " n " << n);
      const std::vector<float> x = random_floats(n, 4, 30.0f), w = random_floats(n, 5);
      std::vector<float> y(n), expect(n);
      rmsnorm(x.data(), w.data(), y.data(), n, 1e-6f);
      ref::rmsnorm(x.data(), w.data(), expect.data(), n, 1e-6f);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[i], expect[i], 2e-6f * (std::fabs(expect[i]) + 1e-3f));
      std::vector<float> inplace = x;
      rmsnorm(inplace.data(), w.data(), inplace.data(), n, 1e-6f);
      EXPECT_EQ(inplace, y);
    }
    // eps matters for an all-zero input: output zero, not NaN.
    std::vector<float> z(16, 0.0f), w(16, 1.0f), y(16, 5.0f);
    rmsnorm(z.data(), w.data(), y.data(), 16, 1e-5f);
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Vec, SoftmaxStableAndNormalised) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : {1, 5, 8, 33, 1031}) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " n " << n);
      std::vector<float> x = random_floats(n, 6, 8.0f);
      x[0] += 1000.0f;                          // would overflow exp without the max shift
      if (n > 4) x[3] = -inf, x[n - 1] = -inf;  // masked positions
      std::vector<float> expect = x;
      softmax(x.data(), n);
      ref::softmax(expect.data(), n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(x[i], expect[i], 1e-6f * expect[i] + 1e-30f) << i;
        sum += x[i];
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
      if (n > 4) {
        EXPECT_EQ(x[3], 0.0f);
      }
    }
    // A full range of exponents, compared element-wise: the SIMD exp stays near 1 ulp.
    std::vector<float> x(200), expect(200);
    for (int i = 0; i < 200; ++i) x[i] = -100.0f + static_cast<float>(i) * 0.5f;
    expect = x;
    softmax(x.data(), 200);
    ref::softmax(expect.data(), 200);
    for (int i = 0; i < 200; ++i) ASSERT_NEAR(x[i], expect[i], 1e-6f * expect[i] + 1e-37f) << i;
  }
}

TEST(Vec, Swiglu) {
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int64_t n : {1, 9, 64, 1031}) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " n " << n);
      std::vector<float> g = random_floats(n, 7, 4.0f), u = random_floats(n, 8);
      g[0] = -120.0f;  // exp(120) overflows f32: silu must still be ~0, not NaN
      if (n > 1) g[1] = 95.0f;
      std::vector<float> out(n), expect(n);
      swiglu(g.data(), u.data(), out.data(), n);
      ref::swiglu(g.data(), u.data(), expect.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(out[i], expect[i], 2e-6f * std::fabs(expect[i]) + 1e-30f) << i;
      swiglu(g.data(), u.data(), g.data(), n);  // out aliases gate
      EXPECT_EQ(g, out);
    }
  }
}

TEST(Vec, RopeMatchesReferenceOnEveryIsa) {
  // head_dim 128 and 64 (vector loop only), 20 (8 + tail of 2), 12 and 2 (tail only).
  for (int d : {128, 64, 20, 12, 2}) {
    const int heads = 3, half = d / 2;
    std::vector<double> angles(half);
    std::vector<float> cs(half), sn(half);
    for (int f = 0; f < half; ++f) {
      angles[f] = 4097.0 * std::pow(10000.0, -2.0 * f / d);  // position 4097, theta 1e4
      cs[f] = static_cast<float>(std::cos(angles[f]));
      sn[f] = static_cast<float>(std::sin(angles[f]));
    }
    const std::vector<float> x = random_floats(heads * d, 21, 3.0f);
    std::vector<float> expect = x;
    ref::rope(expect.data(), heads, d, angles.data());
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " head_dim " << d);
      IsaGuard guard(isa);
      std::vector<float> y = x;
      rope(y.data(), heads, d, cs.data(), sn.data());
      for (size_t i = 0; i < y.size(); ++i) {
        // cos/sin rounded to float and two float products: a few ulps of the band's length
        ASSERT_NEAR(y[i], expect[i], 4e-7f * 3.0f * 2) << "element " << i;
      }
      // A rotation keeps each band's length.
      for (int f = 0; f < half; ++f)
        EXPECT_NEAR(std::hypot(y[f], y[f + half]), std::hypot(x[f], x[f + half]), 1e-5f);
    }
  }
}

}  // namespace
}  // namespace triattn::ops
