// Matmul kernels for x86 with 256-bit vectors, compiled twice: by kernels_avx2.cpp (AVX2 +
// FMA + F16C, 16 registers) and by kernels_avx512.cpp (AVX-512VL: 32 registers, VNNI for
// the byte dot products). The includer defines:
//   TRIATTN_X86_VNNI  1 to use vpdpbusd, 0 for maddubs+madd
//   TRIATTN_TILE_ROWS, TRIATTN_TILE_TOKENS  the register tile of the matrix-matrix loop
//   TRIATTN_TILE_GROUPS_X4  groups of 4 interleaved Q8_0x4 rows per tile (x TILE_TOKENS)
// Everything here is in an anonymous namespace, so the two copies never collide.
//
// Structure: a tile of R weight rows x T tokens keeps R*T vector accumulators. Each weight
// block is loaded (and unpacked) once and dotted with the T tokens' activation blocks, so
// weights are read from memory once per tile of tokens, never once per token.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "ops/cpu_dispatch.h"
#include "ops/quant_blocks.h"
#include "ops/x86_reduce.inl"

namespace triattn::ops {
namespace {

// Every loop over the register tile (rows, tokens, sub-blocks) must be unrolled completely:
// otherwise GCC keeps the accumulator arrays in memory and each FMA waits on a
// store-to-load forward, which made decode compute-bound at a third of memory bandwidth.
#define TRIATTN_UNROLL _Pragma("GCC unroll 16")

constexpr int kTileRows = TRIATTN_TILE_ROWS;
constexpr int kTileTokens = TRIATTN_TILE_TOKENS;
constexpr int kTileGroupsX4 = TRIATTN_TILE_GROUPS_X4;

inline float f16(uint16_t h) { return _cvtsh_ss(h); }

// 8 int32 lanes, each the sum of 4 products of unsigned bytes u with signed bytes s.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if TRIATTN_X86_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// u (unsigned bytes, products pairs within int16) times s, pairs then weighted by the int16
// lanes of scale: the K-quant sub-block step (no saturation for the ranges used here).
inline __m256i dot_u8s8_scaled(__m256i u, __m256i s, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale);
}

inline __m256i loadu256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

#if defined(__AVX512BW__)
// 256-bit halves in and out of 512-bit registers through the masked forms: GCC 12's plain
// _mm512_inserti64x4 / extracti64x4 / castsi512_si256 / broadcast_i64x4 pass an undefined
// source to the masked builtin and trip -Wuninitialized (fixed in GCC 13).
inline __m512i concat256(__m256i lo, __m256i hi) {
  return _mm512_mask_inserti64x4(_mm512_setzero_si512(), 0xFF, _mm512_castsi256_si512(lo), hi, 1);
}
inline __m256i low256(__m512i v) {
  return _mm512_mask_extracti64x4_epi64(_mm256_setzero_si256(), 0xF, v, 0);
}
inline __m256i high256(__m512i v) {
  return _mm512_mask_extracti64x4_epi64(_mm256_setzero_si256(), 0xF, v, 1);
}
// acc + float(sums) * scale (the zero-masked conversion, for the same reason).
inline __m512 fmadd_sums512(__m512i sums, __m512 scale, __m512 acc) {
  return _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, sums), scale, acc);
}
#endif

// ---- weight types -------------------------------------------------------------------------
// Each describes one block: kElems elements, kWBytes weight bytes, kXBytes activation bytes,
// and block<T>() which adds the block's contribution for T tokens to acc (every offset and
// min is folded into the vector, none is summed on the side). Float types also have a scalar
// tail for cols % kElems.

struct F32W {
  static constexpr int kElems = 8, kWBytes = 32, kXBytes = 32;
  static constexpr bool kTail = true;
  static __m256 load(const uint8_t* w) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(w));
  }
#if defined(__AVX512F__)
  static __m512 load512(const uint8_t* w) { return _mm512_loadu_ps(w); }
#endif
  static float scalar(const uint8_t* w, int64_t i) {
    float v;
    std::memcpy(&v, w + 4 * i, 4);
    return v;
  }
};

struct F16W {
  static constexpr int kElems = 8, kWBytes = 16, kXBytes = 32;
  static constexpr bool kTail = true;
  static __m256 load(const uint8_t* w) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  }
#if defined(__AVX512F__)
  static __m512 load512(const uint8_t* w) { return _mm512_maskz_cvtph_ps(0xFFFF, loadu256(w)); }
#endif
  static float scalar(const uint8_t* w, int64_t i) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    return f16(h);
  }
};

struct BF16W {
  static constexpr int kElems = 8, kWBytes = 16, kXBytes = 32;
  static constexpr bool kTail = true;
  static __m256 load(const uint8_t* w) {  // bf16 is the top half of an f32
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
#if defined(__AVX512F__)
  static __m512 load512(const uint8_t* w) {
    // The zero-masked forms: GCC 12's plain ones trip -Wuninitialized (concat256 above).
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, loadu256(w)), 16));
  }
#endif
  static float scalar(const uint8_t* w, int64_t i) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    return bf16_to_f32(h);
  }
};

// Float weights against f32 activations.
template <class W>
struct FloatKernel : W {
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const __m256 wv = W::load(w);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(reinterpret_cast<const float*>(x[t])), acc[t]);
  }
  static float tail(const uint8_t* w, const uint8_t* x, int64_t from, int64_t to) {
    float s = 0;
    for (int64_t i = from; i < to; ++i) s += W::scalar(w, i) * reinterpret_cast<const float*>(x)[i];
    return s;
  }
};

struct Q8_0Kernel {
  static constexpr int kElems = kQK, kWBytes = sizeof(BlockQ8_0), kXBytes = sizeof(ActQ8);
  static constexpr bool kTail = false;
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(w);
    const __m256i q = loadu256(b->qs);
    const __m256i aq = _mm256_sign_epi8(q, q);  // |q| as unsigned; the sign moves to x
    const float d = f16(b->d);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      const auto* a = reinterpret_cast<const ActQ8*>(x[t]);
      const __m256i p = dot_u8s8(aq, _mm256_sign_epi8(loadu256(a->qs), q));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * a->d), acc[t]);
    }
  }
  static float tail(const uint8_t*, const uint8_t*, int64_t, int64_t) { return 0; }
};

struct Q4_0Kernel {
  static constexpr int kElems = kQK, kWBytes = sizeof(BlockQ4_0), kXBytes = sizeof(ActQ8);
  static constexpr bool kTail = false;
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(w);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    // Low nibbles are elements 0..15, high nibbles 16..31: one 32-byte vector in order.
    const __m256i q =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    const float d = f16(b->d);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      const auto* a = reinterpret_cast<const ActQ8*>(x[t]);
      // The -8 offset of every quant is 8 x the activations' sum, taken off in int32 as the
      // sum from each of the 8 lanes (only their total counts; with VNNI the dot product
      // starts from it) instead of a scalar float update per block (faster in cache on both
      // paths: docs/benchmarks.md, "K-quant and Q4_0 kernels").
#if TRIATTN_X86_VNNI
      const __m256i p = _mm256_dpbusd_epi32(_mm256_set1_epi32(-a->sum), q, loadu256(a->qs));
#else
      const __m256i p = _mm256_sub_epi32(dot_u8s8(q, loadu256(a->qs)), _mm256_set1_epi32(a->sum));
#endif
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * a->d), acc[t]);
    }
  }
  static float tail(const uint8_t*, const uint8_t*, int64_t, int64_t) { return 0; }
};

// The 8 scales and 8 mins of a Q4_K/Q5_K block (6 bits each, the bit moves of
// unpack_scale_min_k4 in quant_blocks.h done on four 32-bit words at once): bytes 0..7 of the
// result are the scales, 8..15 the mins. Reads 16 bytes from `packed` (the 12 of the scales
// and 4 that follow them in the block, ignored).
inline __m128i unpack_scales_mins_k4_vec(const uint8_t* packed) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));  // a0 a1 a2 -
  // Lanes: a0 & 3f3f3f3f | a2 & 0f0f0f0f | a1 & 3f3f3f3f | (a2 >> 4) & 0f0f0f0f ...
  const __m128i lowbits = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
      _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  // ... with lanes 1 and 3 or'ed with the top two bits of a0 and a1 moved to bits 4-5.
  const __m128i topbits = _mm_slli_epi32(
      _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)), 6),
                    _mm_setr_epi32(0, 0x03030303, 0, 0x03030303)),
      4);
  return _mm_or_si128(lowbits, topbits);
}

// Q4_K (kHigh false) and Q5_K (kHigh true).
template <class Block, bool kHigh>
struct K4Kernel {
  static constexpr int kElems = kQKK, kWBytes = sizeof(Block), kXBytes = sizeof(ActQ8K);
  static constexpr bool kTail = false;
  // The mins term goes into the vector accumulator (one FMA), not into a scalar through a
  // horizontal sum per block. Instructions, not bytes, bound Q4_K decode: one thread in
  // cache reads below what it streams from memory (docs/benchmarks.md, "K-quant and Q4_0
  // kernels").
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
#if defined(__AVX512BW__)
    block512<T>(w, x, acc);
#else
    block256<T>(w, x, acc);
#endif
  }

  // The block's d and dmin (adjacent f16s) as lanes 0 and 1, converted together.
  [[gnu::always_inline]] static __m128 d_dmin(const Block* b) {
    uint32_t both;
    std::memcpy(&both, &b->d, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(both)));
  }

  // acc += d·a.d · (scaled sums) − dmin·a.d · (mins · the activation's per-16 sums), for the
  // 8 int32 lanes of scaled sums of either block width.
  [[gnu::always_inline]] static void finish(__m256i sums, __m256i mins, __m128 dd, const ActQ8K* a, __m256& acc) {
    const __m128 f = _mm_mul_ps(dd, _mm_set1_ps(a->d));  // d * a.d, dmin * a.d
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_broadcastss_ps(f), acc);
    const __m256i mb = _mm256_madd_epi16(mins, loadu256(a->bsums));
    acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mb), _mm256_broadcastss_ps(_mm_movehdup_ps(f)), acc);
  }

#if defined(__AVX512BW__)
  // A 64-element chunk's low and high nibbles (its two sub-blocks) in one 512-bit register
  // against the chunk's 64 contiguous activation bytes, each sub-block's scale picked by one
  // permute.
  template <int T>
  [[gnu::always_inline]] static void block512(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const Block*>(w);
    // Bytes 0..7: the 8 sub-block scales, 8..15: the 8 mins (as int16 lanes below).
    const __m512i sm16 = _mm512_cvtepu8_epi16(_mm256_zextsi128_si256(unpack_scales_mins_k4_vec(b->scales)));
    // Each min twice, to pair with the activation's per-16 sums.
    const __m256i mins = _mm256_permutexvar_epi16(
        _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), low256(sm16));
    const __m128 dd = d_dmin(b);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i upper_one = _mm512_maskz_set1_epi16(0xFFFF0000u, 1);  // lanes 16..31
    __m512i hbits = _mm512_setzero_si512();
    if constexpr (kHigh) hbits = concat256(loadu256(b->qh), loadu256(b->qh));
    __m512i sumi[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    TRIATTN_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = loadu256(b->qs + 32 * c);
      __m512i q = _mm512_and_si512(concat256(raw, _mm256_srli_epi16(raw, 4)), low4);
      if constexpr (kHigh) {  // bit 2c of qh[l] for the low half, 2c+1 for the high half
        const __m512i bit = concat256(_mm256_set1_epi8(static_cast<char>(1 << (2 * c))),
                                      _mm256_set1_epi8(static_cast<char>(2 << (2 * c))));
        q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hbits, bit), q, _mm512_set1_epi8(16));
      }
      // int16 lanes 0..15 (sub-block 2c) get scale 2c, lanes 16..31 scale 2c+1.
      const __m512i scale =
          _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_set1_epi16(static_cast<short>(2 * c)), upper_one), sm16);
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const auto* a = reinterpret_cast<const ActQ8K*>(x[t]);
        const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512(a->qs + 64 * c));
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_madd_epi16(p, scale));
      }
    }
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t)
      finish(_mm256_add_epi32(low256(sumi[t]), high256(sumi[t])), mins, dd,
             reinterpret_cast<const ActQ8K*>(x[t]), acc[t]);
  }
#endif

  // Each 32-element sub-block on its own, its scale broadcast by a byte shuffle.
  template <int T>
  [[gnu::always_inline]] static void block256(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const Block*>(w);
    const __m128i sm = unpack_scales_mins_k4_vec(b->scales);
    // The 8 scales as int16 in both 128-bit lanes (for in-lane shuffles)...
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    // ... and each min twice, as int16, to pair with the activation's per-16 sums.
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm));
    const __m256i mins =
        _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
    const __m128 dd = d_dmin(b);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i hbits = _mm256_setzero_si256();
    if constexpr (kHigh) hbits = loadu256(b->qh);
    __m256i sumi[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
    TRIATTN_UNROLL
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = loadu256(b->qs + 32 * c);
      __m256i lo = _mm256_and_si256(raw, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      if constexpr (kHigh) {  // bit 2c / 2c+1 of qh[l] -> 16 added to the quant
        const __m256i blo = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
        const __m256i bhi = _mm256_set1_epi8(static_cast<char>(2 << (2 * c)));
        const __m256i sixteen = _mm256_set1_epi8(16);
        lo = _mm256_or_si256(
            lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, blo), blo), sixteen));
        hi = _mm256_or_si256(
            hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, bhi), bhi), sixteen));
      }
      // Every int16 lane gets scale j: bytes 2j, 2j+1 of sc16.
      const __m256i s_lo = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * c))));
      const __m256i s_hi = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * c + 1))));
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const auto* a = reinterpret_cast<const ActQ8K*>(x[t]);
        sumi[t] = _mm256_add_epi32(sumi[t], dot_u8s8_scaled(lo, loadu256(a->qs + 64 * c), s_lo));
        sumi[t] =
            _mm256_add_epi32(sumi[t], dot_u8s8_scaled(hi, loadu256(a->qs + 64 * c + 32), s_hi));
      }
    }
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) finish(sumi[t], mins, dd, reinterpret_cast<const ActQ8K*>(x[t]), acc[t]);
  }
  static float tail(const uint8_t*, const uint8_t*, int64_t, int64_t) { return 0; }
};

struct Q6_KKernel {
  static constexpr int kElems = kQKK, kWBytes = sizeof(BlockQ6_K), kXBytes = sizeof(ActQ8K);
  static constexpr bool kTail = false;
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
#if defined(__AVX512BW__)
    block512<T>(w, x, acc);
#else
    block256<T>(w, x, acc);
#endif
  }

  // acc += d·a.d · (sums − 32 · scales · the activation's per-16 sums): the −32 of every
  // quant subtracted in int32 (|sums| < 2^28), for the 8 int32 lanes of either block width.
  [[gnu::always_inline]] static void finish(__m256i sums, __m256i scales16, float d, const ActQ8K* a, __m256& acc) {
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(scales16, loadu256(a->bsums)), 5);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums, off)), _mm256_set1_ps(d * a->d), acc);
  }

#if defined(__AVX512BW__)
  // 64 consecutive elements per 512-bit register (two 32-element groups: their low nibbles
  // are 64 consecutive ql bytes, their high bits one qh vector shifted by a different count
  // per half), four sub-block scales picked by one permute. In both widths the -32 offset is
  // subtracted from the int32 sums (a shift and a subtract), not by a horizontal sum per
  // block (docs/benchmarks.md, "K-quant and Q4_0 kernels").
  template <int T>
  [[gnu::always_inline]] static void block512(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    const __m512i scales512 = _mm512_castsi256_si512(scales16);
    // int16 lane k of a 64-element register belongs to sub-block k / 8 of its four.
    const __m512i sub = _mm512_srli_epi16(
        _mm512_setr_epi32(0x00010000, 0x00030002, 0x00050004, 0x00070006, 0x00090008, 0x000b000a,
                          0x000d000c, 0x000f000e, 0x00110010, 0x00130012, 0x00150014, 0x00170016,
                          0x00190018, 0x001b001a, 0x001d001c, 0x001f001e),
        3);
    // Shift counts per 256-bit half: {4, 2} for the first register's high bits, {0, 2} for
    // the second's (left, then right), as the 256-bit kernel's four shifts.
    const __m512i shl = concat256(_mm256_set1_epi16(4), _mm256_set1_epi16(2));
    const __m512i shr = concat256(_mm256_setzero_si256(), _mm256_set1_epi16(2));
    __m512i sumi[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    TRIATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b->ql + 64 * h);
      const __m256i qh256 = loadu256(b->qh + 32 * h);
      const __m512i qh = concat256(qh256, qh256);
      // Unsigned 6-bit quants (0..63): elements 128h + 0..63, then 128h + 64..127.
      const __m512i q[2] = {
          _mm512_or_si512(_mm512_and_si512(ql, low4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), bits45)),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                          _mm512_and_si512(_mm512_srlv_epi16(qh, shr), bits45))};
      TRIATTN_UNROLL
      for (int g = 0; g < 2; ++g) {
        const __m512i scale = _mm512_permutexvar_epi16(
            _mm512_add_epi16(sub, _mm512_set1_epi16(static_cast<short>(8 * h + 4 * g))), scales512);
        TRIATTN_UNROLL
        for (int t = 0; t < T; ++t) {
          const auto* a = reinterpret_cast<const ActQ8K*>(x[t]);
          const __m512i p = _mm512_maddubs_epi16(q[g], _mm512_loadu_si512(a->qs + 128 * h + 64 * g));
          sumi[t] = _mm512_add_epi32(sumi[t], _mm512_madd_epi16(p, scale));
        }
      }
    }
    const float d = f16(b->d);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t)
      finish(_mm256_add_epi32(low256(sumi[t]), high256(sumi[t])), scales16, d,
             reinterpret_cast<const ActQ8K*>(x[t]), acc[t]);
  }
#endif

  template <int T>
  [[gnu::always_inline]] static void block256(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(w);
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales)));
    __m256i sumi[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
    TRIATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = loadu256(b->ql + 64 * h), ql1 = loadu256(b->ql + 64 * h + 32);
      const __m256i qh = loadu256(b->qh + 32 * h);
      // Unsigned 6-bit quants (0..63) of the four 32-element groups of this half.
      const __m256i q[4] = {_mm256_or_si256(_mm256_and_si256(ql0, low4),
                                            _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
                            _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                            _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                            _mm256_and_si256(qh, bits45)),
                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45))};
      // This half's 8 int16 scales in both 128-bit lanes, for in-lane shuffles below.
      const __m256i half_scales = h == 0 ? _mm256_permute2x128_si256(scales16, scales16, 0x00)
                                         : _mm256_permute2x128_si256(scales16, scales16, 0x11);
      TRIATTN_UNROLL
      for (int g = 0; g < 4; ++g) {
        // Lanes 0-7 (elements 0..15 of the group) get scale 2g, lanes 8-15 scale 2g+1.
        const char lo0 = static_cast<char>(4 * g), lo1 = static_cast<char>(4 * g + 1);
        const char hi0 = static_cast<char>(4 * g + 2), hi1 = static_cast<char>(4 * g + 3);
        const __m256i pick = _mm256_setr_epi8(lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0,
                                              lo1, lo0, lo1, lo0, lo1, hi0, hi1, hi0, hi1, hi0, hi1,
                                              hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1);
        const __m256i scale = _mm256_shuffle_epi8(half_scales, pick);
        TRIATTN_UNROLL
        for (int t = 0; t < T; ++t) {
          const auto* a = reinterpret_cast<const ActQ8K*>(x[t]);
          sumi[t] = _mm256_add_epi32(
              sumi[t], dot_u8s8_scaled(q[g], loadu256(a->qs + 128 * h + 32 * g), scale));
        }
      }
    }
    const float d = f16(b->d);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) finish(sumi[t], scales16, d, reinterpret_cast<const ActQ8K*>(x[t]), acc[t]);
  }
  static float tail(const uint8_t*, const uint8_t*, int64_t, int64_t) { return 0; }
};

// ---- tiles --------------------------------------------------------------------------------

// y for rows [r0, r0+R) x tokens [t0, t0+T).
template <class K, int R, int T>
void tile(const MatmulJob& j, int64_t r0, int64_t t0) {
  __m256 acc[R][T];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const uint8_t* w[R];
  const uint8_t* x[T];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r) w[r] = j.w + (r0 + r) * j.w_stride;
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = j.x + (t0 + t) * j.x_stride;
  const int64_t nb = j.cols / K::kElems;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* xb[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) xb[t] = x[t] + b * K::kXBytes;
    TRIATTN_UNROLL
    for (int r = 0; r < R; ++r) K::template block<T>(w[r] + b * K::kWBytes, xb, acc[r]);
  }
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      float v = hsum_ps(acc[r][t]);
      if constexpr (K::kTail) v += K::tail(w[r], x[t], nb * K::kElems, j.cols);
      j.y[(t0 + t) * j.y_stride + r0 + r] = v;
    }
}

// Matrix-vector (decode). kGemvStreams rows at once, taken from evenly spaced parts of the
// range (rows r0+i, r0+p+i, r0+2p+i, ... for p = range/kGemvStreams), each with a software
// prefetch kGemvPrefetch bytes ahead (4 spaced streams with a 2 KB prefetch read best;
// docs/benchmarks.md, "Decode streams and prefetch distances"). Several independent streams
// keep more cache-line misses in flight than the hardware prefetcher does for one stream
// interleaved with compute. Every row is accumulated the same way (gemv_lanes() interleaved
// block accumulators) whichever stream carries it, so results do not depend on how rows are
// split over threads.
constexpr int kGemvStreams = 4;
constexpr int kGemvPrefetch = 2048;

template <class K>
constexpr int gemv_lanes() {
  return K::kElems >= 256 ? 1 : 2;  // K-quant blocks are long enough on their own
}

template <class K, int S>
inline void gemv_streams(const MatmulJob& j, const int64_t* rows) {
  constexpr int L = gemv_lanes<K>();
  constexpr int kStepBytes = L * K::kWBytes;
  const int64_t nb = j.cols / K::kElems;
  const uint8_t* w[S];
  __m256 acc[S][L];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    w[s] = j.w + rows[s] * j.w_stride;
    TRIATTN_UNROLL
    for (int u = 0; u < L; ++u) acc[s][u] = _mm256_setzero_ps();
  }
  int64_t b = 0;
  for (; b + L <= nb; b += L) {
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) {
      const uint8_t* p = w[s] + b * K::kWBytes + kGemvPrefetch;
      TRIATTN_UNROLL
      for (int off = 0; off < kStepBytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
      TRIATTN_UNROLL
      for (int u = 0; u < L; ++u) {
        const uint8_t* xb = j.x + (b + u) * K::kXBytes;
        K::template block<1>(w[s] + (b + u) * K::kWBytes, &xb, &acc[s][u]);
      }
    }
  }
  for (; b < nb; ++b) {
    const uint8_t* xb = j.x + b * K::kXBytes;
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s)
      K::template block<1>(w[s] + b * K::kWBytes, &xb, &acc[s][0]);
  }
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    __m256 sum = acc[s][0];
    TRIATTN_UNROLL
    for (int u = 1; u < L; ++u) sum = _mm256_add_ps(sum, acc[s][u]);
    float v = hsum_ps(sum);
    if constexpr (K::kTail) v += K::tail(w[s], j.x, nb * K::kElems, j.cols);
    j.y[rows[s]] = v;
  }
}

// ---- Q8_0x4: Q8_0 rows interleaved in groups of 4 (quant_blocks.h) -------------------------
// A block column of one group against T tokens: per token, two int32 lanes per row (lanes
// 2r, 2r+1 hold row r), scaled by the four rows' scales in one vector. Per block this costs
// about a quarter of the Q8_0 row kernel's instructions: one weight load and one dot per
// 8 x 4 bytes, the scale conversion shared by four rows, no scalar-to-vector moves.
template <int T>
inline void q8_0x4_block(const BlockQ8_0x4* b, const ActQ8* const* a, __m256* acc) {
  __m256i p[T];
#if TRIATTN_X86_VNNI
  // vpdpbusd multiplies unsigned by signed bytes: weights become q + 128, and each row then
  // owes 128 x the activation block's quant sum, taken off as 64 x sum in each of its lanes.
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(-64 * a[t]->sum);
  TRIATTN_UNROLL
  for (int c = 0; c < 4; ++c) {
    const __m256i u = _mm256_xor_si256(loadu256(b->qs + 32 * c), _mm256_set1_epi8(static_cast<char>(0x80)));
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      int64_t chunk;
      std::memcpy(&chunk, a[t]->qs + 8 * c, 8);
      p[t] = _mm256_dpbusd_epi32(p[t], u, _mm256_set1_epi64x(chunk));
    }
  }
#else
  // Without VNNI, maddubs would saturate on q + 128: move the weights' signs to the
  // activations instead (|q| <= 128, |x| <= 127: pair sums stay within int16).
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) p[t] = _mm256_setzero_si256();
  TRIATTN_UNROLL
  for (int c = 0; c < 4; ++c) {
    const __m256i q = loadu256(b->qs + 32 * c);
    const __m256i aq = _mm256_sign_epi8(q, q);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      int64_t chunk;
      std::memcpy(&chunk, a[t]->qs + 8 * c, 8);
      p[t] = _mm256_add_epi32(p[t], dot_u8s8(aq, _mm256_sign_epi8(_mm256_set1_epi64x(chunk), q)));
    }
  }
#endif
  const __m128i d4 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->d));
  const __m256 dw = _mm256_cvtph_ps(_mm_unpacklo_epi16(d4, d4));  // d0 d0 d1 d1 d2 d2 d3 d3
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t)
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[t]), _mm256_mul_ps(dw, _mm256_set1_ps(a[t]->d)), acc[t]);
}

// The four rows' results (lane pairs summed) to y[0..3].
inline void store_x4(__m256 acc, float* y) {
  const __m256 h = _mm256_hadd_ps(acc, acc);  // s0 s1 s0 s1 | s2 s3 s2 s3
  _mm_storeu_ps(y, _mm_shuffle_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1),
                                  _MM_SHUFFLE(1, 0, 1, 0)));
}

#if defined(__AVX512BW__)
// The eight rows' scales of two adjacent groups as floats, each twice (a row's two lanes).
inline __m512 x4_pair_scales(const BlockQ8_0x4* b0, const BlockQ8_0x4* b1) {
  int64_t d0, d1;  // four f16 scales of each group
  std::memcpy(&d0, b0->d, 8);
  std::memcpy(&d1, b1->d, 8);
  const __m128i d8 = _mm_set_epi64x(d1, d0);
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_set_m128i(_mm_unpackhi_epi16(d8, d8), _mm_unpacklo_epi16(d8, d8)));
}

// S adjacent-group pairs against T tokens, each pair side by side in one 512-bit register
// (lanes 0-7 rows 4g..4g+3, lanes 8-15 the next group's; two lanes per row as above): the
// small-batch and prefill kernel of GroupUnits on AVX-512 (this build always has VNNI).
// Token by token: the S x 4 weight vectors stay in registers while each token's four
// activation broadcasts and its quant-sum correction are made once for all S pairs. With a
// token's sums live only while it is summed, S = 2 and T = 8 fit in the 32 registers
// (8 weight vectors, 16 accumulators, 2 sums, 2 scale vectors) and one pass over the weights
// serves 8 tokens. It beats the earlier form (one pair at a time, each token broadcast anew
// for every pair) at 8, 16 and 512 tokens (docs/benchmarks.md, "Batched decode").
// The helper is inlined by force: called out of line, the accumulators went through memory.
template <int S, int T>
[[gnu::always_inline]] inline void q8_0x4_block_pairs(const BlockQ8_0x4* const* b0, const BlockQ8_0x4* const* b1,
                                                      const ActQ8* const* a, __m512 (*acc)[T]) {
  __m512i u[S][4];
  __m512 dw[S];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    TRIATTN_UNROLL
    for (int c = 0; c < 4; ++c)
      u[s][c] = _mm512_xor_si512(concat256(loadu256(b0[s]->qs + 32 * c), loadu256(b1[s]->qs + 32 * c)),
                                 _mm512_set1_epi8(static_cast<char>(0x80)));
    dw[s] = x4_pair_scales(b0[s], b1[s]);
  }
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) {
    __m512i p[S];
    const __m512i correction = _mm512_set1_epi32(-64 * a[t]->sum);
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) p[s] = correction;
    TRIATTN_UNROLL
    for (int c = 0; c < 4; ++c) {
      int64_t chunk;
      std::memcpy(&chunk, a[t]->qs + 8 * c, 8);
      const __m512i x = _mm512_set1_epi64(chunk);
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s) p[s] = _mm512_dpbusd_epi32(p[s], u[s][c], x);
    }
    const __m512 da = _mm512_set1_ps(a[t]->d);
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) acc[s][t] = fmadd_sums512(p[s], _mm512_mul_ps(dw[s], da), acc[s][t]);
  }
}

// The eight rows' results (lane pairs summed) to y[0..7].
inline void store_x4_pair(__m512 acc, float* y) {
  const __m256 lo = _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, acc, 0);
  const __m256 hi = _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, acc, 1);
  const __m256 h = _mm256_hadd_ps(lo, hi);  // rows 0 1 4 5 | 2 3 6 7
  _mm256_storeu_ps(y, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(h), _MM_SHUFFLE(3, 1, 2, 0))));
}
#endif

// Decode's prefetch distance for the small interleaved blocks (Q8_0x4, Q4_0x8): 1536 B decoded
// faster than 2048 B, 4096 B slower; the row kernels (F16, K-quants) measured the same at 1536
// and 2048 (docs/benchmarks.md, "Decode streams and prefetch distances").
constexpr int kGemvPrefetchX4 = 1536;

// The layout as the group driver below sees it (see there).
struct Q8_0x4Group {
  using Block = BlockQ8_0x4;
  using Act = ActQ8;
  static constexpr int kRows = 4, kElems = kQK, kTile = kTileGroupsX4, kPrefetch = kGemvPrefetchX4;
  template <int T>
  static void block(const Block* b, const Act* const* a, __m256* acc) { q8_0x4_block<T>(b, a, acc); }
  static void store(__m256 acc, float* y) { store_x4(acc, y); }
#if defined(__AVX512BW__)
  // block_pairs takes up to kPairStreams pairs of up to kPairTokens tokens at once; small
  // batches also prefetch kFarPrefetch bytes ahead into L2 (see kFarPrefetch below).
  static constexpr int kPairStreams = 2, kPairTokens = 8, kFarPrefetch = 16384;
  template <int S, int T>
  [[gnu::always_inline]] static void block_pairs(const Block* const* b0, const Block* const* b1, const Act* const* a,
                                                 __m512 (*acc)[T]) {
    q8_0x4_block_pairs<S, T>(b0, b1, a, acc);
  }
  static void store_pair(__m512 acc, float* y) { store_x4_pair(acc, y); }
#endif
};

#if defined(__AVX512F__)
// ---- float weights on 512-bit vectors (prefill) ------------------------------------------
// Prefill of float weights is bound by FMA throughput, not by memory: a tile of R rows x T
// tokens does R*T FMAs per R weight loads and T activation loads. 512-bit vectors halve the
// instructions per multiply-add; decode, memory-bound, keeps the 256-bit streams.
// The sum of 16 lanes, through the masked 256-bit extracts (GCC 12's _mm512_reduce_add_ps
// trips -Wuninitialized, as concat256 above notes for its integer forms).
inline float hsum512_ps(__m512 v) {
  const __m256 lo = _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, v, 0);
  const __m256 hi = _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, v, 1);
  return hsum_ps(_mm256_add_ps(lo, hi));
}

// Rows [r0, r0+R) x tokens [t0, t0+T); columns past the last 16 by the scalar tail.
template <class W, int R, int T>
void tile_float512(const MatmulJob& j, int64_t r0, int64_t t0) {
  __m512 acc[R][T];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const uint8_t* w[R];
  const float* x[T];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r) w[r] = j.w + (r0 + r) * j.w_stride;
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const float*>(j.x + (t0 + t) * j.x_stride);
  const int64_t n16 = j.cols / 16;
  for (int64_t b = 0; b < n16; ++b) {
    __m512 xv[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x[t] + 16 * b);
    TRIATTN_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 wv = W::load512(w[r] + 2 * b * W::kWBytes);
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      float v = hsum512_ps(acc[r][t]);
      for (int64_t i = 16 * n16; i < j.cols; ++i) v += W::scalar(w[r], i) * x[t][i];
      j.y[(t0 + t) * j.y_stride + r0 + r] = v;
    }
}

// Float rows: decode through the 256-bit row streams, prefill through tile_float512.
// Tile: 6 rows x 4 tokens (24 accumulators, 4 activation vectors and a weight vector of the
// 32 registers), not the 4 x 4 of the integer kernels. Within a token block the activations
// come from L2 and the tile's rows from L1, so activation traffic per FMA is 64/R bytes.
// 6x4 prefilled fastest of 4x4, 5x5, 6x4 and 8x3; F32 weights, 1024-column passes and rows
// widened to f32 per token block gained nothing or lost (docs/benchmarks.md, "Prefill tiles"
// and "What was tried and did not help").
template <class W>
struct Float512Units {
  static constexpr int kRows = 1, kTile = 6, kTokens = kTileTokens;
  static constexpr int kLead = kGemvPrefetch, kLeadLocality = 3;  // gemv_streams' prefetch
  template <int S>
  static void gemv(const MatmulJob& j, const int64_t* u) { gemv_streams<FloatKernel<W>, S>(j, u); }
  template <int R, int T>
  static void tile(const MatmulJob& j, int64_t u0, int64_t t0) { tile_float512<W, R, T>(j, u0, t0); }
};
#endif

// ---- Q4_Kx8: Q4_K rows interleaved in groups of 8 (quant_blocks.h) ------------------------
#include "ops/x86_matmul_q4_kx8.inl"

// ---- Q4_0x8: Q4_0 rows interleaved in groups of 8 (quant_blocks.h) ------------------------
#include "ops/x86_matmul_q4_0x8.inl"

// ---- one driver for the interleaved layouts ----------------------------------------------
// G describes a layout (Q8_0x4Group, Q4_Kx8Group, Q4_0x8Group): its Block (one block column of
// a group of kRows rows, kElems elements per row) and Act (the activation block) types,
// block<T>(), which adds a block column's dot products for T tokens to one vector per token,
// store(), which writes a group's kRows results from that vector, kTile (groups per
// matrix-matrix tile) and kPrefetch (decode's prefetch distance in bytes).
template <class G>
inline const typename G::Block* group_blocks(const MatmulJob& j, int64_t g) {
  return reinterpret_cast<const typename G::Block*>(j.w + G::kRows * g * j.w_stride);
}

// Every cache line of the block kDistance bytes ahead of `block`, wherever it starts, into
// every cache level (kLocality 3: prefetcht0), from L2 on (2: prefetcht1) or as data read once
// (0: prefetchnta).
template <int kBytes, int kDistance, int kLocality>
inline void prefetch_bytes(const void* block) {
  const char* p = static_cast<const char*>(block) + kDistance;
  TRIATTN_UNROLL
  for (int off = 0; off < kBytes; off += 64) __builtin_prefetch(p + off, 0, kLocality);
}
template <class G, int kDistance = G::kPrefetch, int kLocality = 3>
inline void prefetch_block(const typename G::Block* block) {
  prefetch_bytes<static_cast<int>(sizeof(typename G::Block)), kDistance, kLocality>(block);
}

// Small batches of a layout with G::kFarPrefetch > 0 also prefetch that far ahead into L2:
// past one token tile a stream is paced by compute, and T0 prefetches 1.5 KB ahead alone
// leave the computing and the waiting to add up instead of overlapping. Measured
// for Q8_0x4 (docs/benchmarks.md, "Batched decode"); the 4-bit layouts, bound by their
// unpacking at 8 tokens, did not gain and keep one distance.
template <class G>
constexpr int kFarPrefetch = [] {
  if constexpr (requires { G::kFarPrefetch; }) return G::kFarPrefetch;
  return 0;
}();

// S groups (groups[s]) against tokens [t0, t0+T), each group's blocks in order. Decode and
// small batches (kPrefetch: S streams from evenly spaced parts of the range, each block
// prefetched G::kPrefetch bytes ahead) and the prefill tiles (S adjacent groups, read from
// L1 for every token tile of a block after the first) are this one loop, so every
// (row, token) is summed the same way whichever path and stream carries it.
template <class G, int S, int T, bool kPrefetch>
inline void group_streams(const MatmulJob& j, const int64_t* groups, int64_t t0) {
  const int64_t nb = j.cols / G::kElems;
  const typename G::Block* w[S];
  __m256 acc[S][T];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    w[s] = group_blocks<G>(j, groups[s]);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[s][t] = _mm256_setzero_ps();
  }
  const typename G::Act* x[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const typename G::Act*>(j.x + (t0 + t) * j.x_stride);
  for (int64_t b = 0; b < nb; ++b) {
    const typename G::Act* a[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) a[t] = x[t] + b;
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) {
      if constexpr (kPrefetch) prefetch_block<G>(w[s] + b);
      G::template block<T>(w[s] + b, a, acc[s]);
    }
  }
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) G::store(acc[s][t], j.y + (t0 + t) * j.y_stride + G::kRows * groups[s]);
}

// Layouts whose 512-bit kernel takes several pairs and tokens at once (G::block_pairs, up to
// G::kPairStreams pairs and G::kPairTokens tokens) rather than one pair (G::block_pair).
template <class G>
constexpr bool kHasBlockPairs =
#if defined(__AVX512BW__)
    requires { G::kPairStreams; };
#else
    false;
#endif

#if defined(__AVX512BW__)
// group_streams on 512-bit vectors: each stream two adjacent groups (first[s], first[s] + 1)
// side by side (G::block_pairs or G::block_pair).
template <class G, int S, int T, bool kPrefetch>
inline void group_pair_streams(const MatmulJob& j, const int64_t* first, int64_t t0) {
  const int64_t nb = j.cols / G::kElems;
  const typename G::Block* w0[S];
  const typename G::Block* w1[S];
  __m512 acc[S][T];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    w0[s] = group_blocks<G>(j, first[s]);
    w1[s] = group_blocks<G>(j, first[s] + 1);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[s][t] = _mm512_setzero_ps();
  }
  const typename G::Act* x[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const typename G::Act*>(j.x + (t0 + t) * j.x_stride);
  for (int64_t b = 0; b < nb; ++b) {
    const typename G::Act* a[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) a[t] = x[t] + b;
    if constexpr (kPrefetch) {
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s) {
        prefetch_block<G>(w0[s] + b);
        prefetch_block<G>(w1[s] + b);
        if constexpr (kFarPrefetch<G> > 0) {
          prefetch_block<G, kFarPrefetch<G>, 2>(w0[s] + b);
          prefetch_block<G, kFarPrefetch<G>, 2>(w1[s] + b);
        }
      }
    }
    if constexpr (kHasBlockPairs<G>) {
      static_assert(S <= G::kPairStreams && T <= G::kPairTokens);
      const typename G::Block* c0[S];
      const typename G::Block* c1[S];
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s) c0[s] = w0[s] + b, c1[s] = w1[s] + b;
      G::template block_pairs<S, T>(c0, c1, a, acc);
    } else {
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s) G::template block_pair<T>(w0[s] + b, w1[s] + b, a, acc[s]);
    }
  }
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) G::store_pair(acc[s][t], j.y + (t0 + t) * j.y_stride + G::kRows * first[s]);
}
#endif

// ---- one driver for every layout --------------------------------------------------------
// A "unit" is what the kernels compute at once per weight stream: one row (RowUnits) or one
// group of interleaved rows (GroupUnits). Each provides kRows (rows per unit), kTile
// (units per matrix-matrix tile), kTokens (tokens per tile), gemv<S>(job, units),
// tile<R, T>(job, u0, t0), and kLead / kLeadLocality: how many bytes ahead of the block it
// reads, and with which hint, each of gemv's streams prefetches (see matmul_units).
template <class K>
struct RowUnits {
  static constexpr int kRows = 1, kTile = kTileRows, kTokens = kTileTokens;
  static constexpr int kLead = kGemvPrefetch, kLeadLocality = 3;  // gemv_streams' prefetch
  template <int S>
  static void gemv(const MatmulJob& j, const int64_t* u) { gemv_streams<K, S>(j, u); }
  template <int R, int T>
  static void tile(const MatmulJob& j, int64_t u0, int64_t t0) { ops::tile<K, R, T>(j, u0, t0); }
};

// Layouts with 512-bit kernels (G::block_pair / store_pair: two groups side by side) use them
// for prefill tiles of two groups where AVX-512 exists; decode and a range's odd last group
// keep the 256-bit ones. Each byte dot product then covers twice the rows for the same
// activation broadcast (docs/benchmarks.md, "Prefill tiles").
template <class G>
constexpr bool kHasPair =
#if defined(__AVX512BW__)
    requires { &G::store_pair; };
#else
    false;
#endif

// Layouts with block_pairs (Q8_0x4) take prefill tiles of G::kPairStreams pairs by
// G::kPairTokens tokens (2 x 8; docs/benchmarks.md, "Batched decode"), and their small batches
// in one pass of that many tokens over that many pair streams (4 groups, as many streams as the
// 256-bit path) where 4 pair streams took passes of 4 (docs/benchmarks.md, "Batched decode").
// What a layout without block_pairs takes: kGemvStreams pair streams, kTileTokens tokens.
template <class G>
constexpr int kPairStreamsOf = [] {
  if constexpr (kHasBlockPairs<G>) return G::kPairStreams;
  return kGemvStreams;
}();
template <class G>
constexpr int kPairTokensOf = [] {
  if constexpr (kHasBlockPairs<G>) return G::kPairTokens;
  return kTileTokens;
}();

template <class G>
struct GroupUnits {
  static constexpr int kRows = G::kRows;
  static constexpr int kTile = kHasBlockPairs<G> ? 2 * kPairStreamsOf<G> : kHasPair<G> ? 2 : G::kTile;
  static constexpr int kTokens = kPairTokensOf<G>;
  static constexpr int kLead = G::kPrefetch, kLeadLocality = 3;  // group_streams' prefetch_block
  // small_batch's pair streams.
  static constexpr int kPairStreams = kPairStreamsOf<G>;
  template <int S>
  static void gemv(const MatmulJob& j, const int64_t* u) { group_streams<G, S, 1, true>(j, u, 0); }
  // small_batch's streams of T tokens: one unit each, or (kPairs, where the layout has 512-bit
  // kernels) two adjacent units side by side.
  static constexpr bool kHasPairs = kHasPair<G>;
  template <int S, int T, bool kPairs>
  static void gemv_tokens(const MatmulJob& j, const int64_t* u, int64_t t0) {
#if defined(__AVX512BW__)
    if constexpr (kPairs) return group_pair_streams<G, S, T, true>(j, u, t0);
#endif
    group_streams<G, S, T, true>(j, u, t0);
  }
  template <int R, int T>
  static void tile(const MatmulJob& j, int64_t u0, int64_t t0) {
#if defined(__AVX512BW__)
    if constexpr (kHasPair<G> && R >= 2) {
      constexpr int P = R / 2;  // pairs; an odd last group by the 256-bit kernel
      int64_t first[P];
      TRIATTN_UNROLL
      for (int p = 0; p < P; ++p) first[p] = u0 + 2 * p;
      group_pair_streams<G, P, T, false>(j, first, t0);
      if constexpr (R % 2 == 1) {
        const int64_t last = u0 + R - 1;
        group_streams<G, 1, T, false>(j, &last, t0);
      }
      return;
    }
#endif
    int64_t groups[R];
    TRIATTN_UNROLL
    for (int r = 0; r < R; ++r) groups[r] = u0 + r;
    group_streams<G, R, T, false>(j, groups, t0);
  }
};

#if defined(__AVX512BW__)
// ---- Q8_0x16: Q8_0 rows interleaved in groups of 16 (quant_blocks.h) ----------------------
#include "ops/x86_matmul_q8_0x16.inl"
#endif

// Activation bytes of one token block of a matrix-matrix product (matmul_units).
constexpr size_t kActivationBlockBytes = size_t{512} << 10;

// Calls f.template operator()<n>() for a run-time n in [1, N]: how a partial tile (of tokens
// or of rows) picks its compile-time size.
template <int N, class F>
void with_count(int n, F&& f) {
  if constexpr (N > 1) {
    if (n < N) return with_count<N - 1>(n, f);
  }
  f.template operator()<N>();
}

// A few tokens (sequences decoding together; small_batch below) up to this many.
constexpr int64_t kSmallBatch = TRIATTN_SMALL_BATCH;
// Weight bytes per slice of small_batch: read from memory by the first token tile, from L2 by
// the others.
constexpr int64_t kSmallBatchSliceBytes = int64_t{512} << 10;

// small_batch over slices of kSmallBatchSliceBytes, a token tile (TT tokens) at a time: S
// streams of P units each (P = 2: two adjacent units side by side on 512-bit vectors).
template <class U, int S, int P, int TT>
void small_batch_slices(const MatmulJob& j, int64_t u0, int64_t u1) {
  constexpr bool kPairs = P == 2;
  const int64_t unit_bytes = U::kRows * static_cast<int64_t>(j.w_stride);
  // One pass over the tokens needs no slices (their point is L2 reuse between passes); else
  // whole multiples of the S x P units a step takes, so that no slice ends with units left to
  // one stream (Q8_0x16's 52 KB units of ffn_down: slices of 10 units were 6 in streams and 4
  // one at a time).
  constexpr int64_t kStep = S * P;
  const int64_t slice = j.n_tokens <= TT ? u1 - u0
                                         : std::max<int64_t>(1, kSmallBatchSliceBytes / std::max<int64_t>(1, unit_bytes) / kStep) * kStep;
  for (int64_t c0 = u0; c0 < u1; c0 += slice) {
    const int64_t c1 = std::min(u1, c0 + slice), part = (c1 - c0) / kStep;
    for (int64_t t0 = 0; t0 < j.n_tokens; t0 += TT)
      with_count<TT>(static_cast<int>(std::min<int64_t>(TT, j.n_tokens - t0)), [&]<int T>() {
        for (int64_t i = 0; i < part; ++i) {
          int64_t units[S];
          TRIATTN_UNROLL
          for (int s = 0; s < S; ++s) units[s] = c0 + (s * part + i) * P;
          U::template gemv_tokens<S, T, kPairs>(j, units, t0);
        }
        for (int64_t u = c0 + kStep * part; u < c1; ++u) U::template gemv_tokens<1, T, false>(j, &u, t0);
      });
  }
}

// Rows [u0, u1) for a few tokens (sequences decoding together), as decode reads them:
// kGemvStreams units at once from evenly spaced parts of a slice, each stream prefetched,
// every token of a tile dotted with a block while it is in registers. The prefill tiles of
// matmul_units read each unit tile's weights as one or two plain streams, which made a batch
// of 2 slower than one sequence. Up to one token tile the streams are bound by memory and the
// 256-bit ones read it best; past it compute binds, and the 512-bit pairs do more per
// instruction (figures in docs/benchmarks.md, "Batched decode").
// Units with kBatchStreams (Q8_0x16) take that many streams of kBatchTokens tokens past one
// token tile, and kSmallStreams streams of up to a tile below it.
template <class U>
void small_batch(const MatmulJob& j, int64_t u0, int64_t u1) {
  if constexpr (requires { U::kBatchStreams; }) {
    if (j.n_tokens > kTileTokens) return small_batch_slices<U, U::kBatchStreams, 1, U::kBatchTokens>(j, u0, u1);
    small_batch_slices<U, U::kSmallStreams, 1, kTileTokens>(j, u0, u1);
  } else {
    if constexpr (U::kHasPairs)
      if (j.n_tokens > kTileTokens) return small_batch_slices<U, U::kPairStreams, 2, U::kTokens>(j, u0, u1);
    small_batch_slices<U, kGemvStreams, 1, kTileTokens>(j, u0, u1);
  }
}

// Unit tile [u, u + R) for tokens [b0, b1), in tiles of U::kTokens.
template <class U, int R>
void token_block(const MatmulJob& j, int64_t u, int64_t b0, int64_t b1) {
  for (int64_t t = b0; t < b1; t += U::kTokens)
    with_count<U::kTokens>(static_cast<int>(std::min<int64_t>(U::kTokens, b1 - t)),
                            [&]<int T>() { U::template tile<R, T>(j, u, t); });
}

// Rows [r0, r1) (multiples of U::kRows, cpu_dispatch.h) for every token.
template <class U>
void matmul_units(const MatmulJob& j, int64_t r0, int64_t r1) {
  const int64_t u0 = r0 / U::kRows, u1 = r1 / U::kRows;
  if (j.n_tokens == 1) {  // decode: kGemvStreams units at once from evenly spaced parts
    constexpr int S = kGemvStreams;
    const int64_t part = (u1 - u0) / S;
    // Each stream prefetches U::kLead bytes ahead of the block it reads, so a range's first
    // kLead bytes per stream would arrive one demand miss after another: bring them in
    // together first. A range is a claim of the thread pool, several per call and a few
    // hundred calls per token. A token's matrices in decode order read a few percent faster
    // (docs/benchmarks.md, "Decode streams and prefetch distances").
    // (Past a share shorter than kLead this reaches into the next one, as the streams' own
    // prefetches run past their ends.)
    if (part > 0) {
      const size_t unit = static_cast<size_t>(U::kRows) * j.w_stride;
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s)
        prefetch_bytes<U::kLead, 0, U::kLeadLocality>(j.w + static_cast<size_t>(u0 + s * part) * unit);
    }
    for (int64_t i = 0; i < part; ++i) {
      int64_t units[S];
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s) units[s] = u0 + s * part + i;
      U::template gemv<S>(j, units);
    }
    for (int64_t u = u0 + S * part; u < u1; ++u) U::template gemv<1>(j, &u);
    return;
  }
  if constexpr (requires { &U::template gemv_tokens<1, 1, false>; })
    if (j.n_tokens <= kSmallBatch) return small_batch<U>(j, u0, u1);
  // Tokens in blocks whose activations fit in L2 (kActivationBlockBytes), and within a block
  // the unit tiles outermost: a tile's weights stay in L1 while the block's tokens pass over
  // them, and the block's activations stay in L2 while every tile of the range passes over
  // them. Without the token blocks, F32 activations (F16 and BF16 weights) of a 512-token
  // prefill (2-6 MB) streamed from L3 once per tile of four rows.
  const int64_t block = std::max<int64_t>(
      U::kTokens, static_cast<int64_t>(kActivationBlockBytes / j.x_stride) / U::kTokens * U::kTokens);
  for (int64_t b0 = 0; b0 < j.n_tokens; b0 += block) {
    const int64_t b1 = std::min(j.n_tokens, b0 + block);
    int64_t u = u0;
    for (; u + U::kTile <= u1; u += U::kTile) token_block<U, U::kTile>(j, u, b0, b1);
    // The last rows as one tile of 1..kTile-1 units: the scheduler's ranges are multiples of
    // 16 rows, so a 6-row float tile leaves 2 or 4 rows at the end of most, and as tiles of
    // one row each their activations would pass through L1 once per row.
    if constexpr (U::kTile > 1)
      if (u < u1)
        with_count<U::kTile - 1>(static_cast<int>(u1 - u), [&]<int R>() { token_block<U, R>(j, u, b0, b1); });
  }
}

void fill_matmul(KernelTable& t) {
#if defined(__AVX512F__)
  t.matmul[static_cast<int>(DType::F32)] = matmul_units<Float512Units<F32W>>;
  t.matmul[static_cast<int>(DType::F16)] = matmul_units<Float512Units<F16W>>;
  t.matmul[static_cast<int>(DType::BF16)] = matmul_units<Float512Units<BF16W>>;
#else
  t.matmul[static_cast<int>(DType::F32)] = matmul_units<RowUnits<FloatKernel<F32W>>>;
  t.matmul[static_cast<int>(DType::F16)] = matmul_units<RowUnits<FloatKernel<F16W>>>;
  t.matmul[static_cast<int>(DType::BF16)] = matmul_units<RowUnits<FloatKernel<BF16W>>>;
#endif
  t.matmul[static_cast<int>(DType::Q8_0)] = matmul_units<RowUnits<Q8_0Kernel>>;
  t.matmul[static_cast<int>(DType::Q8_0x4)] = matmul_units<GroupUnits<Q8_0x4Group>>;
#if defined(__AVX512BW__)
  t.matmul[static_cast<int>(DType::Q8_0x16)] = matmul_units<Q8_0x16Units>;
  t.q8_0_layout = DType::Q8_0x16;
#endif
  t.matmul[static_cast<int>(DType::Q4_0)] = matmul_units<RowUnits<Q4_0Kernel>>;
  t.matmul[static_cast<int>(DType::Q4_0x8)] = matmul_units<GroupUnits<Q4_0x8Group>>;
  t.matmul[static_cast<int>(DType::Q4_K)] = matmul_units<RowUnits<K4Kernel<BlockQ4_K, false>>>;
  t.matmul[static_cast<int>(DType::Q4_Kx8)] = matmul_units<GroupUnits<Q4_Kx8Group>>;
  t.matmul[static_cast<int>(DType::Q5_K)] = matmul_units<RowUnits<K4Kernel<BlockQ5_K, true>>>;
  t.matmul[static_cast<int>(DType::Q6_K)] = matmul_units<RowUnits<Q6_KKernel>>;
}

}  // namespace
}  // namespace triattn::ops
