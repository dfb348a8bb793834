// require_finite / first_non_finite (src/formats/model_limits.h): a non-finite weight is
// found in every scanned type and named with the file and the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "formats/model_limits.h"

using namespace triattn;

TEST(ModelLimits, FindsNonFiniteF32F16Bf16) {
  std::vector<float> f(10, 1.0f);
  TensorView v{DType::F32, {2, 5}, f.data()};
  EXPECT_FALSE(first_non_finite(v));
  f[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(first_non_finite(v), 7);
  f[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(first_non_finite(v), 3);

  std::vector<uint16_t> h(8, f32_to_f16(0.5f));
  TensorView vh{DType::F16, {8}, h.data()};
  EXPECT_FALSE(first_non_finite(vh));
  h[5] = 0x7c00;  // +Inf
  EXPECT_EQ(first_non_finite(vh), 5);

  std::vector<uint16_t> b(8, f32_to_bf16(-2.0f));
  TensorView vb{DType::BF16, {8}, b.data()};
  EXPECT_FALSE(first_non_finite(vb));
  b[6] = 0x7fc0;  // NaN
  EXPECT_EQ(first_non_finite(vb), 6);
}

TEST(ModelLimits, FindsANonFiniteQ8_0Scale) {
  std::vector<uint8_t> q(3 * 34, 1);  // 3 blocks of 32 values: f16 scale + 32 int8
  for (int blk = 0; blk < 3; ++blk) {
    const uint16_t s = f32_to_f16(0.25f);
    std::memcpy(q.data() + 34 * blk, &s, 2);
  }
  TensorView v{DType::Q8_0, {1, 96}, q.data()};
  EXPECT_FALSE(first_non_finite(v));
  const uint16_t nan = 0x7e00;
  std::memcpy(q.data() + 34 * 2, &nan, 2);
  EXPECT_EQ(first_non_finite(v), 2);
}

TEST(ModelLimits, RequireFiniteNamesTheFileAndTheTensor) {
  std::vector<float> f(4, 0.0f);
  f[1] = std::numeric_limits<float>::infinity();
  TensorView v{DType::F32, {4}, f.data()};
  try {
    require_finite(v, "model.gguf", "output_norm.weight");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("model.gguf"), std::string::npos) << m;
    EXPECT_NE(m.find("output_norm.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("element 1"), std::string::npos) << m;
  }
  f[1] = 1.0f;
  EXPECT_NO_THROW(require_finite(v, "model.gguf", "output_norm.weight"));
}
