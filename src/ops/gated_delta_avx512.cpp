// The gated delta rule's bodies built for AVX512 (gated_delta_kernels.h).
#if defined(__x86_64__)
#define TRIATTN_GDN_NS gdn_avx512
#define TRIATTN_GDN_VEC_BYTES 64
#include "ops/gated_delta_kernels.inl"
#endif
