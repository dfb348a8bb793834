#pragma once
// Fills a sequence's KV cache to a given depth without running the model over every token
// (a real 32K-token prefill takes hours on two cores). The contents are plausible, not
// random noise: pre-RoPE keys and values are sampled from a real short prefill of the same
// model, and each key is rotated by RoPE to its synthetic position, so TriAttention scores
// the keys with the same frequency structure a real run has. Decode speed does not depend on
// the values in the cache, only on how many rows attention and scoring read.
#include <cstdint>
#include <vector>

#include "engine/sequence.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::cli {

class SyntheticKv {
 public:
  // Runs `sample_tokens` random tokens through the model (fresh F32 cache) and keeps their
  // pre-RoPE keys and their values as the pool to sample from.
  SyntheticKv(const Model& model, Forward& forward, int64_t sample_tokens, uint64_t seed);

  // Appends positions cache.n_processed() .. depth-1 to seq's cache in steps of seq.max_step(),
  // calling seq.prepare_append() before each step exactly as Sequence::feed does, so the
  // policy prunes (and is timed) as in a real prefill of `depth` tokens, on `pool`.
  void fill(Sequence& seq, int64_t depth, ThreadPool* pool);

  int64_t sample_tokens() const { return n_sample_; }

 private:
  const Model& model_;
  int64_t n_sample_ = 0;
  uint64_t seed_;
  std::vector<float> freqs_;  // ω_f per band
  // [layer][sample token][n_kv_heads * head_dim], halves layout.
  std::vector<float> pre_k_, v_;
};

}  // namespace triattn::cli
