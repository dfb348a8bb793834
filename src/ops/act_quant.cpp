// Activation quantization: forwarded to the active ISA's table (scalar twins in
// kernels_scalar.cpp define the exact results every ISA reproduces).
#include "ops/act_quant.h"

#include "ops/cpu_dispatch.h"

namespace triattn::ops {

void quantize_act_q8(const float* x, ActQ8* out, int64_t n) {
  active_kernels().quantize_act_q8(x, out, n);
}

void quantize_act_q8k(const float* x, ActQ8K* out, int64_t n) {
  active_kernels().quantize_act_q8k(x, out, n);
}

}  // namespace triattn::ops
