#pragma once
// After a model is loaded and checked, the matmul weights move into one buffer of transparent
// huge pages: rewritten into a faster internal layout where their type has one
// (ops::interleaved_type: Q8_0 -> Q8_0x16 or Q8_0x4, Q4_K -> Q4_Kx8, Q4_0 -> Q4_0x8), copied as they are otherwise;
// the file pages or buffers they came from are handed back, so the model's memory does not
// double.
//
// Why copy at all: decode streams every weight once per token with several streams per core,
// and in 4 KiB pages (a file mapping) each stream crosses a page every few hundred
// nanoseconds; under a hypervisor each TLB miss walks two page tables. Measured on the 2-core
// EPYC VM, `triattn bench` decode at depth 0, TRIATTN_REPACK=0 (mapped) vs copied,
// alternating: Llama-3.2-1B F16 17.8 / 19.4 -> 24.2 / 24.6 tok/s, Llama-3.2-1B Q4_K_M
// 63.4 / 64.0 / 65.8 -> 72.3 / 68.4 / 70.8 (Q4_K is closer to compute-bound; Qwen3-0.6B
// Q4_K_M and F16 moved within the noise); earlier, Q8_0x4 in 4 KiB vs huge pages 49-61 vs
// 82-84 tok/s (Qwen3-0.6B).
#include "model/model_builder.h"

namespace triattn {

// Moves every layer matrix and the output matrix (the token embedding with it when tied),
// rows copied by `threads` threads (0 = all cores). Matrices the loader already rewrote into
// buffers of its own stay where they are unless they are repacked.
void repack_weights(ModelBuilder& model, int threads = 0);

}  // namespace triattn
