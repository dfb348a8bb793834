// The load-time repacking, Q8_0 -> Q8_0x4, Q4_K -> Q4_Kx8 and Q4_0 -> Q4_0x8: which tensors qualify, that
// every row comes back bit for bit (the product's row reader and the reference's index
// arithmetic agree with the file's rows), range writes, and clear errors. Matmul on the
// layouts: test_matmul.cpp.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

TEST(Interleave, OnlyQ8_0Q4_KAndQ4_0MatricesWithWholeGroupsQualify) {
  std::vector<uint8_t> buf(8 * 64 * 4, 0);
  EXPECT_EQ(interleaved_type(TensorView{DType::Q8_0, {8, 64}, buf.data()}), DType::Q8_0x4);
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {6, 64}, buf.data()}));  // 6 rows
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {512}, buf.data()}));    // a vector
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q8_0, {8, 64}, nullptr}));     // no data
  EXPECT_EQ(interleaved_type(TensorView{DType::Q4_K, {8, 256}, buf.data()}), DType::Q4_Kx8);
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q4_K, {4, 256}, buf.data()}));  // groups are 8
  EXPECT_EQ(interleaved_type(TensorView{DType::Q4_0, {16, 64}, buf.data()}), DType::Q4_0x8);
  EXPECT_FALSE(interleaved_type(TensorView{DType::Q4_0, {12, 64}, buf.data()}));  // groups are 8
  for (DType t : {DType::F32, DType::F16, DType::Q5_K, DType::Q6_K, DType::MXFP4, DType::Q8_0x4, DType::Q4_Kx8,
                  DType::Q4_0x8})
    EXPECT_FALSE(interleaved_type(TensorView{t, {8, 256}, buf.data()})) << dtype_name(t);
  EXPECT_THROW(interleave(TensorView{DType::Q5_K, {8, 256}, buf.data()}, buf.data()), Error);
}

TEST(Interleave, EveryRowReadsBackExactly) {
  struct Case {
    DType file;
    int64_t rows;
    std::vector<int64_t> cols;
  };
  const Case cases[] = {{DType::Q8_0, 12, {32, 256, 416}}, {DType::Q4_K, 24, {256, 768}}, {DType::Q4_0, 24, {32, 416}}};
  for (const Case& c : cases)
    for (bool arbitrary : {false, true})
      for (int64_t cols : c.cols) {
        const int64_t rows = c.rows;
        const std::vector<uint8_t> qbytes = arbitrary ? testing::random_blocks(c.file, rows, cols, 7)
                                                      : testing::quantized_weights(c.file, rows, cols, 8);
        const TensorView q{c.file, {rows, cols}, qbytes.data()};
        const DType to = *interleaved_type(q);
        std::vector<uint8_t> xbytes(TensorView{to, {rows, cols}, nullptr}.nbytes(), 0xAB);
        interleave(q, xbytes.data());
        const TensorView x{to, {rows, cols}, xbytes.data()};
        // Q8_0x4 keeps Q8_0's size; Q4_Kx8 adds 4 bytes per row and block (unpacked scales).
        EXPECT_EQ(x.nbytes(), q.nbytes() + (to == DType::Q4_Kx8 ? 4 * rows * (cols / 256) : 0));
        std::vector<float> want(static_cast<size_t>(cols)), got(want.size());
        for (int64_t r = 0; r < rows; ++r) {
          SCOPED_TRACE(::testing::Message() << dtype_name(to) << " row " << r << " cols " << cols);
          dequantize_row(c.file, q.row(r), want.data(), cols);
          dequantize_matrix_row(x, r, got.data());
          ASSERT_EQ(got, want);
          for (int64_t i = 0; i < cols; ++i) ASSERT_EQ(ref::matrix_element(x, r, i), want[i]) << "element " << i;
          dequantize_matrix_row(q, r, got.data());  // file types read through the same entry point
          ASSERT_EQ(got, want);
        }
      }
}

TEST(Interleave, RangesWrittenSeparatelyEqualTheWhole) {
  for (DType file : {DType::Q8_0, DType::Q4_K, DType::Q4_0}) {
    SCOPED_TRACE(dtype_name(file));
    const int64_t rows = 16, cols = 256;
    const std::vector<uint8_t> qbytes = testing::random_blocks(file, rows, cols, 3);
    const TensorView q{file, {rows, cols}, qbytes.data()};
    const size_t bytes = TensorView{*interleaved_type(q), {rows, cols}, nullptr}.nbytes();
    std::vector<uint8_t> whole(bytes), parts(bytes);
    interleave(q, whole.data());
    interleave(q, parts.data(), 8, 16);
    interleave(q, parts.data(), 0, 8);
    EXPECT_EQ(parts, whole);
    if (file != DType::Q8_0) {
      EXPECT_THROW(interleave(q, parts.data(), 4, 8), Error);  // half a group of 8
    }
    EXPECT_THROW(interleave(q, parts.data(), 2, 8), Error);   // not a group boundary
    EXPECT_THROW(interleave(q, parts.data(), 0, 24), Error);  // past the end
  }
}

TEST(Interleave, RowsOfTheLayoutsAreOnlyReadThroughTheMatrix) {
  for (DType t : {DType::Q8_0x4, DType::Q4_Kx8, DType::Q4_0x8}) {  // one whole group of each
    SCOPED_TRACE(dtype_name(t));
    const int64_t rows = interleaved_rows(t), cols = block_size(t);
    std::vector<uint8_t> buf(rows * block_bytes(t), 0);
    std::vector<float> out(static_cast<size_t>(cols));
    const TensorView x{t, {rows, cols}, buf.data()};
    EXPECT_THROW(dequantize_row(t, buf.data(), out.data(), cols), Error);
    EXPECT_THROW(quantize_row(t, out.data(), buf.data(), cols), Error);
    EXPECT_THROW(dequantize_matrix_row(x, rows, out.data()), Error);  // one past the group
    EXPECT_NO_THROW(dequantize_matrix_row(x, rows - 1, out.data()));
  }
}

}  // namespace
}  // namespace triattn::ops
