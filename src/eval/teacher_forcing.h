#pragma once
// Feeding a fixed token sequence through a Sequence one token per step (the evaluation
// protocol of DESIGN §1: before each append the policy prunes when the append would take a
// stream past B + β, with p = tokens processed so far) and handing each step's logits to a
// callback. Perplexity and the KL part of agreement are both this loop.
#include <cstdint>
#include <functional>
#include <span>

#include "engine/sequence.h"
#include "model/forward.h"

namespace triattn::eval {

// tokens[0..n) are fed one at a time; after tokens[i] the callback gets (i, logits). The
// optional `prefix` is fed first in chunks (prefill, pruned before each chunk as the runtime
// does) and marked as the prompt; the callback then also gets (−1, logits after the prefix).
void feed_one_at_a_time(Sequence& seq, Forward& forward, std::span<const int32_t> prefix,
                        std::span<const int32_t> tokens,
                        const std::function<void(int64_t i, std::span<const float> logits)>& on_logits);

}  // namespace triattn::eval
