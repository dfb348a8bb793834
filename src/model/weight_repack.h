#pragma once
// After a model is loaded and checked: matmul weights whose type has a faster internal layout
// (ops::interleaved_type: Q8_0 -> Q8_0x4) are rewritten into it once, and the file pages or
// buffers they came from are handed back, so the model's memory does not double.
#include <optional>

#include "model/model.h"

namespace triattn {

// Repacks every layer matrix and the output matrix (the token embedding with it when tied),
// rows copied by `threads` threads (0 = all cores).
void repack_weights(Model& model, int threads = 0);
// Whether loading repacks: opt if set, else the environment (TRIATTN_REPACK=0 turns it off,
// for comparing against the file layout; any value other than 0 or 1 is an error).
bool repack_enabled(std::optional<bool> opt);

}  // namespace triattn
