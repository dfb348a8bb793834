// The TriAttention scoring kernels: the one the active kernel table names, under every ISA this
// CPU runs, against the scalar reference (F32, F16 and Q8_0 keys, head dims that the SIMD
// kernels take and ones they leave to the scalar kernel), and forcing the scalar ISA gives the
// scalar kernel's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/half.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"
#include "ops/score_kernels.h"
#include "ops_test_util.h"

namespace triattn::ops {
namespace {

using testing::IsaGuard;

std::vector<HeadCoeffs> random_heads(int n_heads, int half, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<HeadCoeffs> heads(static_cast<size_t>(n_heads));
  for (HeadCoeffs& h : heads) {
    h.half = half;
    h.data.resize(3 * static_cast<size_t>(half));
    for (float& v : h.data) v = nd(rng);
  }
  return heads;
}

// n keys of head_dim d in `type`, rows as the KV cache stores them.
std::vector<uint8_t> random_keys(DType type, int d, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n) * d);
  for (float& v : f) v = nd(rng);
  std::vector<uint8_t> rows(row_bytes(type, d) * n);
  for (int i = 0; i < n; ++i) quantize_row(type, f.data() + i * d, rows.data() + i * row_bytes(type, d), d);
  return rows;
}

TEST(ScoreKernels, ActiveKernelMatchesTheScalarOneOnEveryIsa) {
  const int G = 3, n = 41;
  std::vector<int32_t> rows;
  for (int i = n - 1; i >= 0; i -= 2) rows.push_back(i);
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int d : {8, 12, 16, 64, 128, 256, 1024}) {  // half: 4, 6, 8, 32, 64, 128, 512 (over kMaxHalf)
      for (DType t : {DType::F32, DType::F16, DType::Q8_0}) {
        if (d % block_size(t) != 0) continue;
        SCOPED_TRACE(::testing::Message() << isa_name(isa) << " d " << d << " " << dtype_name(t));
        const std::vector<HeadCoeffs> heads = random_heads(G, d / 2, 5 + d);
        const std::vector<uint8_t> keys = random_keys(t, d, n, 9 + d);
        std::vector<float> got(G * rows.size()), want(G * rows.size());
        score_keys(heads.data(), G, keys.data(), t, row_bytes(t, d), rows, got.data());
        score_keys_scalar(heads.data(), G, keys.data(), t, row_bytes(t, d), rows, want.data());
        if (isa == Isa::Scalar) {
          EXPECT_EQ(got, want);
          continue;
        }
        for (size_t i = 0; i < got.size(); ++i) {
          // Σ |terms| bounds the rounding of either summation order.
          const HeadCoeffs& h = heads[i / rows.size()];
          double scale = 0;
          for (float c : h.data) scale += std::abs(c) * 4;
          EXPECT_NEAR(got[i], want[i], 1e-5 * scale) << "i " << i;
        }
      }
    }
  }
}

TEST(ScoreKernels, TablesNameTheirIsasKernel) {
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    const ScoreKernel& k = active_kernels().score_keys;
    SCOPED_TRACE(isa_name(isa));
    if (isa == Isa::Scalar) {
      EXPECT_EQ(k.fn, nullptr);
      continue;
    }
#if defined(__x86_64__)
    EXPECT_EQ(k.fn, ::triattn::detail::score_keys_avx2);
    EXPECT_EQ(k.half_multiple, 8);
#elif defined(__aarch64__)
    EXPECT_EQ(k.fn, ::triattn::detail::score_keys_neon);
    EXPECT_EQ(k.half_multiple, 4);
#endif
  }
}

}  // namespace
}  // namespace triattn::ops
