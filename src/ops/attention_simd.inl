// The SIMD attention kernel (see attention.h for the contract and attention.cpp for the
// dispatch), compiled three times: by attention_avx2.cpp (256-bit vectors: AVX2 + FMA +
// F16C), by attention_avx512.cpp (512-bit: AVX-512F/DQ) and by attention_neon.cpp (128-bit
// AArch64 Advanced SIMD), which define TRIATTN_ATTN_WIDTH and TRIATTN_ATTEND_NAME. The
// algorithm is written once against the small vector vocabulary of the first section
// (VF: the score and value loops; SV: the softmax over a block). Per block of keys
// (block_keys(row) of them, attention.h):
//   1. scores of every query against the block: kQueryTile queries (4 at 512 bits, 2 at
//      256) x four keys per register tile, so each key row is converted once per tile of
//      queries and reduced 4 keys at a time (two queries' sums in one tree at 512 bits),
//      each sum in one or two interleaved parts (the stream's score_parts, 512 bits);
//   2. online softmax per query: new running max, rescale factor, p = exp(score - max);
//   3. values: kQueryTile queries x 4 vectors of dims per register tile (one or two queries
//      x 8 vectors at 512 bits), the rescale folded into the load of the running output.
// The paired sums, the 8-vector values pass and max_of below were measured together
// (docs/benchmarks.md, "Attention kernel").
// The block's K and V rows come from memory once and from L1 for every further query.
// Rows are F32, F16 or Q8_0 (Rows below): each vector of kW elements is converted to floats
// as it is loaded (a Q8_0 vector: int8 -> int32 -> float, times its block's scale), so the
// loops are the same for every row type and no dequantized copy of the cache is made.
// Everything is in an anonymous namespace, so the copies never collide.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "ops/attention.h"
#include "ops/quant_blocks.h"
#if TRIATTN_ATTN_WIDTH == 128
#include <arm_neon.h>

#include "ops/neon_exp.inl"
#else
#include <immintrin.h>

#include "ops/x86_exp.inl"
#include "ops/x86_reduce.inl"
#endif

namespace triattn::attention_detail {

namespace {

// ---- the vectors of the score and value loops (VF) and of the softmax (SV) ----------------
#if TRIATTN_ATTN_WIDTH == 128
using VF = float32x4_t;
constexpr int kW = 4;  // floats per vector
// 4 x 4 score accumulators, 4 key vectors and their scales fit in 32 registers.
constexpr int kQueryTile = 4;
inline VF vzero() { return vdupq_n_f32(0); }
inline VF vloadf(const float* p) { return vld1q_f32(p); }
inline void vstoref(float* p, VF v) { vst1q_f32(p, v); }
inline VF vfmadd(VF a, VF b, VF c) { return vfmaq_f32(c, a, b); }
inline VF vadd(VF a, VF b) { return vaddq_f32(a, b); }
inline VF vmul(VF a, VF b) { return vmulq_f32(a, b); }
inline VF vset1(float x) { return vdupq_n_f32(x); }
inline VF vbroadcast(const float* p) { return vld1q_dup_f32(p); }
inline float vhsum(VF v) { return vaddvq_f32(v); }
// dst[0..4) = scale * (the horizontal sums of a, b, c, d).
inline void store_hsum4(float* dst, VF a, VF b, VF c, VF d, float scale) {
  vst1q_f32(dst, vmulq_n_f32(vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)), scale));
}
inline VF vf16(const void* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p)))); }
inline VF vf32(const void* p) { return vld1q_f32(static_cast<const float*>(p)); }
inline VF vf16_broadcast(uint16_t h) { return vdupq_n_f32(f16_to_f32(h)); }
inline VF vi8(const void* p) {  // 4 bytes: the last vector of a row must not read past it
  int32_t four;
  std::memcpy(&four, p, 4);
  const int16x8_t w = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
}
using SV = float32x4_t;
constexpr int kSW = 4;
inline SV sload(const float* p) { return vld1q_f32(p); }
inline void sstore(float* p, SV v) { vst1q_f32(p, v); }
inline SV sset1(float x) { return vdupq_n_f32(x); }
inline SV smax(SV a, SV b) { return vmaxq_f32(a, b); }
inline SV sadd(SV a, SV b) { return vaddq_f32(a, b); }
inline SV ssub(SV a, SV b) { return vsubq_f32(a, b); }
inline SV smul(SV a, SV b) { return vmulq_f32(a, b); }
inline SV sexp(SV x) { return ops::exp4(x); }
inline float shmax(SV v) { return vmaxvq_f32(v); }
inline float shsum(SV v) { return vaddvq_f32(v); }
#elif TRIATTN_ATTN_WIDTH == 256
// AVX2: the softmax on 256-bit vectors (exp256).
using SV = __m256;
constexpr int kSW = 8;
inline SV sload(const float* p) { return _mm256_loadu_ps(p); }
inline void sstore(float* p, SV v) { _mm256_storeu_ps(p, v); }
inline SV sset1(float x) { return _mm256_set1_ps(x); }
inline SV smax(SV a, SV b) { return _mm256_max_ps(a, b); }
inline SV sadd(SV a, SV b) { return _mm256_add_ps(a, b); }
inline SV ssub(SV a, SV b) { return _mm256_sub_ps(a, b); }
inline SV smul(SV a, SV b) { return _mm256_mul_ps(a, b); }
inline SV sexp(SV x) { return ops::exp256(x); }
inline float shmax(SV v) { return ops::hmax_ps(v); }
inline float shsum(SV v) { return ops::hsum_ps(v); }
// The horizontal sums of a, b, c, d as the four lanes of one vector.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}
#endif

#if TRIATTN_ATTN_WIDTH == 512
using VF = __m512;
constexpr int kW = 16;  // floats per vector
// Queries per register tile: 4 x 4 keys of score accumulators (and 4 x 4 vectors of value
// accumulators) fit in 32 registers, 2 in 16. Each key and value row is converted from f16
// once per tile of queries, and f16 conversions are the costly instruction here (Ice Lake:
// ~1.1-1.7 per ns against ~4-5 FMAs).
constexpr int kQueryTile = 4;
inline VF vzero() { return _mm512_setzero_ps(); }
inline VF vloadf(const float* p) { return _mm512_loadu_ps(p); }
inline void vstoref(float* p, VF v) { _mm512_storeu_ps(p, v); }
inline VF vfmadd(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline VF vset1(float x) { return _mm512_set1_ps(x); }
inline VF vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
// The 16 lanes folded to 8 (same sum), for the 256-bit horizontal reductions.
inline __m256 fold(VF v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}
inline float vhsum(VF v) { return ops::hsum_ps(fold(v)); }
// The softmax on the same 512-bit vectors (exp512), faster than exp256 (docs/benchmarks.md,
// "Attention kernel").
using SV = VF;
constexpr int kSW = kW;
inline SV sload(const float* p) { return vloadf(p); }
inline void sstore(float* p, SV v) { vstoref(p, v); }
inline SV sset1(float x) { return vset1(x); }
inline SV smax(SV a, SV b) { return _mm512_max_ps(a, b); }
inline SV sadd(SV a, SV b) { return _mm512_add_ps(a, b); }
inline SV ssub(SV a, SV b) { return _mm512_sub_ps(a, b); }
inline SV smul(SV a, SV b) { return vmul(a, b); }
inline SV sexp(SV x) { return ops::exp512(x); }
inline float shmax(SV v) { return ops::hmax_ps(_mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1))); }
inline float shsum(SV v) { return vhsum(v); }
// Two queries' four keys at once: d0[0..4) = scale * (the sums of a[0..4)), d1 from b. One
// tree over the eight vectors (halves, then quarters, then lanes) takes about 25 shuffles
// and adds where store_hsum4 twice takes about 40 (its hadds are three operations each);
// at the narrower widths it is store_hsum4 twice (defined after the width sections).
// Most of its shuffles cross 128-bit parts (on Zen 5 they share a port with vcvtph2ps); a
// tree that stays inside the parts was slower out of cache (docs/benchmarks.md, "What was
// tried and did not help").
// Lanes of a and b summed half against half: [a's 8 partial sums | b's 8].
inline VF fold_pair(VF a, VF b) {
  return _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xFFFF, a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_maskz_shuffle_f32x4(0xFFFF, a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
// fold_pair of (a0, a1) and of (a2, a3) to one vector whose 128-bit part i holds four
// partial sums of a_i.
inline VF fold_quad(VF a01, VF a23) {
  return _mm512_add_ps(_mm512_maskz_shuffle_f32x4(0xFFFF, a01, a23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_maskz_shuffle_f32x4(0xFFFF, a01, a23, _MM_SHUFFLE(3, 1, 3, 1)));
}
inline void store_hsum4x2(float* d0, float* d1, const VF* a, const VF* b, float scale) {
  const VF qa = fold_quad(fold_pair(a[0], a[1]), fold_pair(a[2], a[3]));
  const VF qb = fold_quad(fold_pair(b[0], b[1]), fold_pair(b[2], b[3]));
  // Per 128-bit part i: [a_i 0+2, b_i 0+2, a_i 1+3, b_i 1+3], then the two halves summed.
  const VF x = _mm512_add_ps(_mm512_maskz_unpacklo_ps(0xFFFF, qa, qb), _mm512_maskz_unpackhi_ps(0xFFFF, qa, qb));
  const VF y = _mm512_add_ps(x, _mm512_maskz_permute_ps(0xFFFF, x, _MM_SHUFFLE(1, 0, 3, 2)));
  // Lane 4i holds a_i's sum, lane 4i+1 b_i's: gather them to [a0..a3 | b0..b3].
  // (The masked forms throughout: GCC 12's unmasked ones start from _mm512_undefined_ps(),
  // which -Wuninitialized reports.)
  const VF r = _mm512_mul_ps(
      _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), y),
      _mm512_set1_ps(scale));
  _mm_storeu_ps(d0, _mm512_maskz_extractf32x4_ps(0xF, r, 0));
  _mm_storeu_ps(d1, _mm512_maskz_extractf32x4_ps(0xF, r, 1));
}
// One query's four keys, summed as in a pair (the tree with the query in both halves): a
// query's scores must not depend on which queries share its call.
inline void store_hsum4x1(float* d, const VF* a, float scale) {
  float unused[4];
  store_hsum4x2(d, unused, a, a, scale);
}
inline VF vf16(const void* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
inline VF vf32(const void* p) { return _mm512_loadu_ps(static_cast<const float*>(p)); }
// One f16 in every lane: a word broadcast and one conversion (the scalar route, F16C's
// _cvtsh_ss then a float broadcast, takes twice the instructions).
inline VF vf16_broadcast(uint16_t h) { return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(h))); }
inline VF vi8(const void* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
}
#elif TRIATTN_ATTN_WIDTH == 256
using VF = __m256;
constexpr int kW = 8;
constexpr int kQueryTile = 2;
inline VF vzero() { return _mm256_setzero_ps(); }
inline VF vloadf(const float* p) { return _mm256_loadu_ps(p); }
inline void vstoref(float* p, VF v) { _mm256_storeu_ps(p, v); }
inline VF vfmadd(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF vadd(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF vmul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline VF vset1(float x) { return _mm256_set1_ps(x); }
inline VF vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline float vhsum(VF v) { return ops::hsum_ps(v); }
inline void store_hsum4(float* dst, VF a, VF b, VF c, VF d, float scale) {
  _mm_storeu_ps(dst, _mm_mul_ps(hsum4(a, b, c, d), _mm_set1_ps(scale)));
}
inline VF vf16(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
inline VF vf32(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
inline VF vf16_broadcast(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(h))); }
inline VF vi8(const void* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))));
}
#elif TRIATTN_ATTN_WIDTH != 128
#error "TRIATTN_ATTN_WIDTH must be 128, 256 or 512"
#endif

#if TRIATTN_ATTN_WIDTH != 512
// Two queries' four keys (store_hsum4x2) and one query's (store_hsum4x1), as the 512-bit
// section defines them with its paired tree: here each query's sums are store_hsum4's.
inline void store_hsum4x2(float* d0, float* d1, const VF* a, const VF* b, float scale) {
  store_hsum4(d0, a[0], a[1], a[2], a[3], scale);
  store_hsum4(d1, b[0], b[1], b[2], b[3], scale);
}
inline void store_hsum4x1(float* d, const VF* a, float scale) { store_hsum4(d, a[0], a[1], a[2], a[3], scale); }
#endif

// ---- row types --------------------------------------------------------------------------
enum class Rows { F32, F16, Q8_0 };

// Bytes of one row of d elements.
template <Rows R>
constexpr size_t row_size(int d) {
  if constexpr (R == Rows::F32) return 4 * static_cast<size_t>(d);
  if constexpr (R == Rows::F16) return 2 * static_cast<size_t>(d);
  return static_cast<size_t>(d / ops::kQK) * sizeof(ops::BlockQ8_0);
}

// The scale of the Q8_0 block holding element e of `row`, in every lane (1 for float rows).
template <Rows R>
inline VF vscale(const uint8_t* row, int e) {
  if constexpr (R == Rows::Q8_0) {
    uint16_t h;
    std::memcpy(&h, row + (e / ops::kQK) * sizeof(ops::BlockQ8_0), sizeof h);
    return vf16_broadcast(h);
  } else {
    return vset1(1.0f);
  }
}

// Elements [e, e + kW) of `row` as floats; scale: vscale<R>(row, e) (unused for float rows).
template <Rows R>
inline VF vload_row(const uint8_t* row, int e, VF scale) {
  if constexpr (R == Rows::F16) return vf16(row + 2 * e);
  if constexpr (R == Rows::F32) return vf32(row + 4 * e);
  if constexpr (R == Rows::Q8_0) {
    const uint8_t* qs = row + (e / ops::kQK) * sizeof(ops::BlockQ8_0) + sizeof(uint16_t) + e % ops::kQK;
    return vmul(vi8(qs), scale);
  }
}

// Loops over the register tile must unroll completely, or GCC keeps the accumulators in
// memory (see ops/x86_matmul.inl).
#define ATTN_UNROLL _Pragma("GCC unroll 8")

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The largest of p[0..n), n >= 1, in four running maxima: std::max_element's single
// compare-and-select chain took ~2 cycles a key, as much as a tenth of the kernel's time.
// (Four named variables: as an array GCC kept them in memory.)
inline int32_t max_of(const int32_t* p, int n) {
  int32_t m0 = p[0], m1 = p[0], m2 = p[0], m3 = p[0];
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    m0 = std::max(m0, p[k]);
    m1 = std::max(m1, p[k + 1]);
    m2 = std::max(m2, p[k + 2]);
    m3 = std::max(m3, p[k + 3]);
  }
  for (; k < n; ++k) m0 = std::max(m0, p[k]);
  return std::max(std::max(m0, m1), std::max(m2, m3));
}

// Prefetching. Per block the kernel reads the block's K rows (scores), then its V rows
// (values): one stream at a time, so a prefetch ahead within the stream being read has
// little lead over its use. Instead each phase prefetches the rows the other phase reads
// next: while scoring block b the kernel prefetches b's V rows, and while accumulating b's
// values it prefetches the K rows of block b+1 (the first block's K rows are prefetched on
// entry). Every row is prefetched once, a whole phase (one block, block_keys rows) before
// its use.
// Cross-phase beat prefetching ahead within the stream; the distances and block sizes tried
// are in docs/benchmarks.md ("Attention kernel", "What was tried and did not help").
// x86: prefetchnta, the rows are read once (measured against prefetcht0, same section).
// AArch64 keeps PRFM PLDL1KEEP, unmeasured.
inline void prefetch_rows(const uint8_t* p, size_t bytes) {
  constexpr int kLocality = TRIATTN_ATTN_WIDTH == 128 ? 3 : 0;
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, kLocality);
}

// Vectors that share one Q8_0 block scale (kW divides 32).
constexpr int kVecPerBlock = ops::kQK / kW;

// sc[jj][k] = scale * q[jj]·key(i0 + k) for jj < J, k < nb.
// pf: null, or rows to prefetch in step with the keys (pf + k*row as key i0+k is read).
// S: the parts each sum is made of (AttentionStream::score_parts): the row's vectors go to
// them in turn (vector i to part i % S), the parts are added in order, and the sum's lanes
// are reduced by the tile's tree (vhsum for the last keys, which are the same keys at every J):
// one query's scores are the same whatever other queries share its call.
// DC: the head dim when known at compile time (0: d_run), so the loop over a row unrolls whole
// and the compiler schedules the row's loads, conversions and FMAs as one straight run
// (faster, docs/benchmarks.md "Attention kernel"), the same sums in the same order.
template <Rows R, int J, int S, int DC = 0>
void block_scores(const float* const* q, int d_run, const uint8_t* keys, size_t row, int64_t i0,
                  int nb, float scale, float* const* sc, const uint8_t* pf) {
  const int d = DC ? DC : d_run;
  int k = 0;
  // (Tiles of 8 keys lost at depth: docs/benchmarks.md, "What was tried and did not help".)
  for (; k + 4 <= nb; k += 4) {
    const uint8_t* kr = keys + (i0 + k) * row;
    if (pf) prefetch_rows(pf + k * row, 4 * row);
    VF ks[4] = {vzero(), vzero(), vzero(), vzero()};  // Q8_0 block scales, set per block
    // Vector e / kW of the 4 rows into the accumulators a. Q8_0: a new block scale per key
    // when e starts a block (d is a multiple of 32), or at every step of a pass that skips
    // vectors (fresh).
    auto step = [&](int e, VF(&a)[J][4], bool fresh) __attribute__((always_inline)) {
      if (R == Rows::Q8_0 && (fresh || e % ops::kQK == 0)) {
        ATTN_UNROLL
        for (int u = 0; u < 4; ++u) ks[u] = vscale<R>(kr + u * row, e);
      }
      VF kv[4];
      ATTN_UNROLL
      for (int u = 0; u < 4; ++u) kv[u] = vload_row<R>(kr + u * row, e, ks[u]);
      ATTN_UNROLL
      for (int jj = 0; jj < J; ++jj) {
        const VF qv = vloadf(q[jj] + e);
        ATTN_UNROLL
        for (int u = 0; u < 4; ++u) a[jj][u] = vfmadd(qv, kv[u], a[jj][u]);
      }
    };
    VF sum[J][4];
    if constexpr (S == 1 || J <= 2) {
      // The parts side by side: e steps by S vectors, so a vector's part is a constant of the
      // unrolled body (the accumulators stay in registers when d is a run-time value too).
      VF acc[S][J][4];
      ATTN_UNROLL
      for (int p = 0; p < S; ++p)
        ATTN_UNROLL
        for (int jj = 0; jj < J; ++jj)
          ATTN_UNROLL
          for (int u = 0; u < 4; ++u) acc[p][jj][u] = vzero();
      int e = 0;
      ATTN_UNROLL
      for (; e + S * kW <= d; e += S * kW)
        ATTN_UNROLL
        for (int p = 0; p < S; ++p) step(e + p * kW, acc[p], false);
      if (e < d) step(e, acc[0], false);  // an odd last vector: part 0
      ATTN_UNROLL
      for (int jj = 0; jj < J; ++jj)
        ATTN_UNROLL
        for (int u = 0; u < 4; ++u) {
          sum[jj][u] = acc[0][jj][u];
          ATTN_UNROLL
          for (int p = 1; p < S; ++p) sum[jj][u] = vadd(sum[jj][u], acc[p][jj][u]);
        }
    } else {
      // Four queries in two parts would take 32 accumulators besides the key vectors: the
      // parts are made one after the other instead, the first kept in sum meanwhile (16
      // stores and loads a tile; these tiles run 3-7% slower than in one part, the
      // compiler's spills of the side-by-side form up to 8%, docs/benchmarks.md).
      static_assert(S == 2);
      VF acc[J][4];
      ATTN_UNROLL
      for (int p = 0; p < S; ++p) {
        ATTN_UNROLL
        for (int jj = 0; jj < J; ++jj)
          ATTN_UNROLL
          for (int u = 0; u < 4; ++u) acc[jj][u] = vzero();
        ATTN_UNROLL
        for (int e = p * kW; e < d; e += S * kW) step(e, acc, true);
        ATTN_UNROLL
        for (int jj = 0; jj < J; ++jj)
          ATTN_UNROLL
          for (int u = 0; u < 4; ++u) sum[jj][u] = p == 0 ? acc[jj][u] : vadd(sum[jj][u], acc[jj][u]);
      }
    }
    ATTN_UNROLL
    for (int jj = 0; jj + 2 <= J; jj += 2) store_hsum4x2(sc[jj] + k, sc[jj + 1] + k, sum[jj], sum[jj + 1], scale);
    if constexpr (J % 2) store_hsum4x1(sc[J - 1] + k, sum[J - 1], scale);
  }
  for (; k < nb; ++k) {
    VF acc[S][J];
    ATTN_UNROLL
    for (int p = 0; p < S; ++p)
      ATTN_UNROLL
      for (int jj = 0; jj < J; ++jj) acc[p][jj] = vzero();
    const uint8_t* kr = keys + (i0 + k) * row;
    if (pf) prefetch_rows(pf + k * row, row);
    for (int e = 0; e < d; e += kW) {
      const VF kv = vload_row<R>(kr, e, vscale<R>(kr, e));
      VF* a = acc[(e / kW) % S];
      ATTN_UNROLL
      for (int jj = 0; jj < J; ++jj) a[jj] = vfmadd(vloadf(q[jj] + e), kv, a[jj]);
    }
    ATTN_UNROLL
    for (int jj = 0; jj < J; ++jj) {
      VF sum = acc[0][jj];
      ATTN_UNROLL
      for (int p = 1; p < S; ++p) sum = vadd(sum, acc[p][jj]);
      sc[jj][k] = scale * vhsum(sum);
    }
  }
}

// block_scores with the usual head dims fixed at compile time (64: Llama 3.2 1B; 128: Qwen3,
// Llama 3 8B; 256: Gemma), any other at run time.
template <Rows R, int J, int S>
void block_scores_any(const float* const* q, int d, const uint8_t* keys, size_t row, int64_t i0,
                      int nb, float scale, float* const* sc, const uint8_t* pf) {
  if (d == 128) return block_scores<R, J, S, 128>(q, d, keys, row, i0, nb, scale, sc, pf);
  if (d == 64) return block_scores<R, J, S, 64>(q, d, keys, row, i0, nb, scale, sc, pf);
  if (d == 256) return block_scores<R, J, S, 256>(q, d, keys, row, i0, nb, scale, sc, pf);
  block_scores<R, J, S>(q, d, keys, row, i0, nb, scale, sc, pf);
}

// out[jj][e0 .. e0 + kW*NV) = corr[jj] * out[jj][...] + Σ_k p[jj][k] * value(i0 + k)[...].
// pf: as for block_scores.
template <Rows R, int J, int NV>
void block_values(const uint8_t* values, size_t row, int64_t i0, int nb, int e0,
                  const float* const* p, const float* corr, float* const* out, const uint8_t* pf) {
  VF acc[J][NV];
  ATTN_UNROLL
  for (int jj = 0; jj < J; ++jj) {
    const VF c = vset1(corr[jj]);
    ATTN_UNROLL
    for (int v = 0; v < NV; ++v) acc[jj][v] = vmul(c, vloadf(out[jj] + e0 + kW * v));
  }
  const uint8_t* vr = values + i0 * row;
  for (int k = 0; k < nb; ++k, vr += row) {
    if (pf) prefetch_rows(pf + k * row, row);
    // Q8_0: e0 is a multiple of 32 when NV spans whole blocks, so vectors v and
    // v + kVecPerBlock start new blocks; otherwise (a 1-vector tail) each loads its own scale.
    VF vs[NV];
    ATTN_UNROLL
    for (int v = 0; v < NV; ++v)
      vs[v] = (NV % kVecPerBlock == 0 && v % kVecPerBlock != 0) ? vs[v - 1] : vscale<R>(vr, e0 + kW * v);
    VF vv[NV];
    ATTN_UNROLL
    for (int v = 0; v < NV; ++v) vv[v] = vload_row<R>(vr, e0 + kW * v, vs[v]);
    ATTN_UNROLL
    for (int jj = 0; jj < J; ++jj) {
      const VF pk = vbroadcast(p[jj] + k);
      ATTN_UNROLL
      for (int v = 0; v < NV; ++v) acc[jj][v] = vfmadd(pk, vv[v], acc[jj][v]);
    }
  }
  ATTN_UNROLL
  for (int jj = 0; jj < J; ++jj)
    ATTN_UNROLL
    for (int v = 0; v < NV; ++v) vstoref(out[jj] + e0 + kW * v, acc[jj][v]);
}

// pf: prefetched during the first pass over the rows only.
template <Rows R, int J>
void block_values_all(const uint8_t* values, size_t row, int64_t i0, int nb, int d,
                      const float* const* p, const float* corr, float* const* out,
                      const uint8_t* pf) {
  int e0 = 0;
  // One or two queries on 512-bit vectors: 8 vectors of dims per pass (16 accumulators and
  // 8 value vectors of the 32 registers), so a head of 128 is one pass over the rows.
  if constexpr (kW == 16 && J <= 2)
    for (; e0 + 8 * kW <= d; e0 += 8 * kW, pf = nullptr)
      block_values<R, J, 8>(values, row, i0, nb, e0, p, corr, out, pf);
  for (; e0 + 4 * kW <= d; e0 += 4 * kW, pf = nullptr)
    block_values<R, J, 4>(values, row, i0, nb, e0, p, corr, out, pf);
  for (; e0 < d; e0 += kW, pf = nullptr) block_values<R, J, 1>(values, row, i0, nb, e0, p, corr, out, pf);
}

template <Rows R, int S, int B>
void attend_impl(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                 float scale, float* const* out, float* weights, float* state_out) {
  const int d = s.head_dim;
  const size_t row = row_size<R>(d);
  const auto* keys = static_cast<const uint8_t*>(s.keys);
  const auto* values = static_cast<const uint8_t*>(s.values);

  // Per query: running max, running sum, this block's rescale factor, and the block's
  // scores (then probabilities). Reused across calls on this thread.
  thread_local std::vector<float> state;
  constexpr int block = B;  // block_keys(row), a constant of the loops
  state.resize(static_cast<size_t>(n_q) * (3 + kMaxBlock));
  float* m = state.data();
  float* l = m + n_q;
  float* corr = l + n_q;
  float* scores = corr + n_q;
  thread_local std::vector<float*> sc_rows;
  sc_rows.resize(static_cast<size_t>(n_q));
  for (int j = 0; j < n_q; ++j) {
    m[j] = s.sinks ? s.sinks[j] : kNegInf;  // a sink: a key of value 0 seen first (attention.h)
    l[j] = s.sinks ? 1.0f : 0.0f;
    sc_rows[j] = scores + j * kMaxBlock;
    std::memset(out[j], 0, sizeof(float) * static_cast<size_t>(d));
  }
  float* const* sc = sc_rows.data();
  const int32_t min_q_pos = *std::min_element(q_pos, q_pos + n_q);
  const int32_t max_q_pos = *std::max_element(q_pos, q_pos + n_q);
  prefetch_rows(keys, static_cast<size_t>(std::min<int64_t>(block, s.n)) * row);

  for (int64_t i0 = 0; i0 < s.n; i0 += block) {
    const int nb = static_cast<int>(std::min<int64_t>(block, s.n - i0));
    // Cross-phase prefetching (see prefetch_rows), by the first pass over the block only.
    const uint8_t* pf_values = values + i0 * row;
    // After the last block: the rows that follow the stream, which are the next chunk's
    // when attention runs chunk by chunk (attention.h), so the next call starts warm; past a
    // whole stream's end the hint reads nothing useful but cannot fault.
    const uint8_t* pf_keys = keys + (i0 + block) * row;
    int j = 0;
    for (; j + kQueryTile <= n_q; j += kQueryTile)
      block_scores_any<R, kQueryTile, S>(q + j, d, keys, row, i0, nb, scale, sc + j, j == 0 ? pf_values : nullptr);
    for (; j + 2 <= n_q; j += 2)
      block_scores_any<R, 2, S>(q + j, d, keys, row, i0, nb, scale, sc + j, j == 0 ? pf_values : nullptr);
    if (j < n_q)
      block_scores_any<R, 1, S>(q + j, d, keys, row, i0, nb, scale, sc + j, j == 0 ? pf_values : nullptr);

    // Keys after a query's position are masked; a block entirely before every query
    // (the usual case) needs no check per query, and a stream whose bound is before every
    // query (decode) no look at its positions.
    const int32_t block_max_pos = s.max_pos > min_q_pos ? max_of(s.pos + i0, nb) : min_q_pos;
    // A sliding window also masks keys too old for the newest query of the call.
    const bool window_check =
        s.window > 0 && max_q_pos - *std::min_element(s.pos + i0, s.pos + i0 + nb) >= s.window;
    for (j = 0; j < n_q; ++j) {
      float* x = sc[j];
      if (s.softcap > 0)
        for (int k = 0; k < nb; ++k) x[k] = s.softcap * std::tanh(x[k] / s.softcap);
      if (block_max_pos > min_q_pos)
        for (int k = 0; k < nb; ++k)
          if (s.pos[i0 + k] > q_pos[j]) x[k] = kNegInf;
      if (window_check)
        for (int k = 0; k < nb; ++k)
          if (q_pos[j] - s.pos[i0 + k] >= s.window) x[k] = kNegInf;
      for (int k = nb; k < block; ++k) x[k] = kNegInf;
      if (weights) std::memcpy(weights + j * s.n + i0, x, sizeof(float) * static_cast<size_t>(nb));
      SV mx = sset1(kNegInf);
      for (int k = 0; k < block; k += kSW) mx = smax(mx, sload(x + k));
      const float bmax = shmax(mx);
      if (bmax == kNegInf) {  // nothing visible to this query here: p = 0, no rescale
        std::memset(x, 0, sizeof(float) * block);
        corr[j] = 1.0f;
        continue;
      }
      const float m_new = std::max(m[j], bmax);
      // 0 on the first visible block; 1 without a call where the running max holds, as it does
      // in most blocks once the largest scores are behind.
      corr[j] = m_new == m[j] ? 1.0f : std::exp(m[j] - m_new);
      m[j] = m_new;
      const SV mv = sset1(m_new);
      SV sum = sset1(0.0f);
      for (int k = 0; k < block; k += kSW) {
        const SV p = sexp(ssub(sload(x + k), mv));
        sstore(x + k, p);
        sum = sadd(sum, p);
      }
      l[j] = l[j] * corr[j] + shsum(sum);
    }

    for (j = 0; j + kQueryTile <= n_q; j += kQueryTile)
      block_values_all<R, kQueryTile>(values, row, i0, nb, d, sc + j, corr + j, out + j,
                                         j == 0 ? pf_keys : nullptr);
    for (; j + 2 <= n_q; j += 2)
      block_values_all<R, 2>(values, row, i0, nb, d, sc + j, corr + j, out + j,
                                j == 0 ? pf_keys : nullptr);
    if (j < n_q)
      block_values_all<R, 1>(values, row, i0, nb, d, sc + j, corr + j, out + j,
                                j == 0 ? pf_keys : nullptr);
  }

  for (int j = 0; j < n_q; ++j) {
    if (state_out) state_out[2 * j] = m[j], state_out[2 * j + 1] = l[j];
    const float inv = l[j] > 0 ? 1.0f / l[j] : 0.0f;
    const VF iv = vset1(inv);
    for (int e = 0; e < d; e += kW) vstoref(out[j] + e, vmul(vloadf(out[j] + e), iv));
    if (!weights) continue;
    float* w = weights + j * s.n;
    if (l[j] == 0) {  // no visible key: all weights 0 (and m is -inf, so no exp below)
      std::fill(w, w + s.n, 0.0f);
      continue;
    }
    const SV mv = sset1(m[j]), siv = sset1(inv);
    int64_t i = 0;
    for (; i + kSW <= s.n; i += kSW) sstore(w + i, smul(sexp(ssub(sload(w + i), mv)), siv));
    for (; i < s.n; ++i) w[i] = std::exp(w[i] - m[j]) * inv;
  }
}

// attend_impl with the stream's block_keys as a compile-time constant.
template <Rows R, int S>
void attend_blocks(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                   float scale, float* const* out, float* weights, float* state) {
  static_assert(kMaxBlock == 64);
  switch (block_keys(row_size<R>(s.head_dim))) {
    case 64: return attend_impl<R, S, 64>(q, q_pos, n_q, s, scale, out, weights, state);
    case 48: return attend_impl<R, S, 48>(q, q_pos, n_q, s, scale, out, weights, state);
    default: return attend_impl<R, S, 32>(q, q_pos, n_q, s, scale, out, weights, state);
  }
}

// attend_impl for the stream's row type, with scores in S parts.
template <int S>
void attend_rows(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                 float scale, float* const* out, float* weights, float* state) {
  if (s.type == DType::F16)
    attend_blocks<Rows::F16, S>(q, q_pos, n_q, s, scale, out, weights, state);
  else if (s.type == DType::Q8_0)
    attend_blocks<Rows::Q8_0, S>(q, q_pos, n_q, s, scale, out, weights, state);
  else
    attend_blocks<Rows::F32, S>(q, q_pos, n_q, s, scale, out, weights, state);
}

}  // namespace

void TRIATTN_ATTEND_NAME(const float* const* q, const int32_t* q_pos, int n_q,
                         const AttentionStream& s, float scale, float* const* out,
                         float* weights, float* state) {
#if TRIATTN_ATTN_WIDTH == 512  // two-part scores at 512 bits only (AttentionStream::score_parts)
  if (s.score_parts == 2) return attend_rows<2>(q, q_pos, n_q, s, scale, out, weights, state);
#endif
  attend_rows<1>(q, q_pos, n_q, s, scale, out, weights, state);
}

}  // namespace triattn::attention_detail
