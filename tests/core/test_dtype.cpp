#include "core/dtype.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace triattn {
namespace {

TEST(DType, BlockGeometryMatchesGgml) {
  EXPECT_EQ(row_bytes(DType::F32, 10), 40u);
  EXPECT_EQ(row_bytes(DType::F16, 10), 20u);
  EXPECT_EQ(row_bytes(DType::Q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(row_bytes(DType::Q5_K, 256), 176u);
  EXPECT_EQ(row_bytes(DType::Q6_K, 256), 210u);
  EXPECT_THROW(row_bytes(DType::Q8_0, 33), Error);
}

TEST(DType, NamesAndGgmlIdsRoundTrip) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(dtype_from_ggml(dtype_to_ggml(t)), t);
  }
  EXPECT_EQ(dtype_from_name("Q8_0"), DType::Q8_0);
  EXPECT_EQ(dtype_to_ggml(DType::Q8_0), 8u);
  EXPECT_EQ(dtype_to_ggml(DType::BF16), 30u);
  EXPECT_FALSE(dtype_from_name("q3_k").has_value());
  EXPECT_FALSE(dtype_from_ggml(11).has_value());  // Q3_K: not supported
}

TEST(DType, InterleavedLayoutIsInternal) {
  // Q8_0x4: Q8_0 rows interleaved by 4 at load time. Same bytes per row, never in a file.
  EXPECT_EQ(row_bytes(DType::Q8_0x4, 64), row_bytes(DType::Q8_0, 64));
  EXPECT_EQ(interleaved_rows(DType::Q8_0x4), 4);
  EXPECT_EQ(file_dtype(DType::Q8_0x4), DType::Q8_0);
  EXPECT_EQ(dtype_name(DType::Q8_0x4), "q8_0x4");
  EXPECT_FALSE(dtype_from_name("q8_0x4").has_value());
  EXPECT_FALSE(dtype_from_ggml(0xFFFFFFFFu).has_value());
  EXPECT_THROW(dtype_to_ggml(DType::Q8_0x4), Error);
  EXPECT_THROW(dtype_to_ggml(DType::U8), Error);  // a safetensors type (MXFP4 blocks), not a GGML one
  for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K, DType::I32}) {
    EXPECT_EQ(interleaved_rows(t), 1) << dtype_name(t);
    EXPECT_EQ(file_dtype(t), t) << dtype_name(t);
  }
}

}  // namespace
}  // namespace triattn
