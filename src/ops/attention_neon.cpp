// The attention kernel with 128-bit AArch64 Advanced SIMD vectors; head_dim a multiple of 4.
#if defined(__aarch64__)
#define TRIATTN_ATTN_WIDTH 128
#define TRIATTN_ATTEND_NAME attend_neon
#include "ops/attention_simd.inl"
#endif
