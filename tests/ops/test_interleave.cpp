// The load-time repacking, Q8_0 -> Q8_0x4 or Q8_0x16, Q4_K -> Q4_Kx8 and Q4_0 -> Q4_0x8: which tensors qualify, that
// every row comes back bit for bit (the product's row reader and the reference's index
// arithmetic agree with the file's rows), range writes, and clear errors. Matmul on the
// layouts: test_matmul.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu_dispatch.h"
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
                  DType::Q4_0x8, DType::Q8_0x16})
    EXPECT_FALSE(interleaved_type(TensorView{t, {8, 256}, buf.data()})) << dtype_name(t);
  EXPECT_THROW(interleave(TensorView{DType::Q5_K, {8, 256}, buf.data()}, buf.data()), Error);
}

// Q8_0 matrices of whole groups of 16 rows take the layout of the active kernels: Q8_0x16 for
// AVX-512's row-per-lane dot products, Q8_0x4 for every other ISA; other row counts Q8_0x4.
TEST(Interleave, Q8_0TakesTheLayoutOfTheActiveKernels) {
  std::vector<uint8_t> buf(48 * 64 * 2, 0);
  for (Isa isa : supported_isas()) {
    testing::IsaGuard guard(isa);
    SCOPED_TRACE(isa_name(isa));
    const DType want = isa == Isa::Avx512 ? DType::Q8_0x16 : DType::Q8_0x4;
    EXPECT_EQ(active_kernels().q8_0_layout, want);
    EXPECT_EQ(interleaved_type(TensorView{DType::Q8_0, {16, 64}, buf.data()}), want);
    EXPECT_EQ(interleaved_type(TensorView{DType::Q8_0, {48, 64}, buf.data()}), want);
    EXPECT_EQ(interleaved_type(TensorView{DType::Q8_0, {40, 64}, buf.data()}), DType::Q8_0x4);  // 2.5 groups of 16
  }
}

// The explicit form writes any layout made from the tensor's type, whatever the ISA, and
// refuses the others by name.
TEST(Interleave, ExplicitLayoutMustBeMadeFromTheTensorsTypeWithWholeGroups) {
  std::vector<uint8_t> buf(32 * 256 * 2, 0), out(buf.size());
  const TensorView q8{DType::Q8_0, {32, 64}, buf.data()};
  EXPECT_NO_THROW(interleave(q8, DType::Q8_0x16, out.data()));
  EXPECT_NO_THROW(interleave(q8, DType::Q8_0x4, out.data()));
  EXPECT_THROW(interleave(TensorView{DType::Q8_0, {24, 64}, buf.data()}, DType::Q8_0x16, out.data()), Error);
  EXPECT_THROW(interleave(q8, DType::Q4_0x8, out.data()), Error);  // made from Q4_0
  EXPECT_THROW(interleave(q8, DType::Q8_0, out.data()), Error);    // not a layout
  try {
    interleave(TensorView{DType::Q4_K, {16, 256}, buf.data()}, DType::Q8_0x16, out.data());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be stored as q8_0x16"), std::string::npos) << e.what();
  }
}

TEST(Interleave, EveryRowReadsBackExactly) {
  struct Case {
    DType file, to;
    int64_t rows;
    std::vector<int64_t> cols;
  };
  const Case cases[] = {{DType::Q8_0, DType::Q8_0x4, 12, {32, 256, 416}},
                        {DType::Q8_0, DType::Q8_0x16, 32, {32, 256, 416}},
                        {DType::Q4_K, DType::Q4_Kx8, 24, {256, 768}},
                        {DType::Q4_0, DType::Q4_0x8, 24, {32, 416}}};
  for (const Case& c : cases)
    for (bool arbitrary : {false, true})
      for (int64_t cols : c.cols) {
        const int64_t rows = c.rows;
        const std::vector<uint8_t> qbytes = arbitrary ? testing::random_blocks(c.file, rows, cols, 7)
                                                      : testing::quantized_weights(c.file, rows, cols, 8);
        const TensorView q{c.file, {rows, cols}, qbytes.data()};
        const DType to = c.to;
        std::vector<uint8_t> xbytes(TensorView{to, {rows, cols}, nullptr}.nbytes(), 0xAB);
        interleave(q, to, xbytes.data());
        const TensorView x{to, {rows, cols}, xbytes.data()};
        // Q8_0x4 and Q8_0x16 keep Q8_0's size; Q4_Kx8 adds 4 bytes per row and block (unpacked scales).
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
  for (DType to : {DType::Q8_0x4, DType::Q8_0x16, DType::Q4_Kx8, DType::Q4_0x8}) {
    SCOPED_TRACE(dtype_name(to));
    const int group = interleaved_rows(to);
    const int64_t rows = 2 * group, cols = 256;
    const DType file = file_dtype(to);
    const std::vector<uint8_t> qbytes = testing::random_blocks(file, rows, cols, 3);
    const TensorView q{file, {rows, cols}, qbytes.data()};
    const size_t bytes = TensorView{to, {rows, cols}, nullptr}.nbytes();
    std::vector<uint8_t> whole(bytes), parts(bytes);
    interleave(q, to, whole.data());
    interleave(q, to, parts.data(), group, rows);
    interleave(q, to, parts.data(), 0, group);
    EXPECT_EQ(parts, whole);
    EXPECT_THROW(interleave(q, to, parts.data(), group / 2, group), Error);  // half a group
    EXPECT_THROW(interleave(q, to, parts.data(), 2, group), Error);          // not a group boundary
    EXPECT_THROW(interleave(q, to, parts.data(), 0, rows + group), Error);   // past the end
  }
}

TEST(Interleave, RowsOfTheLayoutsAreOnlyReadThroughTheMatrix) {
  for (DType t : {DType::Q8_0x4, DType::Q4_Kx8, DType::Q4_0x8, DType::Q8_0x16}) {  // one whole group of each
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
