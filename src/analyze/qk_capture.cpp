#include "analyze/qk_capture.h"

#include "core/error.h"

namespace triattn {

QkCapture::QkCapture(int n_layers, int n_heads, int n_kv_heads, int head_dim, int rotary_dim,
                     std::vector<int> observed_layers)
    : n_layers_(n_layers), n_heads_(n_heads), n_kv_heads_(n_kv_heads), head_dim_(head_dim),
      half_((rotary_dim > 0 ? rotary_dim : head_dim) / 2) {
  const int rot = rotary_dim > 0 ? rotary_dim : head_dim;
  if (n_layers <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || head_dim % 2 || n_heads % n_kv_heads ||
      rot % 2 || rot > head_dim)
    fail("analyze: invalid model shape (", n_layers, " layers, ", n_heads, "/", n_kv_heads, " heads, head_dim ",
         head_dim, ", rotary_dim ", rot, ")");
  observed_.assign(n_layers, observed_layers.empty());
  for (int l : observed_layers) {
    if (l < 0 || l >= n_layers) fail("analyze: observed layer ", l, " of ", n_layers);
    observed_[l] = true;
  }
  while (!observed_[first_]) ++first_;
  q_.resize(n_layers);
  k_.resize(n_layers);
  layer_tokens_.assign(n_layers, 0);
}

void QkCapture::on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) {
  if (layer < 0 || layer >= n_layers_) fail("analyze: observer called for layer ", layer, " of ", n_layers_);
  if (!observed_[layer]) fail("analyze: the forward pass reported layer ", layer, ", which has no KV");
  const int64_t first = layer_tokens_[layer];
  if (layer == first_) {
    if (pos0 == 0) {
      windows_.push_back({first, 0});
    } else if (windows_.empty() || windows_.back().length != pos0) {
      fail("analyze: the forward pass reported position ", pos0, " where position ",
           windows_.empty() ? 0 : windows_.back().length, " was expected");
    }
    for (int64_t t = 0; t < n_tokens; ++t) positions_.push_back(pos0 + t);
    windows_.back().length += n_tokens;
  } else if (first + n_tokens > layer_tokens_[first_] || (n_tokens > 0 && positions_[first] != pos0)) {
    fail("analyze: layer ", layer, " reported tokens that layer ", first_, " did not (position ", pos0, ")");
  }
  q_[layer].insert(q_[layer].end(), q, q + n_tokens * n_heads_ * head_dim_);
  k_[layer].insert(k_[layer].end(), k, k + n_tokens * n_kv_heads_ * head_dim_);
  layer_tokens_[layer] += n_tokens;
}

int64_t QkCapture::tokens() const {
  for (int l = 0; l < n_layers_; ++l)
    if (observed_[l] && layer_tokens_[l] != layer_tokens_[first_])
      fail("analyze: layer ", l, " reported ", layer_tokens_[l], " tokens but layer ", first_, " reported ",
           layer_tokens_[first_]);
  return layer_tokens_[first_];
}

}  // namespace triattn
