#pragma once
// The TriAttention key-scoring kernels (the formula is in kv/triattention_score.h): a scalar
// reference and one SIMD kernel per ISA, chosen through the kernel table (cpu_dispatch.h)
// like every other kernel, so forcing an ISA covers scoring too.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace triattn {

// Coefficients of one query head at one event, band-major: [c_re | c_im | w], each half = d/2.
struct HeadCoeffs {
  int half = 0;
  std::vector<float> data;  // 3 * half
  const float* c_re() const { return data.data(); }
  const float* c_im() const { return data.data() + half; }
  const float* w() const { return data.data() + 2 * half; }
};

// Scores keys against the coefficients of `n_heads` query heads that share them (a GQA group).
// keys: rows whose first 2*half elements are the rotated bands (F32, F16 or Q8_0, halves
// layout: band f is (x[f], x[f+half]); under partial RoPE more, unrotated, coordinates follow
// and are not read here), row_bytes apart; rows: which rows to score. out[j * rows.size() + i] is
// head j's score of key rows[i].
// Runs the active ISA's kernel (AVX2 on x86 when head_dim/2 is a multiple of 8, NEON on AArch64
// when it is a multiple of 4), else the scalar one.
void score_keys(const HeadCoeffs* heads, int n_heads, const void* keys, DType type,
                size_t row_bytes, std::span<const int32_t> rows, float* out);
// The portable implementation (the SIMD kernels are tested against it).
void score_keys_scalar(const HeadCoeffs* heads, int n_heads, const void* keys, DType type,
                       size_t row_bytes, std::span<const int32_t> rows, float* out);

namespace detail {

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

}  // namespace detail
}  // namespace triattn
