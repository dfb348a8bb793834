// matmul for every weight type, on every ISA this CPU has, against the double-precision
// reference, over odd shapes (rows not a multiple of the tile, partial token tiles, float
// tails) and thread counts 1/2/3. Quantized types quantize the activations, so the
// tolerance is the exact bound of that error: sum_i |w_i| * d_x(i) / 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::vector<int64_t> cols_for(DType t) {
  if (is_float(t)) return {1, 7, 13, 100, 264};
  if (block_size(t) == 32) return {32, 96, 416};
  return {256, 512};
}

// Per output tolerance: activation quantization bound plus float accumulation slack.
std::vector<double> tolerances(DType t, const std::vector<float>& wd, const std::vector<float>& x,
                               int64_t rows, int64_t cols, int64_t n_tokens) {
  const int64_t qblock = is_float(t) ? 0 : (block_size(t) == 32 ? 32 : 256);
  std::vector<double> tol(static_cast<size_t>(rows * n_tokens));
  for (int64_t tk = 0; tk < n_tokens; ++tk) {
    const float* xt = x.data() + tk * cols;
    std::vector<double> half_step(static_cast<size_t>(cols), 0.0);
    if (qblock)
      for (int64_t b = 0; b < cols; b += qblock) {
        float amax = 0;
        for (int64_t i = b; i < b + qblock; ++i) amax = std::max(amax, std::fabs(xt[i]));
        for (int64_t i = b; i < b + qblock; ++i) half_step[i] = amax / 127.0 / 2.0;
      }
    for (int64_t r = 0; r < rows; ++r) {
      double qerr = 0, mag = 0;
      for (int64_t i = 0; i < cols; ++i) {
        const double w = std::fabs(wd[r * cols + i]);
        qerr += w * half_step[i];
        mag += w * std::fabs(xt[i]);
      }
      tol[tk * rows + r] = qerr * 1.0001 + 1e-5 * mag + 1e-30;
    }
  }
  return tol;
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesReferenceOnEveryIsaShapeAndThreadCount) {
  const DType t = GetParam();
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(n));
  uint32_t seed = 1;
  for (int64_t cols : cols_for(t))
    // 150 rows: thread ranges of several rows, so decode runs its multi-stream path. 5, 9 and
    // 37 leave 5, 3 and 1 rows after the 6-row float prefill tiles (the 16-row thread ranges
    // of 150 leave 4 and 2).
    for (int64_t rows : {1, 5, 9, 37, 150})
      for (bool arbitrary : {false, true}) {
        const std::vector<uint8_t> wbytes = arbitrary
                                                ? testing::random_blocks(t, rows, cols, ++seed)
                                                : testing::quantized_weights(t, rows, cols, ++seed);
        TensorView w{t, {rows, cols}, wbytes.data()};
        std::vector<float> wd(static_cast<size_t>(rows * cols));
        for (int64_t r = 0; r < rows; ++r)
          ref::dequantize_row(t, w.row(r), wd.data() + r * cols, cols);
        for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 33}) {
          SCOPED_TRACE(::testing::Message()
                       << "rows " << rows << " cols " << cols << " tokens " << n_tokens
                       << (arbitrary ? " arbitrary" : " quantized"));
          const std::vector<float> x =
              testing::random_floats(static_cast<size_t>(n_tokens * cols), ++seed);
          std::vector<float> expect(static_cast<size_t>(rows * n_tokens));
          ref::matmul(w, x.data(), n_tokens, expect.data());
          testing::check_matmul_on_every_isa(w, x, n_tokens, expect, tolerances(t, wd, x, rows, cols, n_tokens),
                                             pools);
          ASSERT_FALSE(HasFailure());
        }
      }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, ::testing::ValuesIn(testing::weight_types()),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The interleaved layouts made at load time (Q8_0 rows by 4 into Q8_0x4 or by 16 into Q8_0x16,
// Q4_K rows by 8 into Q4_Kx8, Q4_0 rows by 8 into Q4_0x8): the same checks as every file type,
// the reference reading the interleaved bytes by its own index arithmetic
// (ref::matrix_element). Row counts of odd and even group counts, so the AVX-512 tiles of two
// groups and the one-group tail both run. Every layout on every ISA: one without kernels of
// its own for a layout (Q8_0x16 off AVX-512) runs the scalar table's.
TEST(Matmul, InterleavedLayoutsMatchReferenceOnEveryIsaShapeAndThreadCount) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(n));
  uint32_t seed = 500;
  struct Case {
    DType to;
    std::vector<int64_t> cols, rows;
  };
  // Rows up to 300+: several scheduling grains per thread, so decode runs its multi-stream path.
  const Case cases[] = {{DType::Q8_0x4, {32, 96, 416}, {4, 36, 152, 300}},
                        {DType::Q8_0x16, {32, 96, 416}, {16, 48, 144, 304}},
                        {DType::Q4_Kx8, {256, 768}, {8, 40, 152, 304}},
                        {DType::Q4_0x8, {32, 96, 416}, {8, 40, 152, 304}}};
  for (const Case& c : cases)
    for (int64_t cols : c.cols)
      for (int64_t rows : c.rows)
        for (bool arbitrary : {false, true}) {
          const DType file = file_dtype(c.to), to = c.to;
          const std::vector<uint8_t> qbytes = arbitrary ? testing::random_blocks(file, rows, cols, ++seed)
                                                        : testing::quantized_weights(file, rows, cols, ++seed);
          const TensorView q{file, {rows, cols}, qbytes.data()};
          std::vector<uint8_t> xbytes(TensorView{to, {rows, cols}, nullptr}.nbytes());
          interleave(q, to, xbytes.data());
          const TensorView w{to, {rows, cols}, xbytes.data()};
          std::vector<float> wd(static_cast<size_t>(rows * cols));
          for (int64_t r = 0; r < rows; ++r) ref::dequantize_row(file, q.row(r), wd.data() + r * cols, cols);
          for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 33}) {  // 2-16: small_batch; 33: tiles
            SCOPED_TRACE(::testing::Message() << dtype_name(to) << " rows " << rows << " cols " << cols << " tokens "
                                              << n_tokens << (arbitrary ? " arbitrary" : " quantized"));
            const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), ++seed);
            std::vector<float> expect(static_cast<size_t>(rows * n_tokens)), from_rows(expect.size());
            ref::matmul(w, x.data(), n_tokens, expect.data());
            ref::matmul(q, x.data(), n_tokens, from_rows.data());
            ASSERT_EQ(expect, from_rows);  // the reference reads the same weights either way
            const std::vector<std::vector<float>> by_isa = testing::check_matmul_on_every_isa(
                w, x, n_tokens, expect, tolerances(file, wd, x, rows, cols, n_tokens), pools);
            ASSERT_FALSE(HasFailure());
            // The scalar kernel (supported_isas() starts with it) sums exactly as the file
            // type's does.
            IsaGuard guard(Isa::Scalar);
            std::vector<float> plain(expect.size(), NAN);
            matmul(q, x.data(), n_tokens, plain.data(), nullptr);
            ASSERT_EQ(by_isa.front(), plain);
          }
        }
}

TEST(Matmul, LargeMatrixSplitsRowsAcrossThreads) {
  // Enough rows that every thread gets several grains, on the default ISA.
  const int64_t rows = 203, cols = 1024, n_tokens = 9;
  for (DType t : {DType::Q8_0, DType::Q4_K, DType::F16}) {
    SCOPED_TRACE(dtype_name(t));
    const std::vector<uint8_t> wbytes = testing::quantized_weights(t, rows, cols, 99);
    TensorView w{t, {rows, cols}, wbytes.data()};
    const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), 98);
    std::vector<float> expect(static_cast<size_t>(rows * n_tokens)), y(expect.size());
    ref::matmul(w, x.data(), n_tokens, expect.data());
    ThreadPool pool(3);
    matmul(w, x.data(), n_tokens, y.data(), &pool);
    double err = 0, mag = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(y[i]) - expect[i]));
      mag = std::max(mag, std::fabs(static_cast<double>(expect[i])));
    }
    EXPECT_LT(err, 0.02 * mag);  // Q8 activations: well under 2% of the largest output
    EXPECT_GT(mag, 1.0);
  }
}

TEST(Matmul, GroupEqualsSeparateCalls) {
  // Q, K, V-like weights of mixed types over one input: one quantization per activation
  // format, one parallel call, and the same bits as three separate matmuls.
  const int64_t cols = 512;
  const DType types[] = {DType::Q8_0, DType::Q4_K, DType::F16};
  const int64_t rows[] = {96, 40, 40};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> ws;
  for (int i = 0; i < 3; ++i) bytes.push_back(testing::quantized_weights(types[i], rows[i], cols, 7 + i));
  for (int i = 0; i < 3; ++i) ws.push_back(TensorView{types[i], {rows[i], cols}, bytes[i].data()});
  ThreadPool pool(2);
  for (int64_t n_tokens : {1, 5}) {
    SCOPED_TRACE(n_tokens);
    const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), 3);
    std::vector<std::vector<float>> alone(3), grouped(3);
    for (int i = 0; i < 3; ++i) {
      alone[i].assign(static_cast<size_t>(rows[i] * n_tokens), NAN);
      grouped[i].assign(alone[i].size(), NAN);
      matmul(ws[i], x.data(), n_tokens, alone[i].data(), &pool);
    }
    const MatmulTarget targets[] = {{&ws[0], grouped[0].data()}, {&ws[1], grouped[1].data()},
                                    {&ws[2], grouped[2].data()}};
    matmul_group(targets, x.data(), n_tokens, &pool);
    for (int i = 0; i < 3; ++i)
      for (size_t k = 0; k < alone[i].size(); ++k)
        ASSERT_EQ(grouped[i][k], alone[i][k]) << "target " << i << " output " << k;
  }
  // A target whose row count is not a multiple of the scheduling grain ahead of an
  // interleaved one: every target starts on a grain, so no thread gets part of a group.
  for (DType to : {DType::Q8_0x4, DType::Q8_0x16}) {
    SCOPED_TRACE(dtype_name(to));
    const int64_t wide = 1024, odd_rows = 6, x_rows = to == DType::Q8_0x16 ? 208 : 200;
    const std::vector<uint8_t> odd_bytes = testing::quantized_weights(DType::Q8_0, odd_rows, wide, 21);
    const std::vector<uint8_t> q_bytes = testing::quantized_weights(DType::Q8_0, x_rows, wide, 22);
    std::vector<uint8_t> x_bytes(q_bytes.size());
    interleave(TensorView{DType::Q8_0, {x_rows, wide}, q_bytes.data()}, to, x_bytes.data());
    const TensorView odd{DType::Q8_0, {odd_rows, wide}, odd_bytes.data()};
    const TensorView xw{to, {x_rows, wide}, x_bytes.data()};
    for (int64_t n_tokens : {1, 5}) {
      const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * wide), 23);
      std::vector<float> a0(odd_rows * n_tokens), a1(x_rows * n_tokens), g0(a0.size(), NAN), g1(a1.size(), NAN);
      matmul(odd, x.data(), n_tokens, a0.data(), nullptr);
      matmul(xw, x.data(), n_tokens, a1.data(), nullptr);
      const MatmulTarget both[] = {{&odd, g0.data()}, {&xw, g1.data()}};
      for (int threads : {2, 3}) {
        ThreadPool p(threads);
        matmul_group(both, x.data(), n_tokens, &p);
        EXPECT_EQ(g0, a0) << "threads " << threads << " tokens " << n_tokens;
        EXPECT_EQ(g1, a1) << "threads " << threads << " tokens " << n_tokens;
      }
    }
  }
  // Weights of different widths cannot share one input.
  const std::vector<uint8_t> other = testing::quantized_weights(DType::Q8_0, 8, 256, 1);
  const TensorView narrow{DType::Q8_0, {8, 256}, other.data()};
  std::vector<float> x(cols), y0(96), y1(8);
  const MatmulTarget mixed[] = {{&ws[0], y0.data()}, {&narrow, y1.data()}};
  EXPECT_THROW(matmul_group(mixed, x.data(), 1, &pool), Error);
}

TEST(Matmul, GroupWithPerTargetInputsEqualsSeparateCalls) {
  // Experts' down projections: one call, each weight with its own input (two of them sharing
  // one, one on the group's x), each output the same bits as its own matmul, on every ISA.
  const int64_t cols = 512;
  const DType types[] = {DType::Q8_0, DType::Q4_K, DType::F16, DType::Q6_K};
  const int64_t rows[] = {48, 32, 40, 16};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> ws;
  for (int i = 0; i < 4; ++i) bytes.push_back(testing::quantized_weights(types[i], rows[i], cols, 31 + i));
  for (int i = 0; i < 4; ++i) ws.push_back(TensorView{types[i], {rows[i], cols}, bytes[i].data()});
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_isa_for_testing(isa);
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (int64_t n_tokens : {1, 5}) {
      SCOPED_TRACE(n_tokens);
      const size_t n = static_cast<size_t>(n_tokens * cols);
      const std::vector<float> x = testing::random_floats(n, 41), a = testing::random_floats(n, 42),
                               b = testing::random_floats(n, 43);
      const float* inputs[] = {a.data(), b.data(), a.data(), nullptr};
      std::vector<std::vector<float>> alone(4), grouped(4);
      std::vector<MatmulTarget> targets;
      for (int i = 0; i < 4; ++i) {
        alone[i].assign(static_cast<size_t>(rows[i] * n_tokens), NAN);
        grouped[i].assign(alone[i].size(), NAN);
        matmul(ws[i], inputs[i] ? inputs[i] : x.data(), n_tokens, alone[i].data(), nullptr);
        targets.push_back({&ws[i], grouped[i].data(), inputs[i]});
      }
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        matmul_group(targets, x.data(), n_tokens, &pool);
        for (int i = 0; i < 4; ++i) EXPECT_EQ(grouped[i], alone[i]) << "target " << i << ", threads " << threads;
      }
    }
  }
  set_isa_for_testing(saved);
}

// The interleaved layouts compute every (row, token) with the same operations whether the
// token comes alone (decode), in a small batch (several sequences decoding together: the
// 256-bit streams, or the 512-bit ones of two groups) or in a prefill tile: a sequence's
// results do not depend on what it is batched with, which the server promises (the same
// replies as one request served alone).
TEST(Matmul, InterleavedLayoutsGiveEachTokenTheSameBitsInAnyBatch) {
  ThreadPool pool(2);
  uint32_t seed = 900;
  for (DType to : {DType::Q8_0x4, DType::Q8_0x16, DType::Q4_Kx8, DType::Q4_0x8}) {
    // 19 groups of 8 (38 of 4): pairs and an odd one; Q8_0x16 19 groups of 16.
    const int64_t rows = to == DType::Q8_0x16 ? 304 : 152, cols = 512;
    const DType file = file_dtype(to);
    const std::vector<uint8_t> qbytes = testing::random_blocks(file, rows, cols, ++seed);
    const TensorView q{file, {rows, cols}, qbytes.data()};
    std::vector<uint8_t> xbytes(TensorView{to, {rows, cols}, nullptr}.nbytes());
    interleave(q, to, xbytes.data());
    const TensorView w{to, {rows, cols}, xbytes.data()};
    for (Isa isa : supported_isas()) {
      testing::IsaGuard guard(isa);
      for (int64_t n_tokens : {2, 4, 5, 8, 16, 17, 33}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(to) << " " << isa_name(isa) << " tokens " << n_tokens);
        const std::vector<float> x = testing::random_floats(static_cast<size_t>(n_tokens * cols), ++seed);
        std::vector<float> batch(static_cast<size_t>(rows * n_tokens)), alone(static_cast<size_t>(rows));
        matmul(w, x.data(), n_tokens, batch.data(), &pool);
        for (int64_t t = 0; t < n_tokens; ++t) {
          matmul(w, x.data() + t * cols, 1, alone.data(), &pool);
          for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(batch[t * rows + r], alone[r]) << "token " << t << " row " << r;
        }
      }
    }
  }
}

TEST(Matmul, RejectsBadWeights) {
  std::vector<float> buf(64, 1.0f), y(64);
  TensorView one_d{DType::F32, {64}, buf.data()};
  EXPECT_THROW(matmul(one_d, buf.data(), 1, y.data(), nullptr), Error);
  TensorView ints{DType::I32, {2, 32}, buf.data()};
  EXPECT_THROW(matmul(ints, buf.data(), 1, y.data(), nullptr), Error);
  TensorView partial{DType::Q8_0, {1, 48}, buf.data()};
  EXPECT_THROW(matmul(partial, buf.data(), 1, y.data(), nullptr), Error);
  TensorView split_group{DType::Q8_0x4, {2, 32}, buf.data()};  // groups are 4 rows
  EXPECT_THROW(matmul(split_group, buf.data(), 1, y.data(), nullptr), Error);
  std::vector<uint8_t> kx8(4 * 148);
  TensorView split_kx8{DType::Q4_Kx8, {4, 256}, kx8.data()};  // groups are 8 rows
  EXPECT_THROW(matmul(split_kx8, buf.data(), 1, y.data(), nullptr), Error);
  TensorView split_q4_0x8{DType::Q4_0x8, {4, 32}, kx8.data()};  // groups are 8 rows
  EXPECT_THROW(matmul(split_q4_0x8, buf.data(), 1, y.data(), nullptr), Error);
}

TEST(Isa, ForcingEachSupportedIsaTakesEffect) {
  const std::vector<Isa> isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::Scalar);
  for (Isa isa : isas) {
    IsaGuard guard(isa);
    EXPECT_EQ(active_isa(), isa);
  }
  EXPECT_EQ(active_isa(), isas.back());
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")) {
    EXPECT_EQ(isas.back(), Isa::Avx512);
  }
#endif
#if defined(__aarch64__)
  // Advanced SIMD is part of AArch64: the neon table is always there (and under qemu-user's
  // default CPU, which has the dot product, neon_dotprod too).
  EXPECT_NE(std::find(isas.begin(), isas.end(), Isa::Neon), isas.end());
#endif
}

}  // namespace
}  // namespace triattn::ops
