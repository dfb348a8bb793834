#pragma once
// MXFP4 matmul kernels (ops/quant_blocks.h BlockMxfp4), kept apart from the other weight
// types' kernels: mxfp4_scalar.cpp fills the scalar table's entry, mxfp4_x86.inl (included
// by kernels_avx2.cpp and kernels_avx512.cpp after x86_matmul.inl) the x86 ones. Activations
// are ActQ8 (act_format), so every ISA computes the same integer block sums.
#include "ops/cpu_dispatch.h"

namespace triattn::ops {

void fill_mxfp4_scalar(KernelTable& t);

}  // namespace triattn::ops
