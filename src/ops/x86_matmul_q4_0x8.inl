// Q4_0x8 kernels (Q4_0 rows interleaved by 8 at load time, ops/quant_blocks.h), included by
// x86_matmul.inl inside its anonymous namespace after the Q4_Kx8 kernels (whose
// add_nibble_dots and cvtph_two_groups they share): the block steps and the layout's
// description for the group driver there. Each 32-bit lane is one row throughout.
//
// Per block column and token: 8 byte dot products (4 quants x 8 rows each), the -8 offset as
// the start value of the sums and one FMA with the eight rows' scales; the nibble unpacking
// and the scale conversion are shared by the T tokens.

// One block column of one group against T tokens: acc[t] lane r += row r's block dot.
template <int T>
[[gnu::always_inline]] inline void q4_0x8_block(const BlockQ4_0x8* b, const ActQ8* const* a, __m256* acc) {
  __m256i p[T];
  // Every quant's -8 owes 8 x the activation block's quant sum, in every row's lane.
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(-8 * a[t]->sum);
  TRIATTN_UNROLL
  for (int k = 0; k < 4; ++k) add_nibble_dots<T>(b->qs + 32 * k, a, 8 * k, p);
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->d)));
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t)
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[t]), _mm256_mul_ps(d, _mm256_set1_ps(a[t]->d)), acc[t]);
}

#if defined(__AVX512BW__)
// The same for two adjacent groups side by side in one 512-bit register (lanes 0-7 rows
// 8g..8g+7, lanes 8-15 the next group's): the prefill tile of GroupUnits on AVX-512.
template <int T>
[[gnu::always_inline]] inline void q4_0x8_block_pair(const BlockQ4_0x8* b0, const BlockQ4_0x8* b1,
                                                     const ActQ8* const* a, __m512* acc) {
  __m512i p[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) p[t] = _mm512_set1_epi32(-8 * a[t]->sum);
  TRIATTN_UNROLL
  for (int k = 0; k < 4; ++k) add_nibble_dots<T>(b0->qs + 32 * k, b1->qs + 32 * k, a, 8 * k, p);
  const __m512 d = cvtph_two_groups(b0->d, b1->d);
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) acc[t] = fmadd_sums512(p[t], _mm512_mul_ps(d, _mm512_set1_ps(a[t]->d)), acc[t]);
}
#endif

// The layout as the group driver in x86_matmul.inl sees it: one group per 256-bit tile, as
// Q4_Kx8; two per 512-bit one.
struct Q4_0x8Group {
  using Block = BlockQ4_0x8;
  using Act = ActQ8;
  static constexpr int kRows = 8, kElems = kQK, kTile = 1, kPrefetch = kGemvPrefetchX4;
  template <int T>
  static void block(const Block* b, const Act* const* a, __m256* acc) { q4_0x8_block<T>(b, a, acc); }
  static void store(__m256 acc, float* y) { _mm256_storeu_ps(y, acc); }
#if defined(__AVX512BW__)
  template <int T>
  static void block_pair(const Block* b0, const Block* b1, const Act* const* a, __m512* acc) {
    q4_0x8_block_pair<T>(b0, b1, a, acc);
  }
  static void store_pair(__m512 acc, float* y) { _mm512_storeu_ps(y, acc); }
#endif
};

