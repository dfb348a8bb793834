#pragma once
// What the CPU we run on can execute, asked once at run time so one binary serves any
// x86-64 or AArch64 machine.
namespace triattn::ops {

struct CpuFeatures {
  bool avx2_fma_f16c = false;  // the AVX2 kernels' requirements
  bool avx512_vnni = false;    // F, BW, VL, DQ and VNNI: the AVX-512 kernels' requirements
  bool neon = false;           // AArch64 Advanced SIMD (every AArch64 CPU)
  bool neon_dotprod = false;   // and the ARMv8.2 dot product (SDOT)
};

const CpuFeatures& cpu_features();

}  // namespace triattn::ops
