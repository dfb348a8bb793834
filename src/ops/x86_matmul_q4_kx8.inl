// Q4_Kx8 kernels (Q4_K rows interleaved by 8 at load time, ops/quant_blocks.h), included by
// x86_matmul.inl inside its anonymous namespace: the block steps (256-bit, and 512-bit for two
// groups) and the layout's description for the group driver there (decode streams,
// matrix-matrix tiles). Each 32-bit lane is one row throughout.
//
// Per block column and token: 64 byte dot products (4 quants x 8 rows each), one 32-bit
// multiply by the rows' scales per sub-block, and the mins through four int16 pair
// products; the nibble unpacking and the scale loads are shared by the T tokens. The Q4_K
// row kernel does the unpacking, the scale shuffles and a reduction per row and token.

// acc + the byte dot products of u (unsigned) and s (signed), 4 per int32 lane.
inline __m256i dot_u8s8_acc(__m256i acc, __m256i u, __m256i s) {
#if TRIATTN_X86_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, dot_u8s8(u, s));
#endif
}

inline __m256i broadcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// p[t] += the byte dots of one 32-byte chunk of 4-bit quants (four consecutive quants of a row
// per 32-bit lane in the low nibbles, the next four in the high ones, as Q4_Kx8 and Q4_0x8
// store them) with token t's activation bytes at a[t]->qs + off (four) and + off + 4 (four).
// The unpacking is shared by the T tokens.
template <int T, class Act>
[[gnu::always_inline]] inline void add_nibble_dots(const uint8_t* chunk, const Act* const* a, int off, __m256i* p) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), raw = loadu256(chunk);
  const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) {
    p[t] = dot_u8s8_acc(p[t], lo, broadcast_i32(a[t]->qs + off));
    p[t] = dot_u8s8_acc(p[t], hi, broadcast_i32(a[t]->qs + off + 4));
  }
}

#if defined(__AVX512BW__)
// The same for the chunks of two groups side by side (c0 in lanes 0-7, c1 in lanes 8-15).
template <int T, class Act>
[[gnu::always_inline]] inline void add_nibble_dots(const uint8_t* c0, const uint8_t* c1, const Act* const* a, int off,
                                                   __m512i* p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), raw = concat256(loadu256(c0), loadu256(c1));
  const __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) {
    int32_t q0, q1;
    std::memcpy(&q0, a[t]->qs + off, 4);
    std::memcpy(&q1, a[t]->qs + off + 4, 4);
    p[t] = _mm512_dpbusd_epi32(p[t], lo, _mm512_set1_epi32(q0));
    p[t] = _mm512_dpbusd_epi32(p[t], hi, _mm512_set1_epi32(q1));
  }
}

// The f16 values h0[0..8) and h1[0..8) (one per row of two groups) as 16 floats.
inline __m512 cvtph_two_groups(const uint16_t* h0, const uint16_t* h1) {
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h1)),
                                                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(h0))));
}
#endif

// For each row lane: sum over sub-blocks j of min_j * (sum of the activation's 32 quants of
// sub-block j), from its per-16 sums. mins16[p] holds (min_2p, min_2p+1) of each row as an
// int16 pair.
[[gnu::always_inline]] inline __m256i q4_kx8_min_sums(const __m256i* mins16, const ActQ8K* a) {
  const __m256i bsums = loadu256(a->bsums);
  const __m256i sub = _mm256_madd_epi16(bsums, _mm256_set1_epi16(1));  // 8 sub-block sums, int32
  // As int16 pairs: 128-bit lane 0 holds (s0,s1),(s2,s3) twice, lane 1 (s4,s5),(s6,s7) twice.
  const __m256i pairs = _mm256_packs_epi32(sub, sub);
  __m256i m = _mm256_madd_epi16(mins16[0], _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(0)));
  m = _mm256_add_epi32(m, _mm256_madd_epi16(mins16[1], _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(1))));
  m = _mm256_add_epi32(m, _mm256_madd_epi16(mins16[2], _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(4))));
  return _mm256_add_epi32(m, _mm256_madd_epi16(mins16[3], _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(5))));
}

// One block column of one group against T tokens: acc[t] lane r += row r's block dot.
template <int T>
[[gnu::always_inline]] inline void q4_kx8_block(const BlockQ4_Kx8* b, const ActQ8K* const* a, __m256* acc) {
  __m256i sumi[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
  TRIATTN_UNROLL
  for (int j = 0; j < 8; ++j) {
    __m256i dot[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
    TRIATTN_UNROLL
    for (int k = 0; k < 4; ++k) add_nibble_dots<T>(b->qs + 128 * j + 32 * k, a, 32 * j + 8 * k, dot);
    const __m256i scale = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->scales + 8 * j)));
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(dot[t], scale));
  }
  __m256i mins16[4];
  TRIATTN_UNROLL
  for (int p = 0; p < 4; ++p) {
    const __m128i m0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->mins + 16 * p));
    const __m128i m1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->mins + 16 * p + 8));
    mins16[p] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m0, m1));
  }
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->d)));
  const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->dmin)));
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) {
    const __m256 ad = _mm256_set1_ps(a[t]->d);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_mul_ps(d, ad), acc[t]);
    acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(q4_kx8_min_sums(mins16, a[t])), _mm256_mul_ps(dmin, ad), acc[t]);
  }
}

#if defined(__AVX512BW__)
// The same for two adjacent groups side by side in one 512-bit register (lanes 0-7 rows
// 8g..8g+7, lanes 8-15 the next group's): the prefill tile of GroupUnits on AVX-512.
template <int T>
[[gnu::always_inline]] inline void q4_kx8_block_pair(const BlockQ4_Kx8* b0, const BlockQ4_Kx8* b1,
                                                     const ActQ8K* const* a, __m512* acc) {
  __m512i sumi[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
  TRIATTN_UNROLL
  for (int j = 0; j < 8; ++j) {
    __m512i dot[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
    TRIATTN_UNROLL
    for (int k = 0; k < 4; ++k)
      add_nibble_dots<T>(b0->qs + 128 * j + 32 * k, b1->qs + 128 * j + 32 * k, a, 32 * j + 8 * k, dot);
    int64_t s0, s1;  // sub-block j's scales of each group's eight rows
    std::memcpy(&s0, b0->scales + 8 * j, 8);
    std::memcpy(&s1, b1->scales + 8 * j, 8);
    const __m512i scale = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_set_epi64x(s1, s0));  // zero-masked: concat256
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot[t], scale));
  }
  __m256i mins0[4], mins1[4];
  TRIATTN_UNROLL
  for (int p = 0; p < 4; ++p) {
    for (int g = 0; g < 2; ++g) {
      const uint8_t* m = (g ? b1 : b0)->mins + 16 * p;
      const __m128i m0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(m));
      const __m128i m1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(m + 8));
      (g ? mins1 : mins0)[p] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m0, m1));
    }
  }
  const __m512 d = cvtph_two_groups(b0->d, b1->d), dmin = cvtph_two_groups(b0->dmin, b1->dmin);
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) {
    const __m512 ad = _mm512_set1_ps(a[t]->d);
    acc[t] = fmadd_sums512(sumi[t], _mm512_mul_ps(d, ad), acc[t]);
    const __m512i mins = concat256(q4_kx8_min_sums(mins0, a[t]), q4_kx8_min_sums(mins1, a[t]));
    acc[t] = fmadd_sums512(mins, _mm512_mul_ps(dmin, _mm512_sub_ps(_mm512_setzero_ps(), ad)), acc[t]);
  }
}
#endif

// The layout as the group driver in x86_matmul.inl sees it. One group of eight per 256-bit
// tile (the activations are broadcast per group from L1 either way, so more groups per tile
// would only add accumulators), two per 512-bit one. Decode prefetches kGemvPrefetch bytes
// ahead (a block is 1184 bytes, 19 lines).
struct Q4_Kx8Group {
  using Block = BlockQ4_Kx8;
  using Act = ActQ8K;
  static constexpr int kRows = 8, kElems = kQKK, kTile = 1, kPrefetch = kGemvPrefetch;
  template <int T>
  static void block(const Block* b, const Act* const* a, __m256* acc) { q4_kx8_block<T>(b, a, acc); }
  static void store(__m256 acc, float* y) { _mm256_storeu_ps(y, acc); }
#if defined(__AVX512BW__)
  template <int T>
  static void block_pair(const Block* b0, const Block* b1, const Act* const* a, __m512* acc) {
    q4_kx8_block_pair<T>(b0, b1, a, acc);
  }
  static void store_pair(__m512 acc, float* y) { _mm512_storeu_ps(y, acc); }
#endif
};
