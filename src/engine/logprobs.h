#pragma once
// Log-probabilities of tokens under the model's next-token distribution: the log-softmax of
// the raw logits, before any sampling transform (temperature, top-k/p, penalties), as the
// OpenAI API reports them and log-likelihood evaluations need them.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace triattn {

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // the most likely tokens, most likely first
};

// log p(id) under softmax(logits), with the `top` most likely tokens (ties: lower id first).
// Computed in double; -inf logits give -inf log-probabilities, never NaN.
TokenLogprob token_logprob(std::span<const float> logits, int32_t id, int top);

}  // namespace triattn
