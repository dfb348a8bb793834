#include "eval/teacher_forcing.h"

namespace triattn::eval {

void feed_one_at_a_time(Sequence& seq, Forward& forward, std::span<const int32_t> prefix,
                        std::span<const int32_t> tokens,
                        const std::function<void(int64_t i, std::span<const float> logits)>& on_logits) {
  seq.reserve_for(static_cast<int64_t>(prefix.size() + tokens.size()));
  if (!prefix.empty()) {
    seq.set_prompt_length(static_cast<int64_t>(prefix.size()));
    const std::vector<float> logits = seq.feed(prefix, forward);
    on_logits(-1, logits);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::vector<float> logits = seq.feed(tokens.subspan(i, 1), forward);
    on_logits(static_cast<int64_t>(i), logits);
  }
}

}  // namespace triattn::eval
