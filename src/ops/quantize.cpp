// quantize_row: f32 rows -> the GGML block formats (quant_blocks.h). Used by the model maker
// and tests, not per token, so it favours simple, bounded error over llama.cpp's searches:
//   Q8_0: d = amax/127, q = round(x/d)                       error <= d/2
//   Q4_0: d = (value of largest magnitude)/-8, as GGML does  error <= |d|/2
//   Q4_K/Q5_K: per sub-block of 32 a min rounded up and a step rounded up so the 4/5-bit
//     grid covers the sub-block's range                      error <= step_j/2
//   Q6_K: per sub-block of 16 a symmetric step rounded up   error <= step_k/2
//   MXFP4: the smallest power-of-two scale that does not clip, nearest E2M1 value
// (plus the f16 rounding of the super-block scales, which can clip by ~2^-11 relative).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

namespace {

// Stores v as f16 and returns the value actually stored.
float store_f16(float v, uint16_t* dst) {
  *dst = f32_to_f16(v);
  return f16_to_f32(*dst);
}

void quant_q8_0(const float* x, BlockQ8_0* b) {
  float amax = 0;
  for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d > 0 ? 1.0f / d : 0.0f;
  b->d = f32_to_f16(d);
  for (int i = 0; i < kQK; ++i) b->qs[i] = static_cast<int8_t>(std::lround(x[i] * id));
}

void quant_q4_0(const float* x, BlockQ4_0* b) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < kQK; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  // The extreme value lands on q = 0 (i.e. -8), which uses the asymmetric grid's extra level.
  const float d = vmax / -8.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  b->d = f32_to_f16(d);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + kQK / 2] * id + 8.5f));
    b->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// Inverse of unpack_scale_min_k4.
void pack_scale_min_k4(const uint8_t sc[8], const uint8_t m[8], uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Q4_K (nmax 15) and Q5_K (nmax 31): fills d, dmin, scales and the quants q[256] in [0, nmax].
void quant_k4(const float* x, int nmax, uint16_t* d16, uint16_t* dmin16, uint8_t* scales,
              uint8_t q[kQKK]) {
  float mins[8], maxs[8];
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float lo = 0, hi = 0;  // the grid starts at -min <= 0 so mins stay unsigned
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    mins[j] = -lo;
    maxs[j] = hi;
    max_min = std::max(max_min, mins[j]);
  }
  const float dmin = store_f16(max_min / 63.0f, dmin16);
  uint8_t m[8], sc[8];
  float need[8], max_need = 0;
  for (int j = 0; j < 8; ++j) {
    // Round the min up so the grid reaches the sub-block's lowest value...
    m[j] = dmin > 0 ? static_cast<uint8_t>(std::min(63.0f, std::ceil(mins[j] / dmin))) : 0;
    // ...and the step up so nmax steps reach its highest.
    need[j] = (maxs[j] + m[j] * dmin) / static_cast<float>(nmax);
    max_need = std::max(max_need, need[j]);
  }
  const float d = store_f16(max_need / 63.0f, d16);
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? static_cast<uint8_t>(std::min(63.0f, std::ceil(need[j] / d))) : 0;
    const float step = d * sc[j], offset = dmin * m[j];
    for (int l = 0; l < 32; ++l) {
      const int v = step > 0 ? static_cast<int>(std::lround((x[32 * j + l] + offset) / step)) : 0;
      q[32 * j + l] = static_cast<uint8_t>(std::clamp(v, 0, nmax));
    }
  }
  pack_scale_min_k4(sc, m, scales);
}

void quant_q4_k(const float* x, BlockQ4_K* b) {
  uint8_t q[kQKK];
  quant_k4(x, 15, &b->d, &b->dmin, b->scales, q);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b->qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void quant_q5_k(const float* x, BlockQ5_K* b) {
  uint8_t q[kQKK];
  quant_k4(x, 31, &b->d, &b->dmin, b->scales, q);
  std::memset(b->qh, 0, sizeof b->qh);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      b->qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      b->qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
}

void quant_q6_k(const float* x, BlockQ6_K* b) {
  float need[16], max_need = 0;
  for (int k = 0; k < 16; ++k) {
    float amax = 0;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * k + l]));
    need[k] = amax / 31.0f;  // symmetric: q - 32 in [-31, 31] (the -32 level stays unused)
    max_need = std::max(max_need, need[k]);
  }
  const float d = store_f16(max_need / 127.0f, &b->d);
  uint8_t q[kQKK];
  for (int k = 0; k < 16; ++k) {
    const int s = d > 0 ? static_cast<int>(std::min(127.0f, std::ceil(need[k] / d))) : 0;
    b->scales[k] = static_cast<int8_t>(s);
    const float step = d * s;
    for (int l = 0; l < 16; ++l) {
      const int v = step > 0 ? static_cast<int>(std::lround(x[16 * k + l] / step)) : 0;
      q[16 * k + l] = static_cast<uint8_t>(std::clamp(v, -32, 31) + 32);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qq = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0xF) | ((qq[l + 64] & 0xF) << 4));
      b->ql[64 * h + 32 + l] = static_cast<uint8_t>((qq[l + 32] & 0xF) | ((qq[l + 96] & 0xF) << 4));
      b->qh[32 * h + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                               ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
    }
  }
}

// MXFP4: the smallest power-of-two scale 2^k with amax <= 6 * 2^k (no value clips), each
// element the nearest E2M1 value (ties to the smaller magnitude). Error <= 2^k (half the
// widest step, between 4 and 6) per element, and at most a quarter of |x| for the rest.
void quant_mxfp4(const float* x, BlockMxfp4* b) {
  float amax = 0;
  for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  int k = -127;
  if (amax > 0) k = std::clamp(static_cast<int>(std::ceil(std::log2(amax / 6.0))), -127, 127);
  while (k < 127 && amax > 6.0 * std::ldexp(1.0, k)) ++k;  // log2 rounding at exact powers
  b->e = static_cast<uint8_t>(k + 127);
  const double inv = std::ldexp(1.0, -k);
  auto code = [&](float v) {
    const double a = std::fabs(v) * inv;  // in [0, 6]; kMxfp4Values holds 2x the grid
    int best = 0;
    for (int c = 1; c < 8; ++c)
      if (std::fabs(a - kMxfp4Values[c] / 2.0) < std::fabs(a - kMxfp4Values[best] / 2.0)) best = c;
    return static_cast<uint8_t>(best | (v < 0 && best != 0 ? 8 : 0));
  };
  for (int j = 0; j < kQK / 2; ++j) b->qs[j] = static_cast<uint8_t>(code(x[j]) | (code(x[j + kQK / 2]) << 4));
}

}  // namespace

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  const int64_t nb = static_cast<int64_t>(row_bytes(t, n) / block_bytes(t));  // checks n
  auto* p = static_cast<uint8_t*>(dst);
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case DType::Q8_0:
      for (int64_t b = 0; b < nb; ++b)
        quant_q8_0(src + b * kQK, reinterpret_cast<BlockQ8_0*>(p) + b);
      return;
    case DType::Q4_0:
      for (int64_t b = 0; b < nb; ++b)
        quant_q4_0(src + b * kQK, reinterpret_cast<BlockQ4_0*>(p) + b);
      return;
    case DType::Q4_K:
      for (int64_t b = 0; b < nb; ++b)
        quant_q4_k(src + b * kQKK, reinterpret_cast<BlockQ4_K*>(p) + b);
      return;
    case DType::Q5_K:
      for (int64_t b = 0; b < nb; ++b)
        quant_q5_k(src + b * kQKK, reinterpret_cast<BlockQ5_K*>(p) + b);
      return;
    case DType::Q6_K:
      for (int64_t b = 0; b < nb; ++b)
        quant_q6_k(src + b * kQKK, reinterpret_cast<BlockQ6_K*>(p) + b);
      return;
    case DType::MXFP4:
      for (int64_t b = 0; b < nb; ++b)
        quant_mxfp4(src + b * kQK, reinterpret_cast<BlockMxfp4*>(p) + b);
      return;
    case DType::I32:
    case DType::U8:
    case DType::Q8_0x4:  // made from Q8_0 / Q4_K / Q4_0 rows by ops::interleave
    case DType::Q8_0x16:
    case DType::Q4_Kx8:
    case DType::Q4_0x8:
      break;
  }
  fail("quantize_row: cannot quantize to ", dtype_name(t));
}

}  // namespace triattn::ops
