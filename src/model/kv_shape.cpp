#include "model/kv_shape.h"

namespace triattn {

std::vector<int32_t> layer_windows(const ModelConfig& c) {
  std::vector<int32_t> w;
  if (c.has_uncompressed_layers())
    for (int l = 0; l < c.n_layers; ++l)
      w.push_back(c.is_delta(l) ? KvCacheShape::kNoKv : c.is_sliding(l) ? c.layer(l).window : 0);
  return w;
}

std::vector<int64_t> layer_state_floats(const ModelConfig& c) {
  std::vector<int64_t> n;
  if (c.has_delta_layers())
    for (int l = 0; l < c.n_layers; ++l)
      n.push_back(c.is_delta(l) ? c.delta.conv_state_floats() + c.delta.state_floats() : 0);
  return n;
}

int kv_layer_count(const ModelConfig& c) {
  int n = 0;
  for (int l = 0; l < c.n_layers; ++l) n += !c.is_delta(l);
  return n;
}

size_t sequence_state_bytes(const ModelConfig& c) {
  size_t floats = 0;
  for (int64_t n : layer_state_floats(c)) floats += static_cast<size_t>(n);
  return floats * sizeof(float);
}

KvCacheShape kv_cache_shape(const ModelConfig& c, DType type) {
  KvCacheShape s{c.n_layers, c.max_kv_heads(), c.head_dim, type, layer_windows(c), layer_state_floats(c)};
  if (c.layer_shape_differs())
    for (int l = 0; l < c.n_layers; ++l) {
      s.layer_kv_heads.push_back(c.layer_kv_heads(l));
      s.layer_head_dim.push_back(c.layer_head_dim(l));
    }
  return s;
}

}  // namespace triattn
