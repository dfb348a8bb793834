#include "grammar/constraint.h"

#include <algorithm>

namespace triattn::grammar {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Constraint::Constraint(std::shared_ptr<TokenMasker> masker) : masker_(std::move(masker)), state_(masker_->initial()) {}

const TokenBits& Constraint::allowed() {
  const auto t = std::chrono::steady_clock::now();
  const TokenBits& m = masker_->mask(state_);
  last_mask_seconds_ = since(t);
  seconds_ += last_mask_seconds_;
  return m;
}

bool Constraint::accept(int32_t id) {
  const auto t = std::chrono::steady_clock::now();
  const VocabTrie& v = masker_->vocab();
  bool ok;
  if (std::find(v.eog().begin(), v.eog().end(), id) != v.eog().end()) {
    ok = state_.complete;
    if (ok) state_.data.clear();  // nothing may follow the end
  } else if (id < 0 || static_cast<size_t>(id) >= v.vocab_size() || v.bytes(id).empty()) {
    ok = false;
  } else {
    StackSet next = state_;
    ok = masker_->recognizer().advance(next, v.bytes(id));
    if (ok) state_ = std::move(next);
  }
  seconds_ += since(t);
  return ok;
}

}  // namespace triattn::grammar
