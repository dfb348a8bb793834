#include "tokenizer/bpe_added_tokens.h"

namespace triattn {

void AddedTokenMatcher::add(std::string_view text, int32_t id, bool control) {
  if (text.empty()) return;
  uint32_t node = 0;
  for (char c : text) {
    const uint64_t k = (uint64_t(node) << 8) | uint8_t(c);
    auto it = edges_.find(k);
    if (it == edges_.end()) {
      it = edges_.emplace(k, uint32_t(terminal_.size())).first;
      terminal_.push_back(Terminal{});
    }
    node = it->second;
  }
  // Same text twice: keep the first id (the lower one in file order).
  if (terminal_[node].id < 0) terminal_[node] = Terminal{id, control};
  first_byte_[uint8_t(text[0])] = true;
}

AddedTokenMatcher::Match AddedTokenMatcher::match_at(std::string_view text, size_t pos,
                                                     bool allow_control) const {
  Match best;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find((uint64_t(node) << 8) | uint8_t(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    const Terminal& t = terminal_[node];
    if (t.id >= 0 && (allow_control || !t.control)) best = Match{t.id, i + 1 - pos};
  }
  return best;
}

}  // namespace triattn
