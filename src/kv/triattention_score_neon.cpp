// AArch64 Advanced SIMD twin of score_keys_scalar (triattention_score.cpp), as
// triattention_score_avx2.cpp is on x86: 4 bands per step, F16 keys converted with FCVTL, a
// Q8_0 key dequantized into a row on the stack first. Called for half % 4 == 0.
#if defined(__aarch64__)
#include <arm_neon.h>

#include "kv/triattention_score_kernels.h"
#include "ops/ops.h"

namespace triattn::detail {

void score_keys_neon(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                     std::span<const int32_t> rows, float* out) {
  const int half = heads[0].half;
  const bool f16 = type == DType::F16;
  alignas(16) float buf[3 * kMaxHalf];
  alignas(16) float dequantized[2 * kMaxHalf];
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
    for (int f = 0; f < half; f += 4) {
      float32x4_t re, im;
      if (f16) {
        const auto* k = reinterpret_cast<const uint16_t*>(row);
        re = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(k + f)));
        im = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(k + half + f)));
      } else {
        const auto* k = reinterpret_cast<const float*>(row);
        re = vld1q_f32(k + f);
        im = vld1q_f32(k + half + f);
      }
      vst1q_f32(kre + f, re);
      vst1q_f32(kim + f, im);
      vst1q_f32(knorm + f, vsqrtq_f32(vfmaq_f32(vmulq_f32(im, im), re, re)));
    }
    for (int j = 0; j < n_heads; ++j) {
      const float* cr = heads[j].c_re();
      const float* ci = heads[j].c_im();
      const float* w = heads[j].w();
      float32x4_t acc = vdupq_n_f32(0);
      for (int f = 0; f < half; f += 4) {
        acc = vfmaq_f32(acc, vld1q_f32(cr + f), vld1q_f32(kre + f));
        acc = vfmaq_f32(acc, vld1q_f32(ci + f), vld1q_f32(kim + f));
        acc = vfmaq_f32(acc, vld1q_f32(w + f), vld1q_f32(knorm + f));
      }
      out[j * n + i] = vaddvq_f32(acc);
    }
  }
}

}  // namespace triattn::detail

#endif  // __aarch64__
