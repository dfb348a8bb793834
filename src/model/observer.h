#pragma once
// What a forward pass reports about one batch item: calibration and analysis read the
// pre-RoPE vectors, the KV policies that need them the post-RoPE queries and the attention
// weights (the engine adapts a policy to this interface; the forward pass knows no policy).
// Vectors are in the runtime's "halves" RoPE layout (band f is the pair (x[f],
// x[f + head_dim/2]) whatever the file's storage order was).
#include <cstdint>

namespace triattn {

class ForwardObserver {
 public:
  // What wants() may ask for beyond the pre-RoPE vectors, which every observer gets.
  enum Want : unsigned { kNothing = 0, kQueries = 1u << 0, kAttention = 1u << 1 };

  virtual ~ForwardObserver() = default;
  // The calls for queries and attention come on the calling thread, token by token, KV head
  // by KV head and query head by query head (each head's query, then its weights).
  virtual unsigned wants() const { return kNothing; }
  // Pre-RoPE queries and keys of `layer` for a run of n_tokens consecutive tokens of one
  // sequence starting at absolute position pos0 (after q_norm/k_norm where the model has
  // them). q: [n_tokens, n_heads * head_dim], k: [n_tokens, n_kv_heads * head_dim].
  virtual void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) {}
  // Asked by kQueries: the post-RoPE query of query head q_head at absolute position pos
  // (head_dim floats), for every token of the item after the whole item was appended.
  virtual void on_query(int layer, int q_head, int32_t pos, const float* q_rotated) {}
  // Asked by kAttention: the softmax attention of that query over the rows of its KV stream
  // (layer, q_head / group) in cache order.
  virtual void on_attention(int layer, int q_head, const float* weights, int64_t n_keys) {}
};

}  // namespace triattn
