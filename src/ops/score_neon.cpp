// score_keys_neon: score_simd.inl with AArch64 Advanced SIMD, 4 bands per step.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>

namespace triattn::detail {
namespace {
using V = float32x4_t;
constexpr int kBands = 4;
inline V vload(const float* p) { return vld1q_f32(p); }
inline V vload_f16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
inline void vstore(float* p, V v) { vst1q_f32(p, v); }
inline V vfma(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // a * b + c
inline V vmul(V a, V b) { return vmulq_f32(a, b); }
inline V vsqrt(V a) { return vsqrtq_f32(a); }
inline V vzero() { return vdupq_n_f32(0); }
inline float vhsum(V v) { return vaddvq_f32(v); }
}  // namespace
}  // namespace triattn::detail

#define TRIATTN_SCORE_NAME score_keys_neon
#include "ops/score_simd.inl"
#endif  // __aarch64__
