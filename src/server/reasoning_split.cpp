#include "server/reasoning_split.h"

#include <algorithm>

namespace triattn::server {

namespace {
constexpr std::string_view kOpen = "<think>", kClose = "</think>";
// harmony (gpt-oss): a message's header ends at <|message|>, its text at one of kEnds.
constexpr std::string_view kChannel = "<|channel|>", kMessage = "<|message|>";
constexpr std::string_view kEnds[] = {"<|end|>", "<|return|>", "<|call|>"};

bool is_blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

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
  while (end > 0 && is_blank(prompt_text[end - 1])) --end;
  return end >= kOpen.size() && prompt_text.compare(end - kOpen.size(), kOpen.size(), kOpen) == 0;
}

ReasoningSplit::Out ReasoningSplit::push(const std::string& piece) {
  Out out;
  held_ += piece;
  if (state_ == State::HarmonyHeader || state_ == State::HarmonyBody || state_ == State::HarmonyDone)
    return harmony(std::move(out));
  for (;;) {
    if (state_ == State::Start) {
      const size_t first = held_.find_first_not_of(" \n\r\t");
      if (first == std::string::npos) return out;  // only white space so far
      const std::string rest = held_.substr(first);
      if (rest.compare(0, kChannel.size(), kChannel) == 0) {
        held_ = rest;
        state_ = State::HarmonyHeader;
        return harmony(std::move(out));
      }
      if (rest.size() < kChannel.size() && kChannel.compare(0, rest.size(), rest) == 0) return out;  // maybe harmony
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

ReasoningSplit::Out ReasoningSplit::harmony(Out out) {
  for (;;) {
    if (state_ == State::HarmonyDone) {  // after <|return|> / <|call|>: nothing more is the reply's
      held_.clear();
      return out;
    }
    if (state_ == State::HarmonyHeader) {
      // "<|channel|>analysis", "<|start|>assistant<|channel|>final", "… to=functions.f <|constrain|>json"
      const size_t msg = held_.find(kMessage);
      if (msg == std::string::npos) return out;  // the header is never shown: wait for all of it
      const size_t ch = held_.rfind(kChannel, msg);
      std::string channel;
      if (ch != std::string::npos) {
        const size_t from = ch + kChannel.size();
        const size_t to = held_.find_first_of(" <", from);
        channel = held_.substr(from, std::min(to, msg) - from);
      }
      analysis_ = channel == "analysis";
      held_.erase(0, msg + kMessage.size());
      state_ = State::HarmonyBody;
      continue;
    }
    // HarmonyBody: text up to the first end tag; a tail that may start one is held back.
    size_t end = std::string::npos, end_len = 0;
    for (std::string_view e : kEnds)
      if (const size_t at = held_.find(e); at < end) end = at, end_len = e.size();
    std::string& dst = analysis_ ? out.reasoning : out.content;
    if (end == std::string::npos) {
      size_t keep = 0;
      for (std::string_view e : kEnds) keep = std::max(keep, partial_tag(held_, e));
      dst += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    dst += held_.substr(0, end);
    const bool last = held_.compare(end, end_len, kEnds[0]) != 0;  // <|return|> or <|call|>
    held_.erase(0, end + end_len);
    state_ = last ? State::HarmonyDone : State::HarmonyHeader;
  }
}

ReasoningSplit::Out ReasoningSplit::flush() {
  Out out;
  if (state_ == State::HarmonyBody) (analysis_ ? out.reasoning : out.content) = held_;
  if (state_ == State::HarmonyHeader || state_ == State::HarmonyBody || state_ == State::HarmonyDone) {
    held_.clear();  // an unfinished header is framing, not text
    return out;
  }
  if (state_ == State::Inside) out.reasoning = held_;
  else if (!trim_next_) out.content = held_;  // Start: a reply of white space or a partial "<thi"
  held_.clear();
  return out;
}

}  // namespace triattn::server
