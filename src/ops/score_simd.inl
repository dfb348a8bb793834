// The SIMD twin of score_keys_scalar (score_keys.cpp), written once and compiled by
// score_avx2.cpp (8 bands per step, F16C) and score_neon.cpp (4 bands, FCVTL), which define,
// before including it, TRIATTN_SCORE_NAME and the vector vocabulary below (V, kBands, vload,
// vload_f16, vstore, vfma, vmul, vsqrt, vzero, vhsum) in an anonymous namespace. F16 keys are
// converted as they are loaded; a Q8_0 key is dequantized into a row on the stack first.
// Called only through the kernel table (an ISA this CPU runs), for half % kBands == 0 and
// half <= kMaxHalf.
#include "ops/score_kernels.h"
#include "ops/ops.h"

namespace triattn::detail {

void TRIATTN_SCORE_NAME(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                        std::span<const int32_t> rows, float* out) {
  const int half = heads[0].half;
  const bool f16 = type == DType::F16;
  alignas(64) float buf[3 * kMaxHalf];
  alignas(64) float dequantized[2 * kMaxHalf];
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
    // |K_f| is shared by every query head of the group: computed once per key.
    for (int f = 0; f < half; f += kBands) {
      V re, im;
      if (f16) {
        const auto* k = reinterpret_cast<const uint16_t*>(row);
        re = vload_f16(k + f);
        im = vload_f16(k + half + f);
      } else {
        const auto* k = reinterpret_cast<const float*>(row);
        re = vload(k + f);
        im = vload(k + half + f);
      }
      vstore(kre + f, re);
      vstore(kim + f, im);
      vstore(knorm + f, vsqrt(vfma(re, re, vmul(im, im))));
    }
    for (int j = 0; j < n_heads; ++j) {
      const float* cr = heads[j].c_re();
      const float* ci = heads[j].c_im();
      const float* w = heads[j].w();
      V acc = vzero();
      for (int f = 0; f < half; f += kBands) {
        acc = vfma(vload(cr + f), vload(kre + f), acc);
        acc = vfma(vload(ci + f), vload(kim + f), acc);
        acc = vfma(vload(w + f), vload(knorm + f), acc);
      }
      out[j * n + i] = vhsum(acc);
    }
  }
}

}  // namespace triattn::detail
