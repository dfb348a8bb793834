#pragma once
// The engine step, the one driver of the forward pass: each sequence in the step checks its
// context rule and prunes before its own append, one batched forward call streams the
// weights once for all of them, then each records what it fed. The scheduler plans steps
// over many requests (decode tokens first, prefill chunks within a token budget, then
// sampling and stops); generate(), feed() and the benchmark, calibration and evaluation
// loops are its other clients.
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "model/forward.h"

namespace triattn {

struct StepItem {
  Sequence* seq = nullptr;
  std::span<const int32_t> tokens;  // at most seq->max_step(); alive until run() returns
  ForwardItem::Logits logits = ForwardItem::Logits::Last;
  // Sees this item's pre-RoPE vectors beside its policy (calibration, analysis); may be null.
  ForwardObserver* observer = nullptr;
  // Out: why the sequence refused the step (the context rule) before anything of it was fed;
  // the other items ran.
  std::exception_ptr error;
};

class EngineStep {
 public:
  explicit EngineStep(Forward& forward) : forward_(forward) {}
  Forward& forward() { return forward_; }
  // Runs the items (see above); returns how many ran. Errors of the forward pass itself (a
  // token outside the vocabulary) are thrown.
  size_t run(std::span<StepItem> items);
  // Item i's logits from the last run, as its `logits` asked (empty for a refused item).
  std::vector<float>& logits(size_t i) { return logits_[i]; }

 private:
  Forward& forward_;
  std::vector<ForwardItem> forward_items_;
  std::vector<size_t> ran_;  // the items that ran, in forward order
  std::vector<std::vector<float>> out_, logits_;
};

// Runs tokens through one sequence in steps of at most its max_step() and returns the logits
// after the last one (prefill, teacher forcing). Throws Error, before anything is fed, when
// the tokens would take a sequence whose memory is not bounded past its context limit.
std::vector<float> feed(EngineStep& step, Sequence& seq, std::span<const int32_t> tokens,
                        ForwardObserver* observer = nullptr);

// One sequence's teacher forcing: `prefix` first (in chunks, marked as its prompt), then
// tokens[i] one at a time.
struct ForcedRun {
  Sequence* seq = nullptr;
  std::span<const int32_t> prefix, tokens;
};

// Teacher forcing of several sequences together, one engine step per token, so they share
// each weight pass; each prunes exactly as alone. on_logits(r, -1, logits) after run r's
// prefix (when it has one), on_logits(r, i, logits) after its tokens[i]. Throws Error, before
// anything is fed, when a run would take a sequence past its context limit unbounded.
void feed_together(EngineStep& step, std::span<const ForcedRun> runs,
                   const std::function<void(size_t run, int64_t i, std::span<const float> logits)>& on_logits);

}  // namespace triattn
