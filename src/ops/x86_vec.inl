// Vector kernels (dot, axpy, rmsnorm, softmax, swiglu, RoPE, activation quantization, f32 -> f16) with 256-bit AVX2+FMA, compiled into
// both kernels_avx2.cpp and kernels_avx512.cpp (see x86_matmul.inl for the scheme).
#include <immintrin.h>

#include <cmath>

#include "core/half.h"
#include "ops/cpu_dispatch.h"
#include "ops/x86_exp.inl"
#include "ops/x86_reduce.inl"

namespace triattn::ops {
namespace {

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
  float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
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
  float mx = hmax_ps(mv);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const __m256 mxv = _mm256_set1_ps(mx);
  __m256 sv = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mxv));
    _mm256_storeu_ps(x + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = hsum_ps(sv);
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

void vec_rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int f = 0;
    for (; f + 8 <= half; f += 8) {
      const __m256 a = _mm256_loadu_ps(v + f), b = _mm256_loadu_ps(v + f + half);
      const __m256 c = _mm256_loadu_ps(cos + f), s = _mm256_loadu_ps(sin + f);
      _mm256_storeu_ps(v + f, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
      _mm256_storeu_ps(v + f + half, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
    }
    for (; f < half; ++f) {
      const float a = v[f], b = v[f + half];
      const float ac = a * cos[f], bs = b * sin[f], as = a * sin[f], bc = b * cos[f];
      v[f] = ac - bs;
      v[f + half] = as + bc;
    }
  }
}

// Largest |x| over n floats (n a multiple of 8).
inline float abs_max(const float* x, int n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
  return hmax_ps(m);
}

// The scalar quantize_group (kernels_scalar.cpp) 32 values at a time: the same scale and
// ties-to-even rounding of x * (1/d), so the same bits. Writes 32 quants; sums[0] and
// sums[1] get the sums of quants 0..15 and 16..31.
// v rounded to the nearest integer, ties away from zero (C's lround, GGML's Q8_0 rounding):
// the fraction v - trunc(v) is exact, so comparing it with 0.5 decides the tie exactly
// (adding a signed 0.5 before truncating would round 0.49999997 up).
inline __m256 round_half_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f))));
}

// Rounds 32 values x * id to int8 into q and returns their sums per half. kTiesAway: ties
// away from zero (Q8_0 blocks); otherwise to even (the activation formats).
template <bool kTiesAway = false>
inline void quantize_32(const float* x, __m256 id, int8_t* q, int32_t sums[2]) {
  __m256i v[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id);
    v[k] = _mm256_cvtps_epi32(kTiesAway ? round_half_away(s)
                                        : _mm256_round_ps(s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  sums[0] = hsum_epi32(_mm256_add_epi32(v[0], v[1]));
  sums[1] = hsum_epi32(_mm256_add_epi32(v[2], v[3]));
  // Packing works within 128-bit lanes; the permute puts the 8 groups of 4 back in order.
  const __m256i p16a = _mm256_packs_epi32(v[0], v[1]), p16b = _mm256_packs_epi32(v[2], v[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(p8, order));
}

inline float act_scale(float amax, __m256* id) {
  const float d = amax / 127.0f;
  *id = _mm256_set1_ps(d > 0 ? 1.0f / d : 0.0f);
  return d;
}

void vec_quantize_act_q8(const float* x, ActQ8* out, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    __m256 id;
    out[b].d = act_scale(abs_max(xb, kQK), &id);
    int32_t sums[2];
    quantize_32(xb, id, out[b].qs, sums);
    out[b].sum = sums[0] + sums[1];
  }
}

void vec_quantize_act_q8k(const float* x, ActQ8K* out, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    __m256 id;
    out[b].d = act_scale(abs_max(xb, kQKK), &id);
    for (int g = 0; g < kQKK / 32; ++g) {
      int32_t sums[2];
      quantize_32(xb + 32 * g, id, out[b].qs + 32 * g, sums);
      out[b].bsums[2 * g] = static_cast<int16_t>(sums[0]);
      out[b].bsums[2 * g + 1] = static_cast<int16_t>(sums[1]);
    }
  }
}

// The scale as quantize.cpp computes it (amax / 127 in f32, its inverse, stored as f16).
void vec_f32_to_q8_0_row(const float* x, void* out, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    __m256 id;
    blocks[b].d = f32_to_f16(act_scale(abs_max(xb, kQK), &id));
    int32_t sums[2];
    quantize_32<true>(xb, id, blocks[b].qs, sums);
  }
}

void vec_f32_to_f16_row(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void fill_vec(KernelTable& t) {
  t.dot_f32 = vec_dot_f32;
  t.axpy_f32 = vec_axpy_f32;
  t.rmsnorm = vec_rmsnorm;
  t.softmax = vec_softmax;
  t.swiglu = vec_swiglu;
  t.rope = vec_rope;
  t.quantize_act_q8 = vec_quantize_act_q8;
  t.quantize_act_q8k = vec_quantize_act_q8k;
  t.f32_to_f16_row = vec_f32_to_f16_row;
  t.f32_to_q8_0_row = vec_f32_to_q8_0_row;
}

}  // namespace
}  // namespace triattn::ops
