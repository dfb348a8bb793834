// The MXFP4 block kernel for x86 (ops/mxfp4_kernels.h), in the weight-type form of
// ops/x86_matmul.inl, whose tiles (prefill) and multi-stream matrix-vector loop (decode) it
// plugs into. Included after x86_matmul.inl by kernels_avx2.cpp (maddubs) and
// kernels_avx512.cpp (vpdpbusd), in the same anonymous namespace.
namespace triattn::ops {
namespace {

// One block: the 32 nibbles in element order (low nibbles are elements 0..15, high 16..31),
// each turned into its doubled E2M1 value by one byte shuffle of kMxfp4Values, then the
// Q8_0 kernel's signed-byte dot product against each token's activation block.
struct Mxfp4Kernel {
  static constexpr int kElems = kQK, kWBytes = sizeof(BlockMxfp4), kXBytes = sizeof(ActQ8);
  static constexpr bool kTail = false;
  template <int T>
  static void block(const uint8_t* w, const uint8_t* const* x, __m256* acc) {
    const auto* b = reinterpret_cast<const BlockMxfp4*>(w);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    const __m256i codes =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
    const __m256i q = _mm256_shuffle_epi8(table, codes);
    const __m256i aq = _mm256_sign_epi8(q, q);  // |q| as unsigned; the sign moves to x
    const float d = mxfp4_scale(b->e);
    TRIATTN_UNROLL
    for (int t = 0; t < T; ++t) {
      const auto* a = reinterpret_cast<const ActQ8*>(x[t]);
      const __m256i p = dot_u8s8(aq, _mm256_sign_epi8(loadu256(a->qs), q));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * a->d), acc[t]);
    }
  }
  static float tail(const uint8_t*, const uint8_t*, int64_t, int64_t) { return 0; }
};

void fill_mxfp4(KernelTable& t) { t.matmul[static_cast<int>(DType::MXFP4)] = matmul_units<RowUnits<Mxfp4Kernel>>; }

}  // namespace
}  // namespace triattn::ops
