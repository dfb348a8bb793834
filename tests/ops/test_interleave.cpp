// The load-time Q8_0 -> Q8_0x4 repacking: which tensors qualify, that every row comes back
// bit for bit (the product's row reader and the reference's index arithmetic agree with the
// Q8_0 rows), range writes, and clear errors. Matmul on the layout: test_matmul.cpp.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

TEST(Interleave, OnlyQ8_0MatricesWithWholeGroupsQualify) {
  std::vector<uint8_t> buf(8 * 64 * 4, 0);
  EXPECT_EQ(interleaved_type(TensorView{DType::Q8_0, {8, 64}, buf.data()}), DType::Q8_0x4);
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {6, 64}, buf.data()}));  // 6 rows
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {512}, buf.data()}));    // a vector
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {8, 64}, nullptr}));     // no data
  for (DType t : {DType::F32, DType::F16, DType::Q4_0, DType::Q4_K, DType::Q8_0x4})
    EXPECT_FALSE(interleaved_type(TensorView{t, {8, 256}, buf.data()})) << dtype_name(t);
  EXPECT_THROW(interleave(TensorView{DType::Q4_0, {8, 64}, buf.data()}, buf.data()), Error);
}

TEST(Interleave, EveryRowReadsBackExactly) {
  for (bool arbitrary : {false, true})
    for (int64_t cols : {32, 256, 416}) {
      const int64_t rows = 12;
      const std::vector<uint8_t> qbytes = arbitrary ? testing::random_blocks(DType::Q8_0, rows, cols, 7)
                                                    : testing::quantized_weights(DType::Q8_0, rows, cols, 8);
      const TensorView q{DType::Q8_0, {rows, cols}, qbytes.data()};
      std::vector<uint8_t> xbytes(q.nbytes(), 0xAB);
      interleave(q, xbytes.data());
      const TensorView x{DType::Q8_0x4, {rows, cols}, xbytes.data()};
      EXPECT_EQ(x.nbytes(), q.nbytes());
      std::vector<float> want(static_cast<size_t>(cols)), got(want.size());
      for (int64_t r = 0; r < rows; ++r) {
        SCOPED_TRACE(::testing::Message() << "row " << r << " cols " << cols);
        dequantize_row(DType::Q8_0, q.row(r), want.data(), cols);
        dequantize_matrix_row(x, r, got.data());
        ASSERT_EQ(got, want);
        for (int64_t i = 0; i < cols; ++i) ASSERT_EQ(ref::matrix_element(x, r, i), want[i]) << "element " << i;
        dequantize_matrix_row(q, r, got.data());  // file types read through the same entry point
        ASSERT_EQ(got, want);
      }
    }
}

TEST(Interleave, RangesWrittenSeparatelyEqualTheWhole) {
  const int64_t rows = 16, cols = 96;
  const std::vector<uint8_t> qbytes = testing::random_blocks(DType::Q8_0, rows, cols, 3);
  const TensorView q{DType::Q8_0, {rows, cols}, qbytes.data()};
  std::vector<uint8_t> whole(q.nbytes()), parts(q.nbytes());
  interleave(q, whole.data());
  interleave(q, parts.data(), 8, 16);
  interleave(q, parts.data(), 0, 8);
  EXPECT_EQ(parts, whole);
  EXPECT_THROW(interleave(q, parts.data(), 2, 8), Error);   // not a group boundary
  EXPECT_THROW(interleave(q, parts.data(), 0, 20), Error);  // past the end
}

TEST(Interleave, RowsOfTheLayoutAreOnlyReadThroughTheMatrix) {
  std::vector<uint8_t> buf(4 * 34, 0);
  std::vector<float> out(32);
  const TensorView x{DType::Q8_0x4, {4, 32}, buf.data()};
  EXPECT_THROW(dequantize_row(DType::Q8_0x4, buf.data(), out.data(), 32), Error);
  EXPECT_THROW(quantize_row(DType::Q8_0x4, out.data(), buf.data(), 32), Error);
  EXPECT_THROW(dequantize_matrix_row(x, 4, out.data()), Error);  // no row 4
  EXPECT_NO_THROW(dequantize_matrix_row(x, 3, out.data()));
}

}  // namespace
}  // namespace triattn::ops
