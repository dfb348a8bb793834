#include "server/reasoning_split.h"

#include <algorithm>

namespace triattn::server {

namespace {
constexpr std::string_view kOpen = "<think>", kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Length of the longest tail of s that is a proper prefix of tag.
size_t partial_tag(const std::string& s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.compare(s.size() - n, n, tag.data(), n) == 0) return n;
  return 0;
}
}  // namespace

ReasoningSplit::ReasoningSplit(bool enabled, bool starts_inside)
    : state_(!enabled ? State::After : starts_inside ? State::Inside : State::Start) {}

bool ReasoningSplit::prompt_opens_reasoning(const std::string& prompt_text) {
  size_t end = prompt_text.size();
  while (end > 0 && is_space(prompt_text[end - 1])) --end;
  return end >= kOpen.size() && prompt_text.compare(end - kOpen.size(), kOpen.size(), kOpen) == 0;
}

ReasoningSplit::Out ReasoningSplit::push(const std::string& piece) {
  Out out;
  held_ += piece;
  for (;;) {
    if (state_ == State::Start) {
      const size_t first = held_.find_first_not_of(" \n\r\t");
      if (first == std::string::npos) return out;  // only white space so far
      const std::string rest = held_.substr(first);
      if (rest.compare(0, kOpen.size(), kOpen) == 0) {
        held_ = rest.substr(kOpen.size());
        state_ = State::Inside;
        continue;
      }
      if (rest.size() < kOpen.size() && kOpen.compare(0, rest.size(), rest) == 0) return out;  // maybe <think>
      state_ = State::After;
      continue;
    }
    if (state_ == State::Inside) {
      const size_t close = held_.find(kClose);
      if (close == std::string::npos) {
        const size_t keep = partial_tag(held_, kClose);
        out.reasoning += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
      }
      out.reasoning += held_.substr(0, close);
      held_.erase(0, close + kClose.size());
      state_ = State::After;
      trim_next_ = true;
      continue;
    }
    // After: the answer.
    if (trim_next_) {
      const size_t first = held_.find_first_not_of(" \n\r\t");
      if (first == std::string::npos) {
        held_.clear();
        return out;
      }
      held_.erase(0, first);
      trim_next_ = false;
    }
    out.content += held_;
    held_.clear();
    return out;
  }
}

ReasoningSplit::Out ReasoningSplit::flush() {
  Out out;
  if (state_ == State::Inside) out.reasoning = held_;
  else if (!trim_next_) out.content = held_;  // Start: a reply of white space or a partial "<thi"
  held_.clear();
  return out;
}

}  // namespace triattn::server
