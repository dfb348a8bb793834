#pragma once
// Query statistics measured while a sequence runs (--stats auto): the running mean over every
// pre-RoPE query the sequence has fed, prompt and generated tokens alike, in the shape a stats
// file has (HeadStats). The policy owns one, feeds it what the forward pass reports and reads
// it at each pruning event; a forked sequence continues with a copy.
#include <cstdint>
#include <memory>

#include "kv/policy.h"

namespace triattn {

class OnlineStats {
 public:
  virtual ~OnlineStats() = default;
  // As KvPolicy::observe_pre_rope.
  virtual void add(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) = 0;
  // Tokens seen so far (every layer sees each token once).
  virtual int64_t tokens() const = 0;
  // The means so far; Error when no token was seen.
  virtual HeadStats result() const = 0;
  virtual std::unique_ptr<OnlineStats> clone() const = 0;
};

}  // namespace triattn
