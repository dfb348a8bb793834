#pragma once
// What the engine sees of a grammar: one Constraint per sequence, over a TokenMasker that
// the sequences of a request share. The sampler asks allowed() before it samples and
// accept() after; a fork copies the Constraint. Time spent in both is counted, for the
// request's usage and the server's histogram.
#include <chrono>
#include <cstdint>
#include <memory>

#include "grammar/token_mask.h"

namespace triattn::grammar {

class Constraint {
 public:
  explicit Constraint(std::shared_ptr<TokenMasker> masker);

  // The tokens allowed now (end-of-generation ones only where the grammar is complete).
  const TokenBits& allowed();
  // Advances by a sampled token; false when the grammar does not allow it (nothing moves).
  bool accept(int32_t id);
  // The grammar has matched everything so far and may end here.
  bool complete() const { return state_.complete; }
  // No byte can follow: only end-of-generation remains.
  bool finished() const { return state_.data.empty(); }
  // Seconds spent in allowed() and accept() so far, and in the last allowed() call.
  double seconds() const { return seconds_; }
  double last_mask_seconds() const { return last_mask_seconds_; }

 private:
  std::shared_ptr<TokenMasker> masker_;
  StackSet state_;
  double seconds_ = 0, last_mask_seconds_ = 0;
};

}  // namespace triattn::grammar
