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

// Per layer: 0 = full attention, w = a sliding window of w; empty when no layer slides.
std::vector<int32_t> layer_windows(const ModelConfig& c);

KvCacheShape kv_cache_shape(const ModelConfig& c, DType type);

}  // namespace triattn
