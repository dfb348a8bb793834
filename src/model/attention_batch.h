#pragma once
// The attention of one layer over a whole forward batch. Work is split into runs: one per
// (sequence, KV head, a few consecutive tokens), whose query heads read the KV stream
// together, so its rows come from memory once per run rather than once per query head.
// Runs go to the threads whole, or chunk by chunk when there are too few runs to keep
// every thread busy (decode); both give the same outputs bit for bit (attention.h). An
// item whose observer asks for attention weights goes one token a run, each run keeping its
// weights; observers are then called on the calling thread, token by token, KV heads and
// their query heads in order.
#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/forward_item.h"

namespace triattn {

// What one layer's attention needs of the model.
struct AttentionLayer {
  int layer = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int32_t window = 0;            // sliding-window layer: its window; 0 = full attention
  float softcap = 0;             // score soft-capping (0 = none)
  const float* sinks = nullptr;  // one sink logit per query head (gpt-oss), or null
  float scale = 1;               // applied to q·k
};

// The batch's tokens: token t belongs to items[owner[t]] at absolute position pos[t].
struct AttentionTokens {
  std::span<const ForwardItem> items;
  const int32_t* owner = nullptr;
  const int32_t* pos = nullptr;
};

class BatchedAttention {
 public:
  // q: [T, n_heads * head_dim] post-RoPE queries of the batch's T tokens, whose keys are in
  // the items' caches already; out: the same shape.
  void run(const AttentionLayer& a, const AttentionTokens& b, const float* q, float* out, ThreadPool* pool);

 private:
  std::vector<float> weights_;   // the attention weights observers asked for (a batch of runs)
  std::vector<float> partials_;  // the chunks' results when runs go chunk by chunk
};

}  // namespace triattn
