#pragma once
// The gated delta rule's per-ISA bodies (gated_delta_kernels.inl compiled once per instruction
// set: gated_delta.cpp for the baseline, gated_delta_avx2.cpp); gated_delta.cpp picks one by
// the active ISA, so forcing an ISA in a test covers them all.
#include <cstdint>

#include "ops/gated_delta.h"

namespace triattn::ops {

// One gated_delta_rule call, arguments as documented there.
struct DeltaCall {
  DeltaShape s;
  int64_t T = 0;
  const float* qkv = nullptr;
  int64_t qkv_stride = 0;
  const float* g = nullptr;
  const float* beta = nullptr;
  int64_t gb_stride = 0;
  float* state = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  int h0 = 0, h1 = 0;
};

// Tokens per chunk of the chunked form.
constexpr int kDeltaChunk = 64;

namespace gdn_base {
void recurrent(const DeltaCall& c);
void chunked(const DeltaCall& c);
}  // namespace gdn_base
namespace gdn_avx2 {
void recurrent(const DeltaCall& c);
void chunked(const DeltaCall& c);
}  // namespace gdn_avx2

}  // namespace triattn::ops
