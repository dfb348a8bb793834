#pragma once
// Kernels chosen by measurement rather than by instruction set alone. A weight type can run
// with several variants on one CPU: each instruction set's table, and each layout that table
// has a kernel for (Q8_0 as it is, Q8_0x4 or Q8_0x16 ...). Which is fastest depends on the
// microarchitecture, not on the ISA (512-bit byte dot products win on some cores and lose on
// others), so model loading can time them (kernel_timing.h) and use the fastest.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ops/ops.h"

namespace triattn::ops {

struct KernelVariant {
  Isa isa = Isa::Scalar;
  DType layout = DType::F32;  // how the weights are stored for it
  bool operator==(const KernelVariant&) const = default;
};

std::string variant_name(const KernelVariant& v);  // "avx512 q8_0x16"

// The variants this CPU runs for matrices of file type `type` with `rows` x `cols`: the
// current default first (the active table with interleaved_type's layout), then every other
// SIMD table and layout with a kernel of its own (scalar only where there is nothing else).
std::vector<KernelVariant> kernel_variants(DType type, int64_t rows, int64_t cols);

// From now on matrices of file type `type` are stored as decode.layout when loaded
// (interleaved_type), and matmuls on that layout run decode.isa's kernel for one token and
// batch_isa's for more (both tables must have a kernel for the layout). Not thread-safe: call
// before any model is loaded and any kernel runs, like select_isa.
void use_kernel_variant(DType type, const KernelVariant& decode, Isa batch_isa);
// The variant matrices of `type` use now (the default unless use_kernel_variant chose), and
// the instruction set of its kernel for more than one token.
KernelVariant current_variant(DType type, int64_t rows, int64_t cols);
Isa current_batch_isa(DType type, int64_t rows, int64_t cols);
// Drops every choice of use_kernel_variant (select_isa and set_isa_for_testing do too).
void reset_kernel_variants();

}  // namespace triattn::ops
