#include "model/kv_shape.h"

namespace triattn {

std::vector<int32_t> layer_windows(const ModelConfig& c) {
  std::vector<int32_t> w;
  if (c.has_sliding_layers())
    for (int l = 0; l < c.n_layers; ++l) w.push_back(c.is_sliding(l) ? c.layer(l).window : 0);
  return w;
}

KvCacheShape kv_cache_shape(const ModelConfig& c, DType type) {
  return KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, type, layer_windows(c)};
}

}  // namespace triattn
