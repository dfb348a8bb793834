// The gated delta rule's bodies built for AVX2 (gated_delta_kernels.h).
#if defined(__x86_64__)
#define TRIATTN_GDN_NS gdn_avx2
#define TRIATTN_GDN_VEC_BYTES 32
#include "ops/gated_delta_kernels.inl"
#endif
