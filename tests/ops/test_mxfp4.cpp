// MXFP4 (gpt-oss experts): the block format against its published definition, quantization
// bounds, the HF <-> GGML layout conversion, and the matmul kernels of every ISA and thread
// count against the double-precision reference (tolerance: the activation-quantization bound
// sum_i |w_i| * d_x(i) / 2 plus float slack, as for the other integer kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "ops/mxfp4_layout.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;

// E2M1 as the OCP spec tabulates it (and llama.cpp's kvalues_mxfp4 / 2).
constexpr float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

TEST(Mxfp4, BlockDecodesAsTheSpecSays) {
  for (int e : {0, 1, 2, 100, 127, 128, 131, 200, 254}) {
    BlockMxfp4 b{};
    b.e = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    std::vector<float> fast(32), slow(32);
    dequantize_row(DType::MXFP4, &b, fast.data(), 32);
    ref::dequantize_row(DType::MXFP4, &b, slow.data(), 32);
    for (int i = 0; i < 32; ++i) {
      const int code = i < 16 ? i : 15 - (i - 16);  // element j low nibble, j + 16 high
      const double want = kE2M1[code] * std::ldexp(1.0, e - 127);
      EXPECT_EQ(slow[i], static_cast<float>(want)) << "e " << e << " element " << i;
      EXPECT_EQ(fast[i], slow[i]) << "e " << e << " element " << i;
    }
  }
  EXPECT_EQ(row_bytes(DType::MXFP4, 64), 34u);
  EXPECT_EQ(dtype_to_ggml(DType::MXFP4), 39u);
  EXPECT_EQ(*dtype_from_ggml(39), DType::MXFP4);
  EXPECT_EQ(*dtype_from_name("MXFP4"), DType::MXFP4);
}

TEST(Mxfp4, QuantizeNeverClipsAndRoundsToTheGrid) {
  const std::vector<float> x = testing::random_floats(32 * 64, 7, 0.3f);
  std::vector<uint8_t> q(row_bytes(DType::MXFP4, 32 * 64));
  quantize_row(DType::MXFP4, x.data(), q.data(), 32 * 64);
  std::vector<float> back(x.size());
  dequantize_row(DType::MXFP4, q.data(), back.data(), 32 * 64);
  for (int b = 0; b < 64; ++b) {
    const auto* blk = reinterpret_cast<const BlockMxfp4*>(q.data()) + b;
    const double scale = std::ldexp(1.0, blk->e - 127);
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    EXPECT_LE(amax, 6 * scale) << "block " << b << " clips";
    EXPECT_GT(amax, 3 * scale) << "block " << b << " scale larger than needed";
    for (int i = 0; i < 32; ++i) {
      // Nearest grid value: error at most half the step around it (1 * scale between 4 and 6).
      const double a = std::fabs(x[32 * b + i]) / scale;
      const double half_step = a < 2 ? 0.25 : a < 4 ? 0.5 : 1.0;
      EXPECT_LE(std::fabs(back[32 * b + i] - x[32 * b + i]), half_step * scale * (1 + 1e-6)) << b << "/" << i;
    }
  }
  // Values on the grid come back exactly.
  std::vector<float> grid(32);
  for (int i = 0; i < 32; ++i) grid[i] = kE2M1[i % 16] * 0.25f;
  grid[7] = 6 * 0.25f;  // the block's largest magnitude fixes the scale at 2^-2
  BlockMxfp4 g;
  quantize_row(DType::MXFP4, grid.data(), &g, 32);
  std::vector<float> gb(32);
  dequantize_row(DType::MXFP4, &g, gb.data(), 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(gb[i], grid[i]) << i;
}

TEST(Mxfp4, HfLayoutConvertsBothWays) {
  const std::vector<uint8_t> blocks = testing::random_blocks(DType::MXFP4, 1, 32 * 5, 3);
  const auto* in = reinterpret_cast<const BlockMxfp4*>(blocks.data());
  std::vector<uint8_t> hf_blocks(16 * 5), hf_scales(5);
  mxfp4_to_hf(in, 5, hf_blocks.data(), hf_scales.data());
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 32; ++i) {
      // HF: byte j of a group holds element 2j (low nibble) and 2j+1 (high); scale 2^(s-127).
      const uint8_t byte = hf_blocks[16 * b + i / 2];
      const int code = i % 2 == 0 ? byte & 0xF : byte >> 4;
      const float hf_value = static_cast<float>(kE2M1[code] * std::ldexp(1.0, hf_scales[b] - 127));
      EXPECT_EQ(hf_value, ref::element(DType::MXFP4, blocks.data(), 32 * b + i)) << b << "/" << i;
    }
  std::vector<BlockMxfp4> back(5);
  mxfp4_from_hf(hf_blocks.data(), hf_scales.data(), 5, back.data());
  EXPECT_EQ(0, std::memcmp(back.data(), blocks.data(), blocks.size()));
}

TEST(Mxfp4, MatmulMatchesReferenceOnEveryIsaShapeAndThreadCount) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(n));
  uint32_t seed = 40;
  for (int64_t cols : {32, 96, 416})
    for (int64_t rows : {1, 5, 37, 150})
      for (bool arbitrary : {false, true}) {
        const std::vector<uint8_t> wb = arbitrary ? testing::random_blocks(DType::MXFP4, rows, cols, ++seed)
                                                  : testing::quantized_weights(DType::MXFP4, rows, cols, ++seed);
        const TensorView w{DType::MXFP4, {rows, cols}, wb.data()};
        std::vector<double> wabs(static_cast<size_t>(rows * cols));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < cols; ++i) wabs[r * cols + i] = std::fabs(ref::element(DType::MXFP4, w.row(r), i));
        for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 33}) {
          SCOPED_TRACE(::testing::Message() << "rows " << rows << " cols " << cols << " tokens " << n_tokens
                                            << (arbitrary ? " arbitrary" : " quantized"));
          const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), ++seed);
          std::vector<float> expect(static_cast<size_t>(rows * n_tokens));
          ref::matmul(w, x.data(), n_tokens, expect.data());
          std::vector<double> tol(expect.size());
          for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t r = 0; r < rows; ++r) {
              double q = 0, mag = 0;
              for (int64_t b = 0; b < cols; b += 32) {
                float amax = 0;
                for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[t * cols + i]));
                for (int64_t i = b; i < b + 32; ++i) {
                  q += wabs[r * cols + i] * amax / 127.0 / 2.0;
                  mag += wabs[r * cols + i] * std::fabs(x[t * cols + i]);
                }
              }
              tol[t * rows + r] = q * 1.0001 + 1e-5 * mag + 1e-30;
            }
          testing::check_matmul_on_every_isa(w, x, n_tokens, expect, tol, pools);
          ASSERT_FALSE(HasFailure());
        }
      }
}

}  // namespace
}  // namespace triattn::ops
