// score_keys_avx2: score_simd.inl with AVX2/FMA/F16C, 8 bands per step.
#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/x86_reduce.inl"

namespace triattn::detail {
namespace {
using V = __m256;
constexpr int kBands = 8;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline V vload_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vsqrt(V a) { return _mm256_sqrt_ps(a); }
inline V vzero() { return _mm256_setzero_ps(); }
inline float vhsum(V v) { return ops::hsum_ps(v); }
}  // namespace
}  // namespace triattn::detail

#define TRIATTN_SCORE_NAME score_keys_avx2
#include "ops/score_simd.inl"
#endif  // __x86_64__
