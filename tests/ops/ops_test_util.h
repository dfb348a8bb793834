#pragma once
// Helpers shared by the ops tests: seeded random data, weight rows of every type, a guard
// that forces an instruction set for one test and restores the default afterwards, and the
// every-ISA, every-thread-count matmul check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/ops.h"

namespace triattn::ops::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Quantizes rows x cols normal floats into `type`.
inline std::vector<uint8_t> quantized_weights(DType type, int64_t rows, int64_t cols,
                                              uint32_t seed) {
  const std::vector<float> f = random_floats(static_cast<size_t>(rows * cols), seed, 0.5f);
  std::vector<uint8_t> out(row_bytes(type, cols) * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(type, f.data() + r * cols, out.data() + r * row_bytes(type, cols), cols);
  return out;
}

// Random bytes for every quant and scale field, with the f16 super-scales replaced by sane
// random values: covers quants and scales a quantizer never writes (Q8_0 -128, negative
// Q6_K scales, 6-bit scales with the top bits set, negative d/dmin).
inline std::vector<uint8_t> random_blocks(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(row_bytes(type, cols) * static_cast<size_t>(rows));
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  const size_t bb = block_bytes(type);
  auto put = [&](size_t off) {
    const uint16_t h = f32_to_f16(scale(rng));
    std::memcpy(out.data() + off, &h, 2);
  };
  for (size_t b = 0; b < out.size() / bb; ++b) {
    const size_t base = b * bb;
    switch (type) {
      case DType::Q8_0:
      case DType::Q4_0:
        put(base);
        break;
      case DType::Q4_K:
      case DType::Q5_K:
        put(base);
        put(base + 2);
        break;
      case DType::Q6_K:
        put(base + 208);
        break;
      case DType::F16:  // plain types: make every element a sane finite value
      case DType::BF16:
      case DType::F32:
        break;
      case DType::MXFP4:  // exponents of scales 2^-12 .. 2^3, both sane
        out[base] = static_cast<uint8_t>(115 + rng() % 16);
        break;
      case DType::I32:
      case DType::U8:
      case DType::Q8_0x4:  // made by ops::interleave from Q8_0 / Q4_K / Q4_0 blocks, not generated here
      case DType::Q4_Kx8:
      case DType::Q4_0x8:
      case DType::Q8_0x16:
        break;
    }
  }
  if (type == DType::F16 || type == DType::BF16 || type == DType::F32) {
    const std::vector<float> f = random_floats(out.size(), seed);
    const int64_t n = static_cast<int64_t>(out.size() / (type == DType::F32 ? 4 : 2));
    quantize_row(type, f.data(), out.data(), n);
  }
  return out;
}

// Forces an ISA for the lifetime of the guard.
class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) { set_isa_for_testing(isa); }
  ~IsaGuard() { set_isa_for_testing(supported_isas().back()); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;
};

// matmul(w, x) on every ISA this CPU runs: within tol[i] of expect[i] on the calling thread,
// and on each pool bit-identical to that (threads split rows only, so results must not depend
// on the thread count). Returns each ISA's serial result, in supported_isas() order.
inline std::vector<std::vector<float>> check_matmul_on_every_isa(
    const TensorView& w, const std::vector<float>& x, int64_t n_tokens, const std::vector<float>& expect,
    const std::vector<double>& tol, const std::vector<std::unique_ptr<ThreadPool>>& pools) {
  std::vector<std::vector<float>> results;
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    std::vector<float>& serial = results.emplace_back(expect.size(), NAN);
    matmul(w, x.data(), n_tokens, serial.data(), nullptr);
    for (size_t i = 0; i < serial.size(); ++i) {
      EXPECT_NEAR(serial[i], expect[i], tol[i]) << isa_name(isa) << " output " << i;
      if (!(std::fabs(serial[i] - expect[i]) <= tol[i])) return results;  // one report per case
    }
    for (const auto& pool : pools) {
      std::vector<float> y(expect.size(), NAN);
      matmul(w, x.data(), n_tokens, y.data(), pool.get());
      for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_EQ(y[i], serial[i]) << isa_name(isa) << " threads " << pool->size() << " output " << i;
        if (y[i] != serial[i]) return results;
      }
    }
  }
  return results;
}

inline const std::vector<DType>& weight_types() {
  static const std::vector<DType> t = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                                       DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  return t;
}

}  // namespace triattn::ops::testing
