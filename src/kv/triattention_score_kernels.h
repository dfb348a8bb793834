#pragma once
// Per-ISA implementations behind score_keys() (internal to kv/).
#include <cstddef>
#include <cstdint>
#include <span>

#include "kv/triattention_score.h"

namespace triattn::detail {

// Largest head_dim/2 the SIMD kernels handle with their stack buffers (head_dim 512).
inline constexpr int kMaxHalf = 256;

#if defined(__x86_64__)
void score_keys_avx2(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                     std::span<const int32_t> rows, float* out);
#endif
#if defined(__aarch64__)
void score_keys_neon(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                     std::span<const int32_t> rows, float* out);
#endif

}  // namespace triattn::detail
