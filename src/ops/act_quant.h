#pragma once
// Quantizes activation rows for the integer matmul paths: ActQ8 (blocks of 32, for Q8_0 and
// Q4_0 weights) and ActQ8K (blocks of 256 with per-16 sums, for K-quant weights).
// d = amax/127 in f32, q = round(x/d): error <= d/2 per element.
#include <cstdint>

#include "ops/quant_blocks.h"

namespace triattn::ops {

void quantize_act_q8(const float* x, ActQ8* out, int64_t n);    // n % 32 == 0
void quantize_act_q8k(const float* x, ActQ8K* out, int64_t n);  // n % 256 == 0

}  // namespace triattn::ops
