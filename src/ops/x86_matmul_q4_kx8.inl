// Q4_Kx8 kernels (Q4_K rows interleaved by 8 at load time, ops/quant_blocks.h), included by
// x86_matmul.inl inside its anonymous namespace: the block step, the decode streams and the
// matrix-matrix tile. Each 32-bit lane of a 256-bit register is one of the group's eight
// rows throughout.
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
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i sumi[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
  TRIATTN_UNROLL
  for (int j = 0; j < 8; ++j) {
    __m256i dot[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
    TRIATTN_UNROLL
    for (int k = 0; k < 4; ++k) {
      const __m256i raw = loadu256(b->qs + 128 * j + 32 * k);
      const __m256i lo = _mm256_and_si256(raw, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const int8_t* q = a[t]->qs + 32 * j + 8 * k;
        dot[t] = dot_u8s8_acc(dot[t], lo, broadcast_i32(q));
        dot[t] = dot_u8s8_acc(dot[t], hi, broadcast_i32(q + 4));
      }
    }
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

inline const BlockQ4_Kx8* kx8_group(const MatmulJob& j, int64_t g) {
  return reinterpret_cast<const BlockQ4_Kx8*>(j.w + 8 * g * j.w_stride);
}

// Decode: S groups at once from evenly spaced parts of the range, each block prefetched
// kGemvPrefetch bytes ahead (a block is 1184 bytes, 19 lines).
template <int S>
inline void gemv_kx8_streams(const MatmulJob& j, const int64_t* groups) {
  const int64_t nb = j.cols / kQKK;
  const BlockQ4_Kx8* w[S];
  __m256 acc[S];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    w[s] = kx8_group(j, groups[s]);
    acc[s] = _mm256_setzero_ps();
  }
  const auto* x = reinterpret_cast<const ActQ8K*>(j.x);
  for (int64_t b = 0; b < nb; ++b) {
    const ActQ8K* a = x + b;
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) {
      const char* p = reinterpret_cast<const char*>(w[s] + b) + kGemvPrefetch;
      for (int off = 0; off < static_cast<int>(sizeof(BlockQ4_Kx8)); off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
      q4_kx8_block<1>(w[s] + b, &a, &acc[s]);
    }
  }
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) _mm256_storeu_ps(j.y + 8 * groups[s], acc[s]);
}

// y for groups [g0, g0+R) x tokens [t0, t0+T).
template <int R, int T>
void tile_kx8(const MatmulJob& j, int64_t g0, int64_t t0) {
  __m256 acc[R][T];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const BlockQ4_Kx8* w[R];
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r) w[r] = kx8_group(j, g0 + r);
  const ActQ8K* x[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const ActQ8K*>(j.x + (t0 + t) * j.x_stride);
  const int64_t nb = j.cols / kQKK;
  for (int64_t b = 0; b < nb; ++b) {
    const ActQ8K* a[T];
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) a[t] = x[t] + b;
    TRIATTN_UNROLL
    for (int r = 0; r < R; ++r) q4_kx8_block<T>(w[r] + b, a, acc[r]);
  }
  TRIATTN_UNROLL
  for (int r = 0; r < R; ++r)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) _mm256_storeu_ps(j.y + (t0 + t) * j.y_stride + 8 * (g0 + r), acc[r][t]);
}
