// The ARM (AArch64 Advanced SIMD) kernel tables, compiled twice as the x86 ones are
// (x86_matmul.inl): kernels_neon.cpp for every AArch64 CPU (ARMv8.0), and
// kernels_neon_dotprod.cpp with TRIATTN_NEON_DOTPROD=1 for CPUs with the ARMv8.2 dot product
// (SDOT), chosen at run time from HWCAP (cpu_features.cpp). Everything sits in an anonymous
// namespace so the two builds stay separate functions.
//
// Integer dot products are written against one primitive, dot4 (SDOT's lanes: lane i adds the
// products of bytes 4i..4i+3), so the interleaved layouts, whose 32-bit lanes are rows, work
// the same with or without SDOT. Each kernel sums blocks in the scalar kernel's order with its
// float steps (scale products rounded the same way, no fused multiply-add across blocks), so
// the quantized matmuls give the scalar table's bits and the activation quantizers the
// scalar's bytes; the float rows (F32, F16, BF16) agree with it to rounding.
// The table starts as a copy of the scalar one, so a type added later without a NEON kernel
// is still computed, just not vectorized.
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "core/half.h"
#include "ops/attention.h"
#include "ops/cpu_dispatch.h"
#include "ops/neon_exp.inl"
#include "ops/quant_blocks.h"
#include "ops/score_kernels.h"

#ifndef TRIATTN_NEON_DOTPROD
#error "define TRIATTN_NEON_DOTPROD before including neon_kernels.inl"
#endif

namespace triattn::ops {
namespace {

// acc lane i += a[4i..4i+3] . b[4i..4i+3].
inline int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if TRIATTN_NEON_DOTPROD
  return vdotq_s32(acc, a, b);
#else
  // Widening products of the low and high halves, added in pairs twice: the same lanes.
  const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  const int32x4_t hi = vpaddlq_s16(vmull_high_s8(a, b));
  return vaddq_s32(acc, vpaddq_s32(lo, hi));
#endif
}

inline int8x16_t load_s8(const int8_t* p) { return vld1q_s8(p); }
inline int8x16_t load_u8_as_s8(const uint8_t* p) { return vreinterpretq_s8_u8(vld1q_u8(p)); }
// Four bytes at p in every 32-bit lane (the activation side of the x8 layouts).
inline int8x16_t broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}
// Eight bytes at p in both 64-bit halves (the activation side of Q8_0x4).
inline int8x16_t broadcast8(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return vreinterpretq_s8_s64(vdupq_n_s64(v));
}
inline int8x16_t low_nibbles(uint8x16_t v) { return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))); }
inline int8x16_t high_nibbles(uint8x16_t v) { return vreinterpretq_s8_u8(vshrq_n_u8(v, 4)); }
inline float32x4_t f16x4_to_f32(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// ---- vector kernels ----

float vec_dot_f32(const float* a, const float* b, int64_t n) {
  float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void vec_axpy_f32(float a, const float* x, float* y, int64_t n) {
  const float32x4_t av = vdupq_n_f32(a);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), av, vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void vec_rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const float ss = vec_dot_f32(x, x, n);
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void vec_softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float32x4_t mv = vdupq_n_f32(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) mv = vmaxq_f32(mv, vld1q_f32(x + i));
  float mx = vmaxvq_f32(mv);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const float32x4_t mxv = vdupq_n_f32(mx);
  float32x4_t sv = vdupq_n_f32(0);
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), mxv));
    vst1q_f32(x + i, e);
    sv = vaddq_f32(sv, e);
  }
  float sum = vaddvq_f32(sv);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
  for (; i < n; ++i) x[i] *= inv;
}

void vec_swiglu(const float* gate, const float* up, float* out, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t sig = vdivq_f32(one, vaddq_f32(one, exp4(vnegq_f32(g))));
    vst1q_f32(out + i, vmulq_f32(vmulq_f32(g, sig), vld1q_f32(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void vec_rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int f = 0;
    for (; f + 4 <= half; f += 4) {
      const float32x4_t a = vld1q_f32(v + f), b = vld1q_f32(v + f + half);
      const float32x4_t c = vld1q_f32(cos + f), s = vld1q_f32(sin + f);
      vst1q_f32(v + f, vfmsq_f32(vmulq_f32(a, c), b, s));
      vst1q_f32(v + f + half, vfmaq_f32(vmulq_f32(b, c), a, s));
    }
    for (; f < half; ++f) {
      const float a = v[f], b = v[f + half];
      const float ac = a * cos[f], bs = b * sin[f], as = a * sin[f], bc = b * cos[f];
      v[f] = ac - bs;
      v[f + half] = as + bc;
    }
  }
}

// ---- quantizers: the scalar kernels' bytes ----

inline float abs_max(const float* x, int n) {  // n a multiple of 4
  float32x4_t m = vdupq_n_f32(0);
  for (int i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxvq_f32(m);
}

// The scale as the scalar quantize_group and quantize.cpp compute it: d = amax / 127 in f32,
// and x times its inverse.
inline float scale_of(float amax, float* id) {
  const float d = amax / 127.0f;
  *id = d > 0 ? 1.0f / d : 0.0f;
  return d;
}

// 32 values x * id rounded to int8 into q; sums[0], sums[1]: the sums of quants 0..15 and
// 16..31. kTiesAway: ties away from zero (FCVTAS: C's lround, GGML's Q8_0 rounding);
// otherwise to even (FCVTNS: nearbyint, the activation formats). One multiply and one
// rounding conversion, as in the scalar code, so the same bits.
template <bool kTiesAway>
inline void quantize_32(const float* x, float id, int8_t* q, int32_t sums[2]) {
  int32x4_t v[8];
  for (int k = 0; k < 8; ++k) {
    const float32x4_t s = vmulq_n_f32(vld1q_f32(x + 4 * k), id);
    v[k] = kTiesAway ? vcvtaq_s32_f32(s) : vcvtnq_s32_f32(s);
  }
  for (int h = 0; h < 2; ++h) {
    const int32x4_t* u = v + 4 * h;
    sums[h] = vaddvq_s32(vaddq_s32(vaddq_s32(u[0], u[1]), vaddq_s32(u[2], u[3])));
    const int16x8_t a = vcombine_s16(vqmovn_s32(u[0]), vqmovn_s32(u[1]));
    const int16x8_t b = vcombine_s16(vqmovn_s32(u[2]), vqmovn_s32(u[3]));
    vst1q_s8(q + 16 * h, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
  }
}

void vec_quantize_act_q8(const float* x, ActQ8* out, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    float id;
    out[b].d = scale_of(abs_max(xb, kQK), &id);
    int32_t sums[2];
    quantize_32<false>(xb, id, out[b].qs, sums);
    out[b].sum = sums[0] + sums[1];
  }
}

void vec_quantize_act_q8k(const float* x, ActQ8K* out, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    float id;
    out[b].d = scale_of(abs_max(xb, kQKK), &id);
    for (int g = 0; g < kQKK / 32; ++g) {
      int32_t sums[2];
      quantize_32<false>(xb + 32 * g, id, out[b].qs + 32 * g, sums);
      out[b].bsums[2 * g] = static_cast<int16_t>(sums[0]);
      out[b].bsums[2 * g + 1] = static_cast<int16_t>(sums[1]);
    }
  }
}

void vec_f32_to_q8_0_row(const float* x, void* out, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    float id;
    blocks[b].d = f32_to_f16(scale_of(abs_max(xb, kQK), &id));
    int32_t sums[2];
    quantize_32<true>(xb, id, blocks[b].qs, sums);
  }
}

// FCVTN rounds to nearest even and overflows to infinity, as f32_to_f16 does.
void vec_f32_to_f16_row(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

// ---- matmul: row dot products (w a weight row, x an activation row) ----

float dot_row_f32(const uint8_t* w, const uint8_t* x, int64_t n) {
  return vec_dot_f32(reinterpret_cast<const float*>(w), reinterpret_cast<const float*>(x), n);
}

// Eight halves at p as two float vectors; BF16 is the top half of an f32.
template <bool kBf16>
inline void load8_half(const uint8_t* p, float32x4_t* lo, float32x4_t* hi) {
  const uint16x8_t u = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
  if (kBf16) {
    *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(u), 16));
    *hi = vreinterpretq_f32_u32(vshll_high_n_u16(u, 16));
  } else {
    const float16x8_t h = vreinterpretq_f16_u16(u);
    *lo = vcvt_f32_f16(vget_low_f16(h));
    *hi = vcvt_high_f32_f16(h);
  }
}

template <bool kBf16>
float dot_row_half(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* b = reinterpret_cast<const float*>(x);
  float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float32x4_t lo, hi;
    load8_half<kBf16>(w + 2 * i, &lo, &hi);
    s0 = vfmaq_f32(s0, lo, vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, hi, vld1q_f32(b + i + 4));
  }
  float s = vaddvq_f32(vaddq_f32(s0, s1));
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    s += (kBf16 ? bf16_to_f32(h) : f16_to_f32(h)) * b[i];
  }
  return s;
}

float dot_row_q8_0(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int32x4_t acc = dot4(vdupq_n_s32(0), load_s8(wb[b].qs), load_s8(xb[b].qs));
    acc = dot4(acc, load_s8(wb[b].qs + 16), load_s8(xb[b].qs + 16));
    sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(vaddvq_s32(acc));
  }
  return sum;
}

float dot_row_q4_0(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8x16_t q = vld1q_u8(wb[b].qs);  // element j low nibble, j + 16 high
    int32x4_t acc = dot4(vdupq_n_s32(0), low_nibbles(q), load_s8(xb[b].qs));
    acc = dot4(acc, high_nibbles(q), load_s8(xb[b].qs + 16));
    const int32_t s = vaddvq_s32(acc) - 8 * xb[b].sum;  // the -8 offset of every quant, folded
    sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(s);
  }
  return sum;
}

// MXFP4: each nibble becomes its doubled E2M1 value by one table lookup (TBL), then the Q4_0
// kernel's dot; the scalar kernel's float steps.
float dot_row_mxfp4(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockMxfp4*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  const int8x16_t table = vld1q_s8(kMxfp4Values);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8x16_t q = vld1q_u8(wb[b].qs);  // element j low nibble, j + 16 high
    const int8x16_t lo = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F))), hi = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
    const int32x4_t acc = dot4(dot4(vdupq_n_s32(0), lo, load_s8(xb[b].qs)), hi, load_s8(xb[b].qs + 16));
    sum += mxfp4_scale(wb[b].e) * xb[b].d * static_cast<float>(vaddvq_s32(acc));
  }
  return sum;
}

// The integer dot of 32 quants at q (nibbles or 5-bit values already unpacked into two
// vectors) with 32 activation bytes.
inline int32_t dot32(int8x16_t q0, int8x16_t q1, const int8_t* a) {
  return vaddvq_s32(dot4(dot4(vdupq_n_s32(0), q0, load_s8(a)), q1, load_s8(a + 16)));
}

// Q4_K and Q5_K (qh null for Q4_K), the scalar dot_block_k4's sums and float steps.
inline float dot_block_k4(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* qh,
                          const uint8_t* qs, const ActQ8K& a) {
  int32_t sumi = 0, summ = 0;
  uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
  if (qh) {
    h0 = vld1q_u8(qh);
    h1 = vld1q_u8(qh + 16);
  }
  const uint8x16_t one = vdupq_n_u8(1);
  for (int c = 0; c < 4; ++c) {
    uint8_t sc_lo, m_lo, sc_hi, m_hi;
    unpack_scale_min_k4(2 * c, scales, &sc_lo, &m_lo);
    unpack_scale_min_k4(2 * c + 1, scales, &sc_hi, &m_hi);
    const uint8x16_t v0 = vld1q_u8(qs + 32 * c), v1 = vld1q_u8(qs + 32 * c + 16);
    uint8x16_t lo0 = vandq_u8(v0, vdupq_n_u8(0x0F)), lo1 = vandq_u8(v1, vdupq_n_u8(0x0F));
    uint8x16_t hi0 = vshrq_n_u8(v0, 4), hi1 = vshrq_n_u8(v1, 4);
    if (qh) {  // bit 2c of qh[l] tops element 64c + l, bit 2c + 1 element 64c + 32 + l
      const int8x16_t down_lo = vdupq_n_s8(static_cast<int8_t>(-2 * c)), down_hi = vdupq_n_s8(static_cast<int8_t>(-2 * c - 1));
      lo0 = vorrq_u8(lo0, vshlq_n_u8(vandq_u8(vshlq_u8(h0, down_lo), one), 4));
      lo1 = vorrq_u8(lo1, vshlq_n_u8(vandq_u8(vshlq_u8(h1, down_lo), one), 4));
      hi0 = vorrq_u8(hi0, vshlq_n_u8(vandq_u8(vshlq_u8(h0, down_hi), one), 4));
      hi1 = vorrq_u8(hi1, vshlq_n_u8(vandq_u8(vshlq_u8(h1, down_hi), one), 4));
    }
    const int32_t lo = dot32(vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1), a.qs + 64 * c);
    const int32_t hi = dot32(vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1), a.qs + 64 * c + 32);
    sumi += sc_lo * lo + sc_hi * hi;
    summ += m_lo * (a.bsums[4 * c] + a.bsums[4 * c + 1]) + m_hi * (a.bsums[4 * c + 2] + a.bsums[4 * c + 3]);
  }
  return a.d * (f16_to_f32(d16) * static_cast<float>(sumi) - f16_to_f32(dmin16) * static_cast<float>(summ));
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

// Q6_K: 6-bit quants q (0..63) from four low nibbles and two high bits; element e's scale is
// scales[e / 16] and the -32 offset comes through the activation's per-16 sums, as in the
// scalar kernel.
float dot_row_q6_k(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
  const auto* xb = reinterpret_cast<const ActQ8K*>(x);
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(3);
  float sum = 0;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const BlockQ6_K& k = wb[b];
    const ActQ8K& a = xb[b];
    int32x4_t acc = vdupq_n_s32(0);
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; l += 16) {  // elements 128h + 32g + l .. + 16 for g = 0..3
        const uint8x16_t ql0 = vld1q_u8(k.ql + 64 * h + l), ql1 = vld1q_u8(k.ql + 64 * h + 32 + l);
        const uint8x16_t qh = vld1q_u8(k.qh + 32 * h + l);
        const uint8x16_t q[4] = {vorrq_u8(vandq_u8(ql0, m4), vshlq_n_u8(vandq_u8(qh, m2), 4)),
                                 vorrq_u8(vandq_u8(ql1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m2), 4)),
                                 vorrq_u8(vshrq_n_u8(ql0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m2), 4)),
                                 vorrq_u8(vshrq_n_u8(ql1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4))};
        for (int g = 0; g < 4; ++g) {
          const int e = 128 * h + 32 * g + l;
          const int32x4_t d = dot4(vdupq_n_s32(0), vreinterpretq_s8_u8(q[g]), load_s8(a.qs + e));
          acc = vmlaq_n_s32(acc, d, k.scales[e / 16]);
        }
      }
    int32_t offset = 0;
    for (int s = 0; s < 16; ++s) offset += k.scales[s] * a.bsums[s];
    sum += f16_to_f32(k.d) * a.d * static_cast<float>(vaddvq_s32(acc) - 32 * offset);
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

// sum[r] += (f16(d[r]) * xd) * s[r] for four rows: the scalar grouped kernels' float steps.
inline float32x4_t add_scaled(float32x4_t sum, const uint16_t* d, float xd, int32x4_t s) {
  return vaddq_f32(sum, vmulq_f32(vmulq_n_f32(f16x4_to_f32(d), xd), vcvtq_f32_s32(s)));
}

// Q8_0x4 (quant_blocks.h): chunk c of the four rows is 32 bytes, row r's 8 quants at 8r; the
// activation chunk broadcast to both halves makes dot4's lane pairs one row each.
void matmul_rows_q8_0x4(const MatmulJob& j, int64_t r0, int64_t r1) {
  const int64_t nb = j.cols / kQK;
  for (int64_t g = r0 / 4; g < r1 / 4; ++g) {
    const auto* wb = reinterpret_cast<const BlockQ8_0x4*>(j.w + 4 * g * j.w_stride);
    for (int64_t t = 0; t < j.n_tokens; ++t) {
      const auto* xb = reinterpret_cast<const ActQ8*>(j.x + t * j.x_stride);
      float32x4_t sum = vdupq_n_f32(0);
      for (int64_t b = 0; b < nb; ++b) {
        int32x4_t r01 = vdupq_n_s32(0), r23 = r01;  // lanes: row 0, 0, 1, 1 and 2, 2, 3, 3
        for (int c = 0; c < 4; ++c) {
          const int8x16_t xa = broadcast8(xb[b].qs + 8 * c);
          r01 = dot4(r01, load_s8(wb[b].qs + 32 * c), xa);
          r23 = dot4(r23, load_s8(wb[b].qs + 32 * c + 16), xa);
        }
        sum = add_scaled(sum, wb[b].d, xb[b].d, vpaddq_s32(r01, r23));
      }
      vst1q_f32(j.y + t * j.y_stride + 4 * g, sum);
    }
  }
}

// Q4_0x8 (quant_blocks.h): 32 bytes per chunk k, row r's four bytes in 32-bit lane r (rows
// 0-3 in the first 16 bytes), low nibbles quants 8k..8k+3 and high ones 8k+4..8k+7.
void matmul_rows_q4_0x8(const MatmulJob& j, int64_t r0, int64_t r1) {
  const int64_t nb = j.cols / kQK;
  for (int64_t g = r0 / 8; g < r1 / 8; ++g) {
    const auto* wb = reinterpret_cast<const BlockQ4_0x8*>(j.w + 8 * g * j.w_stride);
    for (int64_t t = 0; t < j.n_tokens; ++t) {
      const auto* xb = reinterpret_cast<const ActQ8*>(j.x + t * j.x_stride);
      float32x4_t sum0 = vdupq_n_f32(0), sum1 = sum0;
      for (int64_t b = 0; b < nb; ++b) {
        int32x4_t s0 = vdupq_n_s32(0), s1 = s0;  // rows 0-3, 4-7
        for (int k = 0; k < 4; ++k) {
          const int8x16_t alo = broadcast4(xb[b].qs + 8 * k), ahi = broadcast4(xb[b].qs + 8 * k + 4);
          const uint8x16_t v0 = vld1q_u8(wb[b].qs + 32 * k), v1 = vld1q_u8(wb[b].qs + 32 * k + 16);
          s0 = dot4(dot4(s0, low_nibbles(v0), alo), high_nibbles(v0), ahi);
          s1 = dot4(dot4(s1, low_nibbles(v1), alo), high_nibbles(v1), ahi);
        }
        const int32x4_t off = vdupq_n_s32(8 * xb[b].sum);
        sum0 = add_scaled(sum0, wb[b].d, xb[b].d, vsubq_s32(s0, off));
        sum1 = add_scaled(sum1, wb[b].d + 4, xb[b].d, vsubq_s32(s1, off));
      }
      vst1q_f32(j.y + t * j.y_stride + 8 * g, sum0);
      vst1q_f32(j.y + t * j.y_stride + 8 * g + 4, sum1);
    }
  }
}

// Q4_Kx8 (quant_blocks.h): per sub-block, the layout of Q4_0x8; the eight rows' scales and
// mins are bytes, so they multiply the rows' sums lane by lane. The float steps are
// dot_block_k4's, row by row.
void matmul_rows_q4_kx8(const MatmulJob& j, int64_t r0, int64_t r1) {
  const int64_t nb = j.cols / kQKK;
  for (int64_t g = r0 / 8; g < r1 / 8; ++g) {
    const auto* wb = reinterpret_cast<const BlockQ4_Kx8*>(j.w + 8 * g * j.w_stride);
    for (int64_t t = 0; t < j.n_tokens; ++t) {
      const auto* xb = reinterpret_cast<const ActQ8K*>(j.x + t * j.x_stride);
      float32x4_t sum[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ4_Kx8& w = wb[b];
        const ActQ8K& a = xb[b];
        int32x4_t sumi[2] = {vdupq_n_s32(0), vdupq_n_s32(0)}, summ[2] = {sumi[0], sumi[0]};
        for (int sub = 0; sub < 8; ++sub) {
          int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
          for (int k = 0; k < 4; ++k) {
            const int8_t* aq = a.qs + 32 * sub + 8 * k;
            const int8x16_t alo = broadcast4(aq), ahi = broadcast4(aq + 4);
            for (int half = 0; half < 2; ++half) {
              const uint8x16_t v = vld1q_u8(w.qs + 128 * sub + 32 * k + 16 * half);
              s[half] = dot4(dot4(s[half], low_nibbles(v), alo), high_nibbles(v), ahi);
            }
          }
          const uint16x8_t sc = vmovl_u8(vld1_u8(w.scales + 8 * sub)), mn = vmovl_u8(vld1_u8(w.mins + 8 * sub));
          const int32_t bsum = a.bsums[2 * sub] + a.bsums[2 * sub + 1];
          sumi[0] = vmlaq_s32(sumi[0], vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(sc))), s[0]);
          sumi[1] = vmlaq_s32(sumi[1], vreinterpretq_s32_u32(vmovl_high_u16(sc)), s[1]);
          summ[0] = vmlaq_n_s32(summ[0], vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(mn))), bsum);
          summ[1] = vmlaq_n_s32(summ[1], vreinterpretq_s32_u32(vmovl_high_u16(mn)), bsum);
        }
        for (int half = 0; half < 2; ++half) {
          const float32x4_t d = vmulq_f32(f16x4_to_f32(w.d + 4 * half), vcvtq_f32_s32(sumi[half]));
          const float32x4_t m = vmulq_f32(f16x4_to_f32(w.dmin + 4 * half), vcvtq_f32_s32(summ[half]));
          sum[half] = vaddq_f32(sum[half], vmulq_n_f32(vsubq_f32(d, m), a.d));
        }
      }
      vst1q_f32(j.y + t * j.y_stride + 8 * g, sum[0]);
      vst1q_f32(j.y + t * j.y_stride + 8 * g + 4, sum[1]);
    }
  }
}

// Starts from the scalar table (so a type added later is computed everywhere) and replaces
// what this file vectorizes: every weight type and vector kernel there is today.
KernelTable make_neon_table(Isa isa) {
  KernelTable t = scalar_kernels();
  t.isa = isa;
  t.matmul[static_cast<int>(DType::F32)] = matmul_rows<dot_row_f32>;
  t.matmul[static_cast<int>(DType::F16)] = matmul_rows<dot_row_half<false>>;
  t.matmul[static_cast<int>(DType::BF16)] = matmul_rows<dot_row_half<true>>;
  t.matmul[static_cast<int>(DType::Q8_0)] = matmul_rows<dot_row_q8_0>;
  t.matmul[static_cast<int>(DType::Q8_0x4)] = matmul_rows_q8_0x4;
  t.matmul[static_cast<int>(DType::Q4_0)] = matmul_rows<dot_row_q4_0>;
  t.matmul[static_cast<int>(DType::Q4_0x8)] = matmul_rows_q4_0x8;
  t.matmul[static_cast<int>(DType::Q4_K)] = matmul_rows<dot_row_q4_k>;
  t.matmul[static_cast<int>(DType::Q4_Kx8)] = matmul_rows_q4_kx8;
  t.matmul[static_cast<int>(DType::Q5_K)] = matmul_rows<dot_row_q5_k>;
  t.matmul[static_cast<int>(DType::Q6_K)] = matmul_rows<dot_row_q6_k>;
  t.matmul[static_cast<int>(DType::MXFP4)] = matmul_rows<dot_row_mxfp4>;
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
  // One attention and one scoring kernel for both tables: neither has integer dot products.
  t.attend[0] = {::triattn::attention_detail::attend_neon, 4};
  t.score_keys = {::triattn::detail::score_keys_neon, 4};
  return t;
}

}  // namespace
}  // namespace triattn::ops
