// Vector kernels (dot, axpy, rmsnorm, softmax, swiglu) with 256-bit AVX2+FMA, compiled into
// both kernels_avx2.cpp and kernels_avx512.cpp (see x86_matmul.inl for the scheme).
#include <immintrin.h>

#include <cmath>

#include "ops/cpu_dispatch.h"
#include "ops/x86_exp.inl"

namespace triattn::ops {
namespace {

inline float hsum_vec(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float vec_dot_f32(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
         s3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8)
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum_vec(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void vec_axpy_f32(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void vec_rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const float ss = vec_dot_f32(x, x, n);
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const __m256 sv = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), _mm256_loadu_ps(w + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void vec_softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  float mx = _mm_cvtss_f32(m4);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 sv = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mxv));
    _mm256_storeu_ps(x + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = hsum_vec(sv);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const __m256 iv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), iv));
  for (; i < n; ++i) x[i] *= inv;
}

void vec_swiglu(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 sig =
        _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void fill_vec(KernelTable& t) {
  t.dot_f32 = vec_dot_f32;
  t.axpy_f32 = vec_axpy_f32;
  t.rmsnorm = vec_rmsnorm;
  t.softmax = vec_softmax;
  t.swiglu = vec_swiglu;
}

}  // namespace
}  // namespace triattn::ops
