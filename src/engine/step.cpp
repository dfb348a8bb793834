#include "engine/step.h"

#include <algorithm>

namespace triattn {

size_t EngineStep::run(std::span<StepItem> items) {
  forward_items_.clear();
  ran_.clear();
  logits_.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    StepItem& it = items[i];
    logits_[i].clear();
    it.error = nullptr;
    try {
      forward_items_.push_back(it.seq->begin_step(it.tokens, it.logits, forward_.pool(), it.observer));
      ran_.push_back(i);
    } catch (const std::exception&) {
      it.error = std::current_exception();
    }
  }
  if (ran_.empty()) return 0;
  forward_.run(forward_items_, out_);
  for (size_t j = 0; j < ran_.size(); ++j) {
    StepItem& it = items[ran_[j]];
    it.seq->end_step(it.tokens);
    logits_[ran_[j]] = std::move(out_[j]);
  }
  return ran_.size();
}

std::vector<float> feed(EngineStep& step, Sequence& seq, std::span<const int32_t> tokens, ForwardObserver* observer) {
  seq.check_context(static_cast<int64_t>(tokens.size()));  // the whole input, before any of it is fed
  std::vector<float> last;
  const size_t max_step = static_cast<size_t>(seq.max_step());
  for (size_t start = 0; start < tokens.size(); start += max_step) {
    const size_t n = std::min(tokens.size() - start, max_step);
    const bool is_last = start + n == tokens.size();
    StepItem item;
    item.seq = &seq;
    item.tokens = tokens.subspan(start, n);
    item.logits = is_last ? ForwardItem::Logits::Last : ForwardItem::Logits::None;
    item.observer = observer;
    step.run(std::span<StepItem>(&item, 1));
    if (item.error) std::rethrow_exception(item.error);
    if (is_last) last = std::move(step.logits(0));
  }
  return last;
}

void feed_together(EngineStep& step, std::span<const ForcedRun> runs,
                   const std::function<void(size_t run, int64_t i, std::span<const float> logits)>& on_logits) {
  for (const ForcedRun& r : runs) {
    const int64_t n = static_cast<int64_t>(r.prefix.size() + r.tokens.size());
    r.seq->reserve_for(n);
    r.seq->check_context(n);
  }
  for (const ForcedRun& r : runs)
    if (!r.prefix.empty()) r.seq->set_prompt_length(static_cast<int64_t>(r.prefix.size()));
  // Run r has fed done[r] of its prefix + tokens; the prefix goes in the sequence's own
  // chunks (a policy may limit its step), then one token per step.
  std::vector<size_t> done(runs.size(), 0), who;
  std::vector<StepItem> items;
  for (;;) {
    items.clear();
    who.clear();
    for (size_t r = 0; r < runs.size(); ++r) {
      const ForcedRun& run = runs[r];
      const size_t P = run.prefix.size();
      if (done[r] < P) {
        const size_t n = std::min(P - done[r], static_cast<size_t>(run.seq->max_step()));
        items.push_back({run.seq, run.prefix.subspan(done[r], n),
                         done[r] + n == P ? ForwardItem::Logits::Last : ForwardItem::Logits::None, nullptr, nullptr});
      } else if (done[r] < P + run.tokens.size()) {
        items.push_back({run.seq, run.tokens.subspan(done[r] - P, 1), ForwardItem::Logits::Last, nullptr, nullptr});
      } else {
        continue;
      }
      who.push_back(r);
    }
    if (items.empty()) return;
    step.run(items);
    for (const StepItem& it : items)
      if (it.error) std::rethrow_exception(it.error);
    for (size_t j = 0; j < items.size(); ++j) {
      const size_t r = who[j], P = runs[r].prefix.size();
      done[r] += items[j].tokens.size();
      if (done[r] <= P) {
        if (done[r] == P) on_logits(r, -1, step.logits(j));
      } else {
        on_logits(r, static_cast<int64_t>(done[r] - P - 1), step.logits(j));
      }
    }
  }
}

}  // namespace triattn
