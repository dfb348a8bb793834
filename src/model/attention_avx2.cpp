// AVX2 + FMA + F16C row kernels for attention (see attention.cpp for the dispatch).
#include <immintrin.h>

#include <cstdint>

namespace triattn::attention_detail {

namespace {
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
}  // namespace

float dot_f16_avx2(const float* q, const uint16_t* k, int d) {
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 kf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kf, acc);
  }
  float s = hsum(acc);
  for (; i < d; ++i) s += q[i] * h2f(k[i]);
  return s;
}

void axpy_f16_avx2(float a, const uint16_t* v, float* out, int d) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 vf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, vf, _mm256_loadu_ps(out + i)));
  }
  for (; i < d; ++i) out[i] += a * h2f(v[i]);
}

float dot_f32_avx2(const float* q, const float* k, int d) {
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= d; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), acc);
  float s = hsum(acc);
  for (; i < d; ++i) s += q[i] * k[i];
  return s;
}

void axpy_f32_avx2(float a, const float* v, float* out, int d) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(v + i), _mm256_loadu_ps(out + i)));
  for (; i < d; ++i) out[i] += a * v[i];
}

}  // namespace triattn::attention_detail
