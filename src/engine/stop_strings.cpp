#include "engine/stop_strings.h"

#include <algorithm>

namespace triattn {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopStrings::Step StopStrings::push(const std::string& piece) {
  Step step;
  if (stopped_) return step;
  if (stops_.empty()) {
    step.text = piece;
    return step;
  }
  held_ += piece;
  // The earliest occurrence of any stop string ends the text.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    step.text = held_.substr(0, first);
    step.stopped = stopped_ = true;
    held_.clear();
    return step;
  }
  // Hold back the longest tail of the text that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  step.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

std::string StopStrings::flush() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? std::string() : rest;
}

}  // namespace triattn
