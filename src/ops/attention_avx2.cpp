// The attention kernel with 256-bit vectors (AVX2 + FMA + F16C); head_dim a multiple of 8.
#if defined(__x86_64__)
#define TRIATTN_ATTN_WIDTH 256
#define TRIATTN_ATTEND_NAME attend_avx2
#include "ops/attention_simd.inl"
#endif
