#include "tokenizer/eog_tokens.h"

#include <array>

namespace triattn {

bool is_end_of_turn_text(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "<|eot_id|>", "<|im_end|>",       "<|end|>",    "<end_of_turn>",
      "<|endoftext|>", "<|eom_id|>",    "<EOT>",      "_<EOT>",
      "<|end_of_text|>", "<end_of_utterance>", "<|return|>", "<｜end▁of▁sentence｜>",
  };
  for (std::string_view n : kNames) {
    if (n == text) return true;
  }
  return false;
}

}  // namespace triattn
