// Q8_0x16: Q8_0 rows interleaved in groups of 16, one row per 32-bit lane (quant_blocks.h).
// Included by x86_matmul.inl in the AVX-512 build only (this layout is made only where
// KernelTable::q8_0_layout asks for it); uses its prefetch helpers and stream counts.
//
// Per block column and token the 16 rows take 8 vpdpbusd (each chunk of 4 quants of all rows
// against the token's 4 activation bytes broadcast), then one conversion, one scale product
// and one FMA. Q8_0x4's 512-bit kernel takes the same 8 dot products for 16 rows but two of
// each of the others, 8-byte broadcasts and the lane-pair sums at the end, and ran far below
// what vpdpbusd alone issues (docs/benchmarks.md, "Batched decode").

// Quants 4c..4c+3 of an activation block in every 32-bit lane.
inline __m512i broadcast_chunk(const ActQ8* a, int c) {
  int32_t chunk;
  std::memcpy(&chunk, a->qs + 4 * c, 4);
  return _mm512_set1_epi32(chunk);
}

// S groups (groups[s]) against tokens [t0, t0+T), each group's blocks in order: decode
// (T = 1, kGemvStreams streams from evenly spaced parts of the range), small batches and the
// prefill tiles are this one loop, so every (row, token) is summed the same way whichever
// path carries it: an exact int32 sum per block, then acc += float(sum) * (d_w * d_x).
template <int S, int T, bool kPrefetch>
inline void q8_0x16_streams(const MatmulJob& j, const int64_t* groups, int64_t t0) {
  const int64_t nb = j.cols / kQK;
  const BlockQ8_0x16* w[S];
  __m512 acc[S][T];
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s) {
    w[s] = reinterpret_cast<const BlockQ8_0x16*>(j.w + 16 * groups[s] * j.w_stride);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) acc[s][t] = _mm512_setzero_ps();
  }
  const ActQ8* x[T];
  TRIATTN_UNROLL
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const ActQ8*>(j.x + (t0 + t) * j.x_stride);
  for (int64_t b = 0; b < nb; ++b) {
    __m512 dw[S];
    TRIATTN_UNROLL
    for (int s = 0; s < S; ++s) {
      const BlockQ8_0x16* block = w[s] + b;
      if constexpr (kPrefetch) {
        // Non-temporal (prefetchnta): each weight is read once per token; slightly faster
        // than prefetcht0 (docs/benchmarks.md, "Decode streams and prefetch distances").
        prefetch_bytes<sizeof(BlockQ8_0x16), kGemvPrefetchX4, 0>(block);
        // Past one token tile, compute paces the streams: also bring blocks into L2 from far
        // ahead (as Q8_0x4's small batches, x86_matmul.inl kFarPrefetch).
        if constexpr (T > kTileTokens) prefetch_bytes<sizeof(BlockQ8_0x16), kFarPrefetch<Q8_0x4Group>, 2>(block);
      }
      dw[s] = _mm512_maskz_cvtph_ps(0xFFFF, loadu256(block->d));
    }
    if constexpr (S <= 2) {
      // Token by token: the S x 8 weight vectors stay in registers while a token's 8
      // broadcasts are made once for all S groups.
      __m512i u[S][8];
      TRIATTN_UNROLL
      for (int s = 0; s < S; ++s)
        TRIATTN_UNROLL
        for (int c = 0; c < 8; ++c) u[s][c] = _mm512_loadu_si512(w[s][b].qs + 64 * c);
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const ActQ8* a = x[t] + b;
        // The weights' +128 costs 128 x the activation block's quant sum in every row.
        const __m512i offset = _mm512_set1_epi32(-128 * a->sum);
        __m512i p[S];
        TRIATTN_UNROLL
        for (int s = 0; s < S; ++s) p[s] = offset;
        TRIATTN_UNROLL
        for (int c = 0; c < 8; ++c) {
          const __m512i xc = broadcast_chunk(a, c);
          TRIATTN_UNROLL
          for (int s = 0; s < S; ++s) p[s] = _mm512_dpbusd_epi32(p[s], u[s][c], xc);
        }
        const __m512 da = _mm512_set1_ps(a->d);
        TRIATTN_UNROLL
        for (int s = 0; s < S; ++s) acc[s][t] = fmadd_sums512(p[s], _mm512_mul_ps(dw[s], da), acc[s][t]);
      }
    } else {
      // More streams (decode, batches up to a token tile): chunk by chunk, each weight vector
      // loaded once and dotted with every token while the S x T sums stay in registers (the
      // order above would hold 8 S weight vectors and spill them).
      __m512i p[S][T];
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m512i offset = _mm512_set1_epi32(-128 * x[t][b].sum);
        TRIATTN_UNROLL
        for (int s = 0; s < S; ++s) p[s][t] = offset;
      }
      TRIATTN_UNROLL
      for (int c = 0; c < 8; ++c) {
        __m512i xc[T];
        TRIATTN_UNROLL
        for (int t = 0; t < T; ++t) xc[t] = broadcast_chunk(x[t] + b, c);
        TRIATTN_UNROLL
        for (int s = 0; s < S; ++s) {
          const __m512i u = _mm512_loadu_si512(w[s][b].qs + 64 * c);
          TRIATTN_UNROLL
          for (int t = 0; t < T; ++t) p[s][t] = _mm512_dpbusd_epi32(p[s][t], u, xc[t]);
        }
      }
      TRIATTN_UNROLL
      for (int t = 0; t < T; ++t) {
        const __m512 da = _mm512_set1_ps(x[t][b].d);
        TRIATTN_UNROLL
        for (int s = 0; s < S; ++s) acc[s][t] = fmadd_sums512(p[s][t], _mm512_mul_ps(dw[s], da), acc[s][t]);
      }
    }
  }
  TRIATTN_UNROLL
  for (int s = 0; s < S; ++s)
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(j.y + (t0 + t) * j.y_stride + 16 * groups[s], acc[s][t]);
}

// The unit driver's view (x86_matmul.inl, matmul_units): a unit is one group of 16 rows. Decode
// takes kGemvStreams groups at once. Batches of up to a token tile (kTileTokens) take
// kSmallStreams: bound by memory, they want more streams than decode's 4 (6 read best at
// batches 2 and 4; docs/benchmarks.md, "Batched decode"). Larger batches (kBatchStreams,
// kBatchTokens) and prefill tiles (kTile x kTokens) take two groups by eight tokens: 16 weight
// vectors and 16 accumulators, the most the 32 registers hold with a token's sums and
// broadcasts (a few accumulators spill; one group by 16 tokens ran slower in L2).
struct Q8_0x16Units {
  static constexpr int kRows = 16, kTile = 2, kTokens = 8;
  static constexpr int kSmallStreams = 6, kBatchStreams = kTile, kBatchTokens = kTokens;
  static constexpr int kLead = kGemvPrefetchX4, kLeadLocality = 0;  // q8_0x16_streams' prefetch
  template <int S>
  static void gemv(const MatmulJob& j, const int64_t* u) { q8_0x16_streams<S, 1, true>(j, u, 0); }
  // The driver's form (x86_matmul.inl, small_batch_slices); units here are never paired.
  template <int S, int T, bool kPairs>
  static void gemv_tokens(const MatmulJob& j, const int64_t* u, int64_t t0) {
    static_assert(!kPairs);
    q8_0x16_streams<S, T, true>(j, u, t0);
  }
  template <int R, int T>
  static void tile(const MatmulJob& j, int64_t u0, int64_t t0) {
    int64_t groups[R];
    TRIATTN_UNROLL
    for (int r = 0; r < R; ++r) groups[r] = u0 + r;
    q8_0x16_streams<R, T, false>(j, groups, t0);
  }
};
