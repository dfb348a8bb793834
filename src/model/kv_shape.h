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

}  // namespace triattn
