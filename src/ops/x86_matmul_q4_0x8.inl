// Q4_0x8 kernels (Q4_0 rows interleaved by 8 at load time, ops/quant_blocks.h), included by
// x86_matmul.inl inside its anonymous namespace after the Q4_Kx8 kernels (whose
// dot_u8s8_acc and broadcast_i32 they share): the block step and the layout's description for
// the group driver there. Each 32-bit lane of a 256-bit register is one of the group's eight rows
// throughout.
//
// Per block column and token: 8 byte dot products (4 quants x 8 rows each), the -8 offset as
// the start value of the sums and one FMA with the eight rows' scales; the nibble unpacking
// and the scale conversion are shared by the T tokens.

// One block column of one group against T tokens: acc[t] lane r += row r's block dot.
template <int T>
[[gnu::always_inline]] inline void q4_0x8_block(const BlockQ4_0x8* b, const ActQ8* const* a, __m256* acc) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i p[T];
  // Every quant's -8 owes 8 x the activation block's quant sum, in every row's lane.
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(-8 * a[t]->sum);
  TRIATTN_UNROLL
  for (int k = 0; k < 4; ++k) {
    const __m256i raw = loadu256(b->qs + 32 * k);
    const __m256i lo = _mm256_and_si256(raw, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      const int8_t* q = a[t]->qs + 8 * k;
      p[t] = dot_u8s8_acc(p[t], lo, broadcast_i32(q));
      p[t] = dot_u8s8_acc(p[t], hi, broadcast_i32(q + 4));
    }
  }
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->d)));
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t)
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[t]), _mm256_mul_ps(d, _mm256_set1_ps(a[t]->d)), acc[t]);
}

// The layout as the group driver in x86_matmul.inl sees it: one group per tile, as Q4_Kx8.
struct Q4_0x8Group {
  using Block = BlockQ4_0x8;
  using Act = ActQ8;
  static constexpr int kRows = 8, kElems = kQK, kTile = 1, kPrefetch = kGemvPrefetchX4;
  template <int T>
  static void block(const Block* b, const Act* const* a, __m256* acc) { q4_0x8_block<T>(b, a, acc); }
  static void store(__m256 acc, float* y) { _mm256_storeu_ps(y, acc); }
};

#if defined(__AVX512BW__)
// Prefill on 512-bit vectors: two adjacent groups (rows 8g..8g+15) side by side in one
// register, so each byte dot product covers sixteen rows and the sixteen results are one
// contiguous store; the activation bytes are broadcast to both halves as they are. Qwen3-0.6B
// Q4_0 pp512 on the 2-core EPYC VM, alternating, three rounds: 329.1 / 330.8 / 335.6 tok/s
// with the 256-bit tile (one group), 431.5 / 476.0 / 466.8 with this one.
template <int T>
void tile_q4_0x8_pair(const MatmulJob& j, int64_t g0, int64_t t0) {
  const auto* w0 = reinterpret_cast<const BlockQ4_0x8*>(j.w + 8 * g0 * j.w_stride);
  const auto* w1 = reinterpret_cast<const BlockQ4_0x8*>(j.w + 8 * (g0 + 1) * j.w_stride);
  const ActQ8* x[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const ActQ8*>(j.x + (t0 + t) * j.x_stride);
  __m512 acc[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const int64_t nb = j.cols / kQK;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i p[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) p[t] = _mm512_set1_epi32(-8 * x[t][b].sum);
    TRIATTN_UNROLL
    for (int k = 0; k < 4; ++k) {
      const __m512i raw = concat256(loadu256(w0[b].qs + 32 * k), loadu256(w1[b].qs + 32 * k));
      const __m512i lo = _mm512_and_si512(raw, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const int8_t* q = x[t][b].qs + 8 * k;
        int32_t q0, q1;
        std::memcpy(&q0, q, 4);
        std::memcpy(&q1, q + 4, 4);
        p[t] = _mm512_dpbusd_epi32(p[t], lo, _mm512_set1_epi32(q0));
        p[t] = _mm512_dpbusd_epi32(p[t], hi, _mm512_set1_epi32(q1));
      }
    }
    const __m256i d16 = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w1[b].d)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(w0[b].d)));
    const __m512 d = _mm512_maskz_cvtph_ps(0xFFFF, d16);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      // The zero-masked conversion: GCC 12's plain one trips -Wuninitialized (see concat256).
      const __m512 sums = _mm512_maskz_cvtepi32_ps(0xFFFF, p[t]);
      acc[t] = _mm512_fmadd_ps(sums, _mm512_mul_ps(d, _mm512_set1_ps(x[t][b].d)), acc[t]);
    }
  }
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(j.y + (t0 + t) * j.y_stride + 8 * g0, acc[t]);
}
#endif
