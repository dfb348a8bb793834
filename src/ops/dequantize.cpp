// dequantize_row: quantized/half rows -> f32, block by block (GGML layouts, quant_blocks.h).
// Used for embedding lookups and tests, not on the matmul path, so plain scalar code.
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

namespace {

void dequant_q8_0(const BlockQ8_0* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int i = 0; i < kQK; ++i) y[i] = d * b->qs[i];
}

void dequant_q4_0(const BlockQ4_0* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * ((b->qs[j] & 0xF) - 8);
    y[j + kQK / 2] = d * ((b->qs[j] >> 4) - 8);
  }
}

// Shared by Q4_K and Q5_K: qh is null for Q4_K.
void dequant_k4(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qh,
                const uint8_t* qs, float* y) {
  const float d = f16_to_f32(d16), dmin = f16_to_f32(dmin16);
  for (int c = 0; c < 4; ++c) {
    uint8_t sc_lo, m_lo, sc_hi, m_hi;
    unpack_scale_min_k4(2 * c, scales, &sc_lo, &m_lo);
    unpack_scale_min_k4(2 * c + 1, scales, &sc_hi, &m_hi);
    const uint8_t* q = qs + 32 * c;
    for (int l = 0; l < 32; ++l) {
      int lo = q[l] & 0xF, hi = q[l] >> 4;
      if (qh) {
        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      y[64 * c + l] = d * sc_lo * lo - dmin * m_lo;
      y[64 * c + 32 + l] = d * sc_hi * hi - dmin * m_hi;
    }
  }
}

void dequant_q6_k(const BlockQ6_K* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b->ql + 64 * h;
    const uint8_t* qh = b->qh + 32 * h;
    const int8_t* sc = b->scales + 8 * h;
    float* o = y + 128 * h;
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q0 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      o[l] = d * sc[s] * q0;
      o[l + 32] = d * sc[s + 2] * q1;
      o[l + 64] = d * sc[s + 4] * q2;
      o[l + 96] = d * sc[s + 6] * q3;
    }
  }
}

void dequant_mxfp4(const BlockMxfp4* b, float* y) {
  const float d = mxfp4_scale(b->e);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * kMxfp4Values[b->qs[j] & 0xF];
    y[j + kQK / 2] = d * kMxfp4Values[b->qs[j] >> 4];
  }
}

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = static_cast<int64_t>(row_bytes(t, n) / block_bytes(t));  // checks n
  const auto* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::Q8_0:
      for (int64_t b = 0; b < nb; ++b)
        dequant_q8_0(reinterpret_cast<const BlockQ8_0*>(p) + b, dst + b * kQK);
      return;
    case DType::Q4_0:
      for (int64_t b = 0; b < nb; ++b)
        dequant_q4_0(reinterpret_cast<const BlockQ4_0*>(p) + b, dst + b * kQK);
      return;
    case DType::Q4_K:
      for (int64_t b = 0; b < nb; ++b) {
        const auto* k = reinterpret_cast<const BlockQ4_K*>(p) + b;
        dequant_k4(k->d, k->dmin, k->scales, nullptr, k->qs, dst + b * kQKK);
      }
      return;
    case DType::Q5_K:
      for (int64_t b = 0; b < nb; ++b) {
        const auto* k = reinterpret_cast<const BlockQ5_K*>(p) + b;
        dequant_k4(k->d, k->dmin, k->scales, k->qh, k->qs, dst + b * kQKK);
      }
      return;
    case DType::Q6_K:
      for (int64_t b = 0; b < nb; ++b)
        dequant_q6_k(reinterpret_cast<const BlockQ6_K*>(p) + b, dst + b * kQKK);
      return;
    case DType::MXFP4:
      for (int64_t b = 0; b < nb; ++b)
        dequant_mxfp4(reinterpret_cast<const BlockMxfp4*>(p) + b, dst + b * kQK);
      return;
    case DType::Q8_0x4:
    case DType::Q8_0x16:
    case DType::Q4_Kx8:
    case DType::Q4_0x8:
      fail("dequantize_row: ", dtype_name(t), " rows are interleaved; use dequantize_matrix_row");
    case DType::I32:
    case DType::U8:
      break;
  }
  fail("dequantize_row: type ", dtype_name(t), " is not a float or quantized type");
}

}  // namespace triattn::ops
