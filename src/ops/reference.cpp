#include "ops/reference.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "ops/quant_blocks.h"

namespace triattn::ops::ref {

namespace {
uint16_t u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
}  // namespace

float element(DType t, const void* row, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(row);
  switch (t) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::F16:
      return f16_to_f32(u16(p + 2 * i));
    case DType::BF16:
      return bf16_to_f32(u16(p + 2 * i));
    case DType::Q8_0: {
      const auto& b = reinterpret_cast<const BlockQ8_0*>(p)[i / kQK];
      return f16_to_f32(b.d) * static_cast<float>(b.qs[i % kQK]);
    }
    case DType::Q4_0: {
      const auto& b = reinterpret_cast<const BlockQ4_0*>(p)[i / kQK];
      const int j = static_cast<int>(i % kQK);
      const uint8_t byte = b.qs[j % 16];
      const int q = j < 16 ? (byte & 0xF) : (byte >> 4);
      return f16_to_f32(b.d) * static_cast<float>(q - 8);
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const int e = static_cast<int>(i % kQKK);
      const int sub = e / 32, chunk = e / 64, l = e % 32;
      uint16_t d, dmin;
      const uint8_t *scales, *qs, *qh = nullptr;
      if (t == DType::Q4_K) {
        const auto& b = reinterpret_cast<const BlockQ4_K*>(p)[i / kQKK];
        d = b.d, dmin = b.dmin, scales = b.scales, qs = b.qs;
      } else {
        const auto& b = reinterpret_cast<const BlockQ5_K*>(p)[i / kQKK];
        d = b.d, dmin = b.dmin, scales = b.scales, qs = b.qs, qh = b.qh;
      }
      const uint8_t byte = qs[32 * chunk + l];
      int q = (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
      if (qh) q += ((qh[l] >> sub) & 1) * 16;  // bit `sub` of qh[l]: 2*chunk or 2*chunk+1
      uint8_t sc, m;
      unpack_scale_min_k4(sub, scales, &sc, &m);
      return f16_to_f32(d) * sc * static_cast<float>(q) - f16_to_f32(dmin) * m;
    }
    case DType::Q6_K: {
      const auto& b = reinterpret_cast<const BlockQ6_K*>(p)[i / kQKK];
      const int e = static_cast<int>(i % kQKK);
      const int h = e / 128, g = (e % 128) / 32, l = e % 32;
      const uint8_t byte = b.ql[64 * h + 32 * (g & 1) + l];
      const int lo = g < 2 ? (byte & 0xF) : (byte >> 4);
      const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
      return f16_to_f32(b.d) * b.scales[e / 16] * static_cast<float>((lo | hi << 4) - 32);
    }
    case DType::MXFP4: {
      // Decoded from the format's definition, not from quant_blocks.h's table: E2M1 is
      // sign, 2 exponent bits, 1 mantissa bit (exponent 0: subnormal 0.5 * m); the block
      // scale is 2^(e - 127).
      const uint8_t* block = p + (i / kQK) * 17;
      const int j = static_cast<int>(i % kQK);
      const uint8_t byte = block[1 + j % 16];
      const int code = j < 16 ? (byte & 0xF) : (byte >> 4);
      const int ex = (code >> 1) & 3, m = code & 1;
      const double mag = ex == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, ex - 1);
      return static_cast<float>((code & 8 ? -mag : mag) * std::ldexp(1.0, block[0] - 127));
    }
    case DType::I32:
    case DType::U8:
    case DType::Q8_0x4:  // rows are not contiguous: see matrix_element
    case DType::Q8_0x16:
    case DType::Q4_Kx8:
    case DType::Q4_0x8:
      break;
  }
  fail("ref::element: unsupported type ", dtype_name(t));
}

void dequantize_row(DType t, const void* row, float* out, int64_t n) {
  row_bytes(t, n);  // validates n
  for (int64_t i = 0; i < n; ++i) out[i] = element(t, row, i);
}

float matrix_element(const TensorView& w, int64_t r, int64_t i) {
  if (w.type == DType::Q4_Kx8) {
    // Group r/8, block column i/256 of 1184 bytes: d[8], dmin[8] (f16), scales[8][8] and
    // mins[8][8] by sub-block then row, then sub-block j's 4 chunks of 8 rows x 4 bytes, whose
    // low nibbles hold elements 8k..8k+3 of the sub-block and high nibbles 8k+4..8k+7.
    const auto* group = static_cast<const uint8_t*>(w.data) + (r / 8) * 8 * w.row_stride();
    const uint8_t* block = group + (i / 256) * 1184;
    const int lane = static_cast<int>(r % 8), e = static_cast<int>(i % 256);
    const int j = e / 32, k = (e % 32) / 8, h = (e % 8) / 4, n = e % 4;
    const float d = f16_to_f32(u16(block + 2 * lane)), dmin = f16_to_f32(u16(block + 16 + 2 * lane));
    const uint8_t sc = block[32 + 8 * j + lane], m = block[96 + 8 * j + lane];
    const uint8_t byte = block[160 + 128 * j + 32 * k + 4 * lane + n];
    const int q = h ? byte >> 4 : byte & 0xF;
    return d * sc * static_cast<float>(q) - dmin * m;
  }
  if (w.type == DType::Q4_0x8) {
    // Group r/8, block column i/32 of 144 bytes: d[8] (f16), then chunk k = (i%32)/8 of rows
    // 0..7 as 4 bytes each, whose low nibbles hold elements 8k..8k+3 and high nibbles 8k+4..8k+7.
    const auto* group = static_cast<const uint8_t*>(w.data) + (r / 8) * 8 * w.row_stride();
    const uint8_t* block = group + (i / 32) * 144;
    const int lane = static_cast<int>(r % 8), e = static_cast<int>(i % 32);
    const uint8_t byte = block[16 + 32 * (e / 8) + 4 * lane + e % 4];
    const int q = (e % 8) / 4 ? byte >> 4 : byte & 0xF;
    return f16_to_f32(u16(block + 2 * lane)) * static_cast<float>(q - 8);
  }
  if (w.type == DType::Q8_0x16) {
    // Group r/16, block column i/32 of 544 bytes: 16 f16 scales, then chunk c = (i%32)/4 of
    // rows 0..15 as 4 bytes each, every quant stored plus 128.
    const auto* group = static_cast<const uint8_t*>(w.data) + (r / 16) * 16 * w.row_stride();
    const uint8_t* block = group + (i / 32) * (16 * 34);
    const int lane = static_cast<int>(r % 16), e = static_cast<int>(i % 32);
    const int q = block[32 + 64 * (e / 4) + 4 * lane + e % 4] - 128;
    return f16_to_f32(u16(block + 2 * lane)) * static_cast<float>(q);
  }
  if (w.type != DType::Q8_0x4) return element(w.type, w.row(r), i);
  // Group r/4, block column i/32: 4 f16 scales, then chunk c = (i%32)/8 of rows 0..3.
  const auto* group = static_cast<const uint8_t*>(w.data) + (r / 4) * 4 * w.row_stride();
  const uint8_t* block = group + (i / 32) * (4 * 34);
  const int lane = static_cast<int>(r % 4), e = static_cast<int>(i % 32);
  const float d = f16_to_f32(u16(block + 2 * lane));
  const auto q = static_cast<int8_t>(block[8 + 32 * (e / 8) + 8 * lane + e % 8]);
  return d * static_cast<float>(q);
}

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y) {
  const int64_t rows = w.shape.at(0), cols = w.shape.at(1);
  std::vector<float> wr(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i) wr[i] = matrix_element(w, r, i);
    for (int64_t t = 0; t < n_tokens; ++t)
      y[t * rows + r] = static_cast<float>(dot(wr.data(), x + t * cols, cols));
  }
}

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(y[i] + static_cast<double>(a) * x[i]);
}

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const double ms = dot(x, x, n) / static_cast<double>(n);
  const double scale = 1.0 / std::sqrt(ms + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] * scale * weight[i]);
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  std::vector<double> e(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += e[i] = std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(e[i] / sum);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void rope(float* x, int n_heads, int head_dim, const double* angles) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int f = 0; f < half; ++f) {
      const double a = v[f], b = v[f + half], c = std::cos(angles[f]), s = std::sin(angles[f]);
      v[f] = static_cast<float>(a * c - b * s);
      v[f + half] = static_cast<float>(a * s + b * c);
    }
  }
}

}  // namespace triattn::ops::ref
