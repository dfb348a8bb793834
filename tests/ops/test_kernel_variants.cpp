// Kernel variants chosen by measurement (ops/kernel_variants.h, ops/kernel_timing.h): the
// candidates a weight type has on this CPU, a chosen variant's layout and kernels taking
// effect (and computing what the scalar reference does), timing leaving the kernels as they
// were, and the choice of the fastest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "ops/kernel_timing.h"
#include "ops/kernel_variants.h"
#include "ops/ops_test_util.h"
#include "ops/reference.h"

namespace triattn::ops {
namespace {

using testing::quantized_weights;
using testing::random_floats;

// Restores the detected kernels when a test ends, whatever it chose.
struct VariantReset {
  ~VariantReset() {
    reset_kernel_variants();
    set_isa_for_testing(supported_isas().back());
  }
};

TEST(KernelVariants, DefaultFirstThenEverySimdTableWithItsLayouts) {
  VariantReset reset;
  const std::vector<KernelVariant> v = kernel_variants(DType::Q8_0, 64, 64);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], current_variant(DType::Q8_0, 64, 64));
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j) EXPECT_FALSE(v[i] == v[j]) << variant_name(v[i]);
  // Every SIMD table this CPU runs offers Q8_0 as it is and as Q8_0x4.
  for (Isa isa : supported_isas()) {
    if (isa == Isa::Scalar && supported_isas().size() > 1) continue;
    for (DType layout : {DType::Q8_0, DType::Q8_0x4})
      EXPECT_NE(std::find(v.begin(), v.end(), KernelVariant{isa, layout}), v.end())
          << isa_name(isa) << " " << dtype_name(layout);
  }
  // A shape no group layout fits leaves the plain one only.
  for (const KernelVariant& k : kernel_variants(DType::Q8_0, 6, 64)) EXPECT_EQ(k.layout, DType::Q8_0);
  // F16 has no other layout: one variant per table.
  for (const KernelVariant& k : kernel_variants(DType::F16, 64, 64)) EXPECT_EQ(k.layout, DType::F16);
}

TEST(KernelVariants, ChosenVariantSetsLayoutAndKernelsAndMatchesReference) {
  VariantReset reset;
  const int64_t rows = 64, cols = 128;
  const std::vector<uint8_t> q = quantized_weights(DType::Q8_0, rows, cols, 7);
  const TensorView w{DType::Q8_0, {rows, cols}, q.data()};
  for (const KernelVariant& v : kernel_variants(DType::Q8_0, rows, cols))
    for (Isa batch : supported_isas()) {
      const auto others = kernel_variants(DType::Q8_0, rows, cols);
      if (std::find(others.begin(), others.end(), KernelVariant{batch, v.layout}) == others.end()) continue;
      use_kernel_variant(DType::Q8_0, v, batch);
      EXPECT_EQ(current_variant(DType::Q8_0, rows, cols), v);
      EXPECT_EQ(current_batch_isa(DType::Q8_0, rows, cols), batch);
      const std::optional<DType> to = interleaved_type(w);
      EXPECT_EQ(to.value_or(DType::Q8_0), v.layout) << variant_name(v);
      std::vector<uint8_t> stored(TensorView{v.layout, {rows, cols}, nullptr}.nbytes());
      if (to)
        interleave(w, *to, stored.data());
      else
        std::copy(q.begin(), q.end(), stored.begin());
      const TensorView sw{v.layout, {rows, cols}, stored.data()};
      for (int64_t n : {1, 5}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), 3);
        std::vector<float> y(static_cast<size_t>(n * rows)), expect(y.size());
        matmul(sw, x.data(), n, y.data(), nullptr);
        ref::matmul(w, x.data(), n, expect.data());
        // Within the activations' 8-bit rounding: half a step (amax/127) of each 32-value block
        // times the weights it multiplies, plus float slack.
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double bound = 1e-4;
            for (int64_t b = 0; b < cols; b += 32) {
              float amax = 0, wsum = 0;
              for (int64_t i = b; i < b + 32; ++i) {
                amax = std::max(amax, std::fabs(x[t * cols + i]));
                wsum += std::fabs(ref::matrix_element(w, r, i));
              }
              bound += 0.5 * amax / 127 * wsum;
            }
            const size_t i = static_cast<size_t>(t * rows + r);
            ASSERT_NEAR(y[i], expect[i], bound) << variant_name(v) << " batch " << isa_name(batch);
          }
      }
    }
}

TEST(KernelVariants, ImpossibleChoicesAreRefused) {
  VariantReset reset;
  EXPECT_THROW(use_kernel_variant(DType::Q8_0, {supported_isas().back(), DType::Q4_Kx8}, supported_isas().back()),
               Error);
  EXPECT_THROW(use_kernel_variant(DType::F16, {supported_isas().back(), DType::Q8_0x4}, supported_isas().back()),
               Error);
}

TEST(KernelVariants, SelectingAnIsaDropsTheChoices) {
  VariantReset reset;
  const KernelVariant before = current_variant(DType::Q8_0, 64, 64);
  const KernelVariant plain{supported_isas().back(), DType::Q8_0};
  use_kernel_variant(DType::Q8_0, plain, plain.isa);
  EXPECT_EQ(current_variant(DType::Q8_0, 64, 64), plain);
  set_isa_for_testing(supported_isas().back());
  EXPECT_EQ(current_variant(DType::Q8_0, 64, 64), before);
}

TEST(KernelTiming, TimesEveryVariantAndRestoresTheKernels) {
  VariantReset reset;
  const int64_t rows = 64, cols = 256;
  const std::vector<uint8_t> a = quantized_weights(DType::Q8_0, rows, cols, 1),
                             b = quantized_weights(DType::Q8_0, rows, cols, 2);
  const std::vector<TensorView> ms = {{DType::Q8_0, {rows, cols}, a.data()}, {DType::Q8_0, {rows, cols}, b.data()}};
  const KernelVariant before = current_variant(DType::Q8_0, rows, cols);
  const std::vector<VariantTiming> t =
      time_kernel_variants(DType::Q8_0, ms, nullptr, {.sample_bytes = 1, .batch_tokens = 4, .min_seconds = 0});
  ASSERT_EQ(t.size(), kernel_variants(DType::Q8_0, rows, cols).size());
  for (const VariantTiming& v : t) {
    EXPECT_GT(v.decode_s, 0) << variant_name(v.variant);
    EXPECT_GT(v.batch_s, 0) << variant_name(v.variant);
  }
  EXPECT_EQ(current_variant(DType::Q8_0, rows, cols), before);
  const std::vector<TensorView> wrong = {{DType::F16, {rows, cols}, a.data()}};
  EXPECT_THROW(time_kernel_variants(DType::Q8_0, wrong, nullptr), Error);
}

TEST(KernelTiming, FastestTakesTheQuickestTokenThenTheQuickestBatch) {
  const std::vector<VariantTiming> t = {
      {{Isa::Avx512, DType::Q8_0x16}, 4.0, 1.0},
      {{Isa::Avx512, DType::Q8_0x4}, 2.5, 2.0},
      {{Isa::Avx2, DType::Q8_0x4}, 2.0, 3.0},
      {{Isa::Avx2, DType::Q8_0}, 2.2, 0.5},
  };
  // No margin: the quickest token (avx2 q8_0x4), then the quicker batch of that layout.
  KernelChoice c = fastest(t, 0);
  EXPECT_EQ(c.decode, (KernelVariant{Isa::Avx2, DType::Q8_0x4}));
  EXPECT_EQ(c.batch_isa, Isa::Avx512);
  // Within 15% of the quickest token, the quickest batch wins (avx2 q8_0: 2.2 against 2.0).
  c = fastest(t, 0.15);
  EXPECT_EQ(c.decode, (KernelVariant{Isa::Avx2, DType::Q8_0}));
  EXPECT_EQ(c.batch_isa, Isa::Avx2);
  EXPECT_THROW(fastest({}), Error);
}

}  // namespace
}  // namespace triattn::ops
