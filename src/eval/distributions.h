#pragma once
// Log-probabilities from logits, in double precision (a 512-token perplexity sums hundreds of
// terms; float accumulation would drift in the fourth digit the numpy reference checks).
#include <cstdint>
#include <span>

namespace triattn::eval {

// -log softmax(logits)[id].
double nll_of(std::span<const float> logits, int32_t id);
// KL(P || Q) in nats with P = softmax(p_logits), Q = softmax(q_logits): what is lost by
// using Q (the policy) where P (full attention) holds.
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits);

}  // namespace triattn::eval
