#pragma once
// After a model is loaded and checked, the matmul weights move into one buffer of transparent
// huge pages: rewritten into a faster internal layout where their type has one
// (ops::interleaved_type: Q8_0 -> Q8_0x16 or Q8_0x4, Q4_K -> Q4_Kx8, Q4_0 -> Q4_0x8), copied as they are otherwise;
// the file pages or buffers they came from are handed back, so the model's memory does not
// double.
//
// Why copy at all: decode streams every weight once per token with several streams per core,
// and in 4 KiB pages (a file mapping) each stream crosses a page every few hundred
// nanoseconds; under a hypervisor each TLB miss walks two page tables (docs/benchmarks.md,
// "Weights in huge pages").
#include "model/model_builder.h"

namespace triattn {

// Moves every layer matrix and the output matrix (the token embedding with it when tied),
// rows copied by `threads` threads (0 = all cores). Matrices the loader already rewrote into
// buffers of its own stay where they are unless they are repacked.
void repack_weights(ModelBuilder& model, int threads = 0);

}  // namespace triattn
