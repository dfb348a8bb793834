// AVX2/FMA/F16C twin of score_keys_scalar (triattention_score.cpp): 8 bands per step, F16 keys
// converted with F16C, a Q8_0 key dequantized into a row on the stack first. Called only
// after the run-time CPU check, for half % 8 == 0.
#if defined(__x86_64__)
#include <immintrin.h>

#include "kv/triattention_score_kernels.h"
#include "ops/ops.h"
#include "ops/x86_reduce.inl"

namespace triattn::detail {

using ops::hsum_ps;

void score_keys_avx2(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                     std::span<const int32_t> rows, float* out) {
  const int half = heads[0].half;
  const bool f16 = type == DType::F16;
  alignas(32) float buf[3 * kMaxHalf];
  alignas(32) float dequantized[2 * kMaxHalf];
  float* kre = buf;
  float* kim = buf + kMaxHalf;
  float* knorm = buf + 2 * kMaxHalf;
  const auto* base = static_cast<const uint8_t*>(keys);
  const size_t n = rows.size();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* row = base + static_cast<size_t>(rows[i]) * row_bytes;
    if (type == DType::Q8_0) {
      ops::dequantize_row(type, row, dequantized, 2 * half);
      row = reinterpret_cast<const uint8_t*>(dequantized);
    }
    for (int f = 0; f < half; f += 8) {
      __m256 re, im;
      if (f16) {
        const auto* k = reinterpret_cast<const uint16_t*>(row);
        re = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + f)));
        im = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + half + f)));
      } else {
        const auto* k = reinterpret_cast<const float*>(row);
        re = _mm256_loadu_ps(k + f);
        im = _mm256_loadu_ps(k + half + f);
      }
      _mm256_store_ps(kre + f, re);
      _mm256_store_ps(kim + f, im);
      _mm256_store_ps(knorm + f, _mm256_sqrt_ps(_mm256_fmadd_ps(re, re, _mm256_mul_ps(im, im))));
    }
    for (int j = 0; j < n_heads; ++j) {
      const float* cr = heads[j].c_re();
      const float* ci = heads[j].c_im();
      const float* w = heads[j].w();
      __m256 acc = _mm256_setzero_ps();
      for (int f = 0; f < half; f += 8) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(cr + f), _mm256_load_ps(kre + f), acc);
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(ci + f), _mm256_load_ps(kim + f), acc);
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + f), _mm256_load_ps(knorm + f), acc);
      }
      out[j * n + i] = hsum_ps(acc);
    }
  }
}

}  // namespace triattn::detail

#endif  // __x86_64__
