// The neon kernel table: AArch64 Advanced SIMD as every ARMv8.0 CPU has it (the integer dot
// products from widening multiplies). See neon_kernels.inl.
#if defined(__aarch64__)
#define TRIATTN_NEON_DOTPROD 0
#include "ops/neon_kernels.inl"

namespace triattn::ops {

const KernelTable& neon_kernels() {
  static const KernelTable t = make_neon_table(Isa::Neon);
  return t;
}

}  // namespace triattn::ops
#endif
