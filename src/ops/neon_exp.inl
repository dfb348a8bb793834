// e^x on 4 floats with AArch64 Advanced SIMD, shared by the vector kernels
// (neon_kernels.inl) and attention (model/attention_simd.inl). Like x86_exp.inl it sits in an
// anonymous namespace: each file that includes it keeps its own copy.
#pragma once
#include <arm_neon.h>

namespace triattn::ops {
namespace {

// e^x on 4 floats, the algorithm of x86_exp.inl: x = n*ln2 + r, |r| <= ln2/2, e^r by its
// Taylor series to r^7, 2^n built in the exponent bits; below -87.3 (f32 underflow) gives 0.
inline float32x4_t exp4(float32x4_t x) {
  const uint32x4_t too_small = vcltq_f32(x, vdupq_n_f32(-87.3f));
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));  // ln2 split: n*hi exact
  r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187e-06f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040);
  for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) p = vfmaq_f32(vdupq_n_f32(c), p, r);
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), too_small));
}

}  // namespace
}  // namespace triattn::ops
