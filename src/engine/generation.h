#pragma once
// One request's generation as a state machine: what to feed next (the prompt, then each
// sampled token) and what to do with the logits that come back (sample, decode, match stop
// strings, decide the end). generate() drives one of these in a loop; the scheduler drives
// many, one engine step at a time. Both share every rule here, so a sequence decodes the
// same way alone or in a batch.
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "engine/stop_strings.h"
#include "grammar/constraint.h"

namespace triattn {

class Generation {
 public:
  // seq is the sequence the prompt continues (empty for a new one: then the prompt is its
  // prompt for protect-prompt); the references must outlive this object.
  Generation(const Model& model, Sequence& seq, std::span<const int32_t> prompt, const GenerateOptions& opt,
             Sampler& sampler, TextCallback on_text = nullptr, TokenCallback on_token = nullptr);
  // Another choice of the same request (n > 1): a copy of `parent`'s state on `seq`, a fork of
  // parent's sequence taken where parent stands (before parent's fed() of the step that
  // completes the prompt, so both sample their first token from the same logits), with its
  // own sampler and callbacks.
  Generation(const Generation& parent, Sequence& seq, Sampler& sampler, TextCallback on_text,
             TokenCallback on_token);

  // Tokens that must go through the model next: what is left of the prompt, or the last
  // sampled token; empty once done().
  std::span<const int32_t> pending() const;
  // The logits the forward step must return when the first n of pending() go through the
  // model: every position's while prompt log-probabilities are asked for, the last one when
  // they complete pending() (in prefill: the prompt), else none.
  ForwardItem::Logits logits_for(int64_t n) const;
  // The first n of pending() went through the model (the caller fed them to the sequence);
  // logits: as logits_for(n) asked.
  void fed(int64_t n, std::span<const float> logits);
  // Ends the generation now with this finish reason (a cancelled request, an error); what
  // is left pending is dropped.
  void stop(const std::string& reason);
  // Ends it with finish reason "error" and this message.
  void fail_with(const std::string& message);
  bool done() const { return finished_ && pending().empty(); }
  bool in_prefill() const { return prompt_fed_ < prompt_.size(); }

  // The result so far (final once done()).
  const GenerateResult& result() const { return r_; }
  Sequence& sequence() { return seq_; }

 private:
  void on_logits(std::span<const float> logits);
  // Text through the stop strings into the result and the callback; false: generation ends.
  bool emit(const StopStrings::Step& step);
  void finish();

  const Model& model_;
  Sequence& seq_;
  GenerateOptions opt_;
  Sampler& sampler_;
  TextCallback on_text_;
  TokenCallback on_token_;
  std::vector<int32_t> prompt_;
  size_t prompt_fed_ = 0;
  bool rewound_ = false;  // the prompt's last token was taken back for recall (Sequence::rewind_for_recall)
  int32_t next_ = -1;  // a sampled token still to be fed
  bool has_next_ = false;
  bool finished_ = false;
  bool quiet_ = false;  // the callback asked to stop: it gets no more text
  StreamDecoder decoder_;
  size_t decoded_bytes_ = 0;  // text the decoder has given so far (token text offsets)
  int64_t generated_ = 0;     // tokens sampled
  TokenLogprob last_logprob_; // the last token's, when the result keeps none
  StopStrings stops_;
  std::optional<grammar::Constraint> constraint_;  // when opt_.grammar is set
  std::optional<ThinkingBudget> budget_;           // when opt_.thinking_budget is set
  GenerateResult r_;
  std::chrono::steady_clock::time_point t_start_, t_decode_;
};

}  // namespace triattn
