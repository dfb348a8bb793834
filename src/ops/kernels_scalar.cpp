// Portable kernels (no intrinsics): the fallback on any CPU and the pattern the SIMD files
// follow. Quantized matmuls work on integer dot products of the quantized activations, just
// like the SIMD paths, so all ISAs agree to float rounding.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "ops/cpu_dispatch.h"
#include "ops/mxfp4_kernels.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

namespace {

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Row dot products, one per weight type: w is a weight row, x an activation row.
float dot_row_f32(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* a = reinterpret_cast<const float*>(w);
  const auto* b = reinterpret_cast<const float*>(x);
  float s[4] = {0, 0, 0, 0};  // independent partial sums: fewer rounding steps per sum
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += a[i + k] * b[i + k];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

template <float (*Cvt)(uint16_t)>
float dot_row_half(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* b = reinterpret_cast<const float*>(x);
  float s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += Cvt(load_u16(w + 2 * (i + k))) * b[i + k];
  for (; i < n; ++i) s[0] += Cvt(load_u16(w + 2 * i)) * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

float dot_row_q8_0(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int32_t s = 0;
    for (int i = 0; i < kQK; ++i) s += wb[b].qs[i] * xb[b].qs[i];
    sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(s);
  }
  return sum;
}

float dot_row_q4_0(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int32_t s = 0;
    for (int j = 0; j < kQK / 2; ++j)
      s += (wb[b].qs[j] & 0xF) * xb[b].qs[j] + (wb[b].qs[j] >> 4) * xb[b].qs[j + kQK / 2];
    s -= 8 * xb[b].sum;  // the -8 offset of every quant, folded
    sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(s);
  }
  return sum;
}

// Q4_K and Q5_K (qh null for Q4_K): sum_j d*sc_j*dot_j - dmin*m_j*sum_j(x).
float dot_block_k4(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qh,
                   const uint8_t* qs, const ActQ8K& a) {
  int32_t sumi = 0, summ = 0;
  for (int c = 0; c < 4; ++c) {
    uint8_t sc_lo, m_lo, sc_hi, m_hi;
    unpack_scale_min_k4(2 * c, scales, &sc_lo, &m_lo);
    unpack_scale_min_k4(2 * c + 1, scales, &sc_hi, &m_hi);
    int32_t lo = 0, hi = 0;
    for (int l = 0; l < 32; ++l) {
      int ql = qs[32 * c + l] & 0xF, qhv = qs[32 * c + l] >> 4;
      if (qh) {
        ql |= ((qh[l] >> (2 * c)) & 1) << 4;
        qhv |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      lo += ql * a.qs[64 * c + l];
      hi += qhv * a.qs[64 * c + 32 + l];
    }
    sumi += sc_lo * lo + sc_hi * hi;
    summ += m_lo * (a.bsums[4 * c] + a.bsums[4 * c + 1]) +
            m_hi * (a.bsums[4 * c + 2] + a.bsums[4 * c + 3]);
  }
  return a.d * (f16_to_f32(d16) * static_cast<float>(sumi) -
                f16_to_f32(dmin16) * static_cast<float>(summ));
}

float dot_row_q4_k(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ4_K*>(w);
  const auto* xb = reinterpret_cast<const ActQ8K*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQKK; ++b)
    sum += dot_block_k4(wb[b].d, wb[b].dmin, wb[b].scales, nullptr, wb[b].qs, xb[b]);
  return sum;
}

float dot_row_q5_k(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ5_K*>(w);
  const auto* xb = reinterpret_cast<const ActQ8K*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQKK; ++b)
    sum += dot_block_k4(wb[b].d, wb[b].dmin, wb[b].scales, wb[b].qh, wb[b].qs, xb[b]);
  return sum;
}

float dot_row_q6_k(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xb = reinterpret_cast<const ActQ8K*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const BlockQ6_K& k = wb[b];
    const ActQ8K& a = xb[b];
    int32_t sumi = 0;
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t ql0 = k.ql[64 * h + l], ql1 = k.ql[64 * h + 32 + l], qh = k.qh[32 * h + l];
        const int q[4] = {(ql0 & 0xF) | ((qh & 3) << 4), (ql1 & 0xF) | (((qh >> 2) & 3) << 4),
                          (ql0 >> 4) | (((qh >> 4) & 3) << 4), (ql1 >> 4) | (((qh >> 6) & 3) << 4)};
        for (int g = 0; g < 4; ++g) {
          const int e = 128 * h + 32 * g + l;
          sumi += k.scales[e / 16] * q[g] * a.qs[e];
        }
      }
    int32_t offset = 0;  // the -32 of every quant, through the per-16 sums
    for (int s = 0; s < 16; ++s) offset += k.scales[s] * a.bsums[s];
    sum += f16_to_f32(k.d) * a.d * static_cast<float>(sumi - 32 * offset);
  }
  return sum;
}

// Each weight row is dotted with every token while it is hot in cache.
template <float (*Dot)(const uint8_t*, const uint8_t*, int64_t)>
void matmul_rows(const MatmulJob& j, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t t = 0; t < j.n_tokens; ++t)
      j.y[t * j.y_stride + r] = Dot(j.w + r * j.w_stride, j.x + t * j.x_stride, j.cols);
}

// The interleaved layouts of 32-element blocks with one f16 scale per row (Q8_0x4, Q8_0x16, Q4_0x8):
// row r's integer dot with the activation block is int_dot(block, act, r), scaled and summed
// in block order exactly as the file type's row kernel does, so they give its bits.
template <int kRows, class Block, class IntDot>
void matmul_rows_grouped(const MatmulJob& j, int64_t r0, int64_t r1, IntDot int_dot) {
  const int64_t nb = j.cols / kQK;
  for (int64_t g = r0 / kRows; g < r1 / kRows; ++g) {  // r0, r1: multiples of kRows
    const auto* wb = reinterpret_cast<const Block*>(j.w + kRows * g * j.w_stride);
    for (int64_t t = 0; t < j.n_tokens; ++t) {
      const auto* xb = reinterpret_cast<const ActQ8*>(j.x + t * j.x_stride);
      float sum[kRows] = {};
      for (int64_t b = 0; b < nb; ++b)
        for (int r = 0; r < kRows; ++r)
          sum[r] += f16_to_f32(wb[b].d[r]) * xb[b].d * static_cast<float>(int_dot(wb[b], xb[b], r));
      for (int r = 0; r < kRows; ++r) j.y[t * j.y_stride + kRows * g + r] = sum[r];
    }
  }
}

// Q8_0x4 (quant_blocks.h): dot_row_q8_0's integer dots for the four rows of each group.
void matmul_rows_q8_0x4(const MatmulJob& j, int64_t r0, int64_t r1) {
  matmul_rows_grouped<4, BlockQ8_0x4>(j, r0, r1, [](const BlockQ8_0x4& w, const ActQ8& a, int r) {
    int32_t s = 0;
    for (int c = 0; c < 4; ++c)
      for (int k = 0; k < 8; ++k) s += w.qs[32 * c + 8 * r + k] * a.qs[8 * c + k];
    return s;
  });
}

// Q8_0x16 (quant_blocks.h): the same for the sixteen rows of each group, quants stored + 128.
void matmul_rows_q8_0x16(const MatmulJob& j, int64_t r0, int64_t r1) {
  matmul_rows_grouped<16, BlockQ8_0x16>(j, r0, r1, [](const BlockQ8_0x16& w, const ActQ8& a, int r) {
    int32_t s = 0;
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i) s += (w.qs[64 * c + 4 * r + i] - 128) * a.qs[4 * c + i];
    return s;
  });
}

// Q4_0x8 (quant_blocks.h): dot_row_q4_0's integer dots (the -8 offset folded) for the eight
// rows of each group.
void matmul_rows_q4_0x8(const MatmulJob& j, int64_t r0, int64_t r1) {
  matmul_rows_grouped<8, BlockQ4_0x8>(j, r0, r1, [](const BlockQ4_0x8& w, const ActQ8& a, int r) {
    int32_t s = 0;
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 4; ++i) {
        const uint8_t byte = w.qs[32 * k + 4 * r + i];
        s += (byte & 0xF) * a.qs[8 * k + i] + (byte >> 4) * a.qs[8 * k + 4 + i];
      }
    return s - 8 * a.sum;
  });
}

// Q4_Kx8 (quant_blocks.h): dot_block_k4's integer sums for the eight rows of each group and
// the same float steps, so it gives Q4_K's bits exactly.
void matmul_rows_q4_kx8(const MatmulJob& j, int64_t r0, int64_t r1) {
  const int64_t nb = j.cols / kQKK;
  for (int64_t g = r0 / 8; g < r1 / 8; ++g) {  // r0, r1: multiples of 8
    const auto* wb = reinterpret_cast<const BlockQ4_Kx8*>(j.w + 8 * g * j.w_stride);
    for (int64_t t = 0; t < j.n_tokens; ++t) {
      const auto* xb = reinterpret_cast<const ActQ8K*>(j.x + t * j.x_stride);
      for (int r = 0; r < 8; ++r) {
        float sum = 0;
        for (int64_t b = 0; b < nb; ++b) {
          const BlockQ4_Kx8& w = wb[b];
          const ActQ8K& a = xb[b];
          int32_t sumi = 0, summ = 0;
          for (int sub = 0; sub < 8; ++sub) {
            int32_t s = 0;
            for (int k = 0; k < 4; ++k)
              for (int i = 0; i < 4; ++i) {
                const uint8_t byte = w.qs[128 * sub + 32 * k + 4 * r + i];
                s += (byte & 0xF) * a.qs[32 * sub + 8 * k + i] + (byte >> 4) * a.qs[32 * sub + 8 * k + 4 + i];
              }
            sumi += w.scales[8 * sub + r] * s;
            summ += w.mins[8 * sub + r] * (a.bsums[2 * sub] + a.bsums[2 * sub + 1]);
          }
          sum += a.d * (f16_to_f32(w.d[r]) * static_cast<float>(sumi) -
                        f16_to_f32(w.dmin[r]) * static_cast<float>(summ));
        }
        j.y[t * j.y_stride + 8 * g + r] = sum;
      }
    }
  }
}

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
  return dot_row_f32(reinterpret_cast<const uint8_t*>(a), reinterpret_cast<const uint8_t*>(b), n);
}

void axpy_f32_scalar(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void rmsnorm_scalar(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void softmax_scalar(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu_scalar(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void rope_scalar(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int f = 0; f < half; ++f) {
      const float a = v[f], b = v[f + half];
      const float ac = a * cos[f], bs = b * sin[f], as = a * sin[f], bc = b * cos[f];
      v[f] = ac - bs;
      v[f + half] = as + bc;
    }
  }
}

// Quantizes n values with one scale d = amax/127 and q = nearbyint(x / d) computed as
// x * (1/d) in float (ties to even); returns d. The SIMD versions compute the same bits.
float quantize_group(const float* x, int8_t* q, int n) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d > 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
  return d;
}

void quantize_act_q8_scalar(const float* x, ActQ8* out, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    ActQ8& a = out[b];
    a.d = quantize_group(x + b * kQK, a.qs, kQK);
    int32_t s = 0;
    for (int i = 0; i < kQK; ++i) s += a.qs[i];
    a.sum = s;
  }
}

void quantize_act_q8k_scalar(const float* x, ActQ8K* out, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    ActQ8K& a = out[b];
    a.d = quantize_group(x + b * kQKK, a.qs, kQKK);
    for (int k = 0; k < kQKK / 16; ++k) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += a.qs[16 * k + i];
      a.bsums[k] = static_cast<int16_t>(s);
    }
  }
}

void f32_to_f16_row_scalar(const float* x, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

KernelTable make_table() {
  KernelTable t;
  t.isa = Isa::Scalar;
  t.matmul[static_cast<int>(DType::F32)] = matmul_rows<dot_row_f32>;
  t.matmul[static_cast<int>(DType::F16)] = matmul_rows<dot_row_half<f16_to_f32>>;
  t.matmul[static_cast<int>(DType::BF16)] = matmul_rows<dot_row_half<bf16_to_f32>>;
  t.matmul[static_cast<int>(DType::Q8_0)] = matmul_rows<dot_row_q8_0>;
  t.matmul[static_cast<int>(DType::Q8_0x4)] = matmul_rows_q8_0x4;
  t.matmul[static_cast<int>(DType::Q8_0x16)] = matmul_rows_q8_0x16;
  t.matmul[static_cast<int>(DType::Q4_Kx8)] = matmul_rows_q4_kx8;
  t.matmul[static_cast<int>(DType::Q4_0)] = matmul_rows<dot_row_q4_0>;
  t.matmul[static_cast<int>(DType::Q4_0x8)] = matmul_rows_q4_0x8;
  t.matmul[static_cast<int>(DType::Q4_K)] = matmul_rows<dot_row_q4_k>;
  t.matmul[static_cast<int>(DType::Q5_K)] = matmul_rows<dot_row_q5_k>;
  t.matmul[static_cast<int>(DType::Q6_K)] = matmul_rows<dot_row_q6_k>;
  fill_mxfp4_scalar(t);
  t.dot_f32 = dot_f32_scalar;
  t.axpy_f32 = axpy_f32_scalar;
  t.rmsnorm = rmsnorm_scalar;
  t.softmax = softmax_scalar;
  t.swiglu = swiglu_scalar;
  t.rope = rope_scalar;
  t.quantize_act_q8 = quantize_act_q8_scalar;
  t.quantize_act_q8k = quantize_act_q8k_scalar;
  t.f32_to_f16_row = f32_to_f16_row_scalar;
  t.f32_to_q8_0_row = [](const float* x, void* out, int64_t n) { quantize_row(DType::Q8_0, x, out, n); };
  return t;
}

}  // namespace

const KernelTable& scalar_kernels() {
  static const KernelTable t = make_table();
  return t;
}

}  // namespace triattn::ops
