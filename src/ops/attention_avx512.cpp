// The attention kernel with 512-bit vectors (AVX-512F/DQ): half the FMA and f16-conversion
// instructions per key of the 256-bit one; head_dim a multiple of 16.
#if defined(__x86_64__)
// GCC 12's 512-bit intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized
// reports as a false positive in every caller.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define TRIATTN_ATTN_WIDTH 512
#define TRIATTN_ATTEND_NAME attend_avx512
#include "ops/attention_simd.inl"
#endif
