#pragma once
// Observer hooks of the forward pass: calibration and analysis see the tensors they need
// without touching kernels. Vectors are in the runtime's "halves" RoPE layout (band f is
// the pair (x[f], x[f + head_dim/2]) whatever the file's storage order was).
#include <cstdint>

namespace triattn {

class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // Pre-RoPE queries and keys of `layer` for a run of n_tokens consecutive tokens of one
  // sequence starting at absolute position pos0 (after q_norm/k_norm where the model has
  // them). q: [n_tokens, n_heads * head_dim], k: [n_tokens, n_kv_heads * head_dim].
  virtual void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q,
                           const float* k) {}
};

}  // namespace triattn
