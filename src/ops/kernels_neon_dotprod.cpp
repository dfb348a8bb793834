// The neon_dotprod kernel table: neon_kernels.inl with the ARMv8.2 dot product (SDOT), for
// the CPUs whose HWCAP says they have it (compiled with +dotprod: CMakeLists.txt).
#if defined(__aarch64__)
#define TRIATTN_NEON_DOTPROD 1
#include "ops/neon_kernels.inl"

namespace triattn::ops {

const KernelTable& neon_dotprod_kernels() {
  static const KernelTable t = make_neon_table(Isa::NeonDotprod);
  return t;
}

}  // namespace triattn::ops
#endif
