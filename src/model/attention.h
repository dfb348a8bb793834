#pragma once
// Causal attention of one query head over one KV stream (the kept tokens of a (layer, KV
// head)). Keys/values are rows of head_dim in F32 or F16; only keys whose absolute position
// is <= the query's take part. Reads the kept KV only: cost is O(kept tokens), not history.
#include <cstdint>

#include "core/dtype.h"

namespace triattn {

struct AttentionStream {
  DType type;            // F32 or F16
  const void* keys;      // [n, head_dim]
  const void* values;    // [n, head_dim]
  const int32_t* pos;    // [n]
  int64_t n;
  int head_dim;
};

// out[head_dim] = Σ softmax(scale · q·k_i) v_i over i with pos[i] <= query_pos.
// scores: scratch of at least n floats; on return it holds the softmax weights (0 for masked
// keys), which attention-observing policies read.
void attend_one_head(const float* q, const AttentionStream& s, int32_t query_pos, float scale, float* scores,
                     float* out);

}  // namespace triattn
