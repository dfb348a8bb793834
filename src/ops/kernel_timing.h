#pragma once
// Times the kernel variants of one weight type (kernel_variants.h) on real matrices: each
// variant's copy of a sample of them, one token at a time (decode reads every byte once per
// token, so the sample is made larger than the caches) and a batch of tokens (prefill), the
// variants in turn, round after round.
#include <cstddef>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ops/kernel_variants.h"

namespace triattn::ops {

struct VariantTiming {
  KernelVariant variant;
  double decode_s = 0;  // seconds for one token through the whole sample (median of passes)
  double batch_s = 0;   // seconds for batch_tokens tokens (median of passes)
};

struct KernelTimingOptions {
  // Matrices taken in order until this many bytes (each variant holds a copy of them at once).
  size_t sample_bytes = size_t{64} << 20;
  int batch_tokens = 32;
  double min_seconds = 0.03;  // per variant and mode; at least 3 passes of each
};

// Every variant that runs every sampled matrix of `type` (all 2-D, of that file type), timed
// with `pool`. The kernels in use are the same afterwards as before.
std::vector<VariantTiming> time_kernel_variants(DType type, std::span<const TensorView> matrices, ThreadPool* pool,
                                                const KernelTimingOptions& options = {});

// The variant for one token: of those within decode_margin of the quickest token, the one
// with the quickest batch; and for several tokens the quickest instruction set with its
// layout (the layout is one per weight, the kernels may differ per batch size).
struct KernelChoice {
  KernelVariant decode;
  Isa batch_isa = Isa::Scalar;
};
KernelChoice fastest(std::span<const VariantTiming> timings, double decode_margin = 0.05);

}  // namespace triattn::ops
