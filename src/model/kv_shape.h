#pragma once
// The KV cache shape of a model, its sliding-window layers included: every cache that a
// model's forward pass fills is made from this, so KV policies know which layers they may
// compress (KvCacheShape::layer_window, AttentionGeometry::layer_window).
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kv/kv_cache.h"
#include "model/config.h"

namespace triattn {

// Per layer: 0 = full attention, w = a sliding window of w, KvCacheShape::kNoKv = a DeltaNet
// layer; empty when every layer is full attention.
std::vector<int32_t> layer_windows(const ModelConfig& c);
// Per layer: the floats of its recurrent state per sequence; empty when no layer has one.
std::vector<int64_t> layer_state_floats(const ModelConfig& c);

KvCacheShape kv_cache_shape(const ModelConfig& c, DType type);

// Layers that keep KV rows (all but DeltaNet layers), and the bytes of one sequence's
// recurrent state (0 without DeltaNet layers): what admission counts beside the rows.
int kv_layer_count(const ModelConfig& c);
size_t sequence_state_bytes(const ModelConfig& c);

}  // namespace triattn
