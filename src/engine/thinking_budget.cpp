#include "engine/thinking_budget.h"

#include "core/error.h"

namespace triattn {

ThinkingBudget::ThinkingBudget(const ThinkingBudgetSpec& spec) : spec_(&spec), inside_(spec.open_at_start) {
  if (spec.tokens < 0) fail("thinking budget: ", spec.tokens, " tokens is negative");
  if (spec.close_ids.empty()) fail("thinking budget: no tokens spell the close marker");
  if (inside_ && spec.tokens == 0) forcing_ = 0;
}

int32_t ThinkingBudget::forced() const { return forcing_ >= 0 ? spec_->close_ids[static_cast<size_t>(forcing_)] : -1; }

void ThinkingBudget::push(std::string_view piece) {
  if (forcing_ >= 0) {  // the close marker, one token at a time
    if (++forcing_ == static_cast<int>(spec_->close_ids.size())) {
      forcing_ = -1;
      inside_ = false;
      tail_.clear();
    }
    return;
  }
  if (inside_) ++count_;
  tail_ += piece;
  for (;;) {
    const std::string& marker = inside_ ? spec_->close : spec_->open;
    if (const size_t at = tail_.find(marker); at != std::string::npos) {
      inside_ = !inside_;
      tail_.erase(0, at + marker.size());
      continue;
    }
    if (tail_.size() > marker.size()) tail_.erase(0, tail_.size() - marker.size());  // a marker split over pieces
    break;
  }
  if (inside_ && count_ >= spec_->tokens) forcing_ = 0;
}

}  // namespace triattn
