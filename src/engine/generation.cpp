#include "engine/generation.h"

#include <algorithm>

#include "core/error.h"
#include "kv/recall.h"

namespace triattn {

namespace {
double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// An end-of-generation token's text spelled out by ordinary tokens ends the text too: small
// models trained on text holding "<|end_story|>" write it before the real token, and a reply
// must not show it. Not under a grammar: there the grammar alone says where the text may end
// (cutting it there would break, say, a JSON string holding "</s>").
std::vector<std::string> stop_texts(const Tokenizer& tok, const GenerateOptions& opt) {
  std::vector<std::string> s = opt.stop;
  if (opt.stop_at_eog && !opt.grammar)
    for (int32_t id : tok.eog_ids()) s.push_back(tok.token_text(id));
  return s;
}
}  // namespace

Generation::Generation(const Model& model, Sequence& seq, std::span<const int32_t> prompt,
                       const GenerateOptions& opt, Sampler& sampler, TextCallback on_text, TokenCallback on_token)
    : model_(model),
      seq_(seq),
      opt_(opt),
      sampler_(sampler),
      on_text_(std::move(on_text)),
      on_token_(std::move(on_token)),
      prompt_(prompt.begin(), prompt.end()),
      // The dummy-prefix space is dropped only for a token right after BOS (an empty prompt).
      decoder_(model.tokenizer(), !prompt.empty() && prompt.back() == model.tokenizer().bos_id()),
      stops_(stop_texts(model.tokenizer(), opt)),
      t_start_(std::chrono::steady_clock::now()) {
  if (opt.grammar) constraint_.emplace(opt.grammar);
  if (opt.thinking_budget) {
    if (opt.grammar) fail("generate: a thinking budget and a grammar cannot be used together");
    budget_.emplace(*opt.thinking_budget);
  }
  if (prompt.empty()) fail("generate: the prompt is empty (nothing to condition on)");
  if (seq.history().empty()) seq.set_prompt_length(static_cast<int64_t>(prompt.size()));
  seq.check_context(static_cast<int64_t>(prompt.size()));  // refuse before anything is fed
  seq.reserve_for(seq.cache().n_processed() + static_cast<int64_t>(prompt.size()) + std::max<int64_t>(0, opt.n_predict));
}

Generation::Generation(const Generation& parent, Sequence& seq, Sampler& sampler, TextCallback on_text,
                       TokenCallback on_token)
    : model_(parent.model_),
      seq_(seq),
      opt_(parent.opt_),
      sampler_(sampler),
      on_text_(std::move(on_text)),
      on_token_(std::move(on_token)),
      prompt_(parent.prompt_),
      prompt_fed_(parent.prompt_fed_),
      rewound_(parent.rewound_),
      next_(parent.next_),
      has_next_(parent.has_next_),
      finished_(parent.finished_),
      quiet_(parent.quiet_),
      decoder_(parent.decoder_),
      decoded_bytes_(parent.decoded_bytes_),
      generated_(parent.generated_),
      stops_(parent.stops_),
      constraint_(parent.constraint_),
      budget_(parent.budget_),
      r_(parent.r_),
      t_start_(parent.t_start_),
      t_decode_(parent.t_decode_) {}

ForwardItem::Logits Generation::logits_for(int64_t n) const {
  if (in_prefill() && opt_.prompt_logprobs >= 0) return ForwardItem::Logits::All;
  if (in_prefill()) return prompt_fed_ + static_cast<size_t>(n) == prompt_.size() ? ForwardItem::Logits::Last : ForwardItem::Logits::None;
  return n == static_cast<int64_t>(pending().size()) ? ForwardItem::Logits::Last : ForwardItem::Logits::None;
}

std::span<const int32_t> Generation::pending() const {
  if (prompt_fed_ < prompt_.size()) {
    const std::span<const int32_t> rest = std::span<const int32_t>(prompt_).subspan(prompt_fed_);
    // With recall the prompt's last token goes in alone, after a recall event driven by the
    // queries of the rest (the question), so the first generated token reads what it recalled.
    if (seq_.recalls() && !seq_.cache().can_rewind() && rest.size() > 1) return rest.first(rest.size() - 1);
    return rest;
  }
  if (has_next_) return {&next_, 1};
  return {};
}

void Generation::fed(int64_t n, std::span<const float> logits) {
  if (in_prefill()) {
    if (opt_.prompt_logprobs >= 0) {
      // Row i holds the logits after prompt token prompt_fed_ + i: the distribution of the
      // token after it. The last row of the whole prompt is the first generated token's.
      const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
      if (logits.size() != static_cast<size_t>(n) * vocab) fail("generation: the step returned no logits per position");
      for (int64_t i = 0; i < n; ++i) {
        const size_t next = prompt_fed_ + static_cast<size_t>(i) + 1;
        // A token fed again after recall (rewind_for_recall) keeps its first figure.
        if (next < prompt_.size() && next > r_.prompt_logprobs.size())
          r_.prompt_logprobs.push_back(
              token_logprob(logits.subspan(static_cast<size_t>(i) * vocab, vocab), prompt_[next], opt_.prompt_logprobs));
      }
      logits = logits.subspan(static_cast<size_t>(n - 1) * vocab, vocab);
    }
    prompt_fed_ += static_cast<size_t>(n);
    if (in_prefill()) {
      if (prompt_fed_ + 1 == prompt_.size() && seq_.recalls() && !seq_.cache().can_rewind()) seq_.request_recall();
      return;
    }
    // With recall the prompt's last tokens go in twice: the whole prompt's queries drive a
    // recall event, then the tail (the question) is computed again reading what came back.
    if (seq_.recalls() && seq_.cache().can_rewind() && !rewound_) {
      rewound_ = true;
      const int64_t most = std::min<int64_t>(KvRecall::kPromptTail, static_cast<int64_t>(prompt_fed_));
      const size_t taken = static_cast<size_t>(seq_.rewind_for_recall(most));
      if (taken > 0) {
        prompt_fed_ -= taken;
        return;
      }
    }
    t_decode_ = std::chrono::steady_clock::now();
    seq_.stats().prefill_seconds += seconds_between(t_start_, t_decode_);
    seq_.stats().prompt_tokens += static_cast<int64_t>(prompt_.size());
  } else {
    has_next_ = false;
  }
  if (!finished_) {
    on_logits(logits);
  } else {  // the last token of a feed_last generation went in: the figures include it
    seq_.update_stats();
    r_.stats = seq_.stats();
  }
}

void Generation::on_logits(std::span<const float> logits) {
  const int64_t count = generated_;
  if (count >= opt_.n_predict) {  // -n 0: nothing to sample
    finish();
    return;
  }
  if (seq_.room() < 1) {  // only when the prompt filled the context exactly
    seq_.notice("generation stopped at the context limit (" + std::to_string(seq_.context_limit()) + " tokens) after " +
                std::to_string(count) + " tokens");
    r_.finish_reason = "length";
    finish();
    return;
  }
  const grammar::TokenBits* allowed = nullptr;
  double mask_seconds = -1;
  if (constraint_) {
    if (constraint_->finished()) {  // the grammar is complete and nothing may follow
      r_.finish_reason = "stop";
      finish();
      return;
    }
    allowed = &constraint_->allowed();
    mask_seconds = constraint_->last_mask_seconds();
    bool any = false;
    for (uint64_t w : *allowed) any = any || w != 0;
    if (!any) {
      fail_with("grammar: no token of the vocabulary continues the grammar after " + std::to_string(count) +
                " tokens (the vocabulary cannot spell what it requires here)");
      return;
    }
  }
  // The history ends with this generation's tokens (each was fed before its successor's logits).
  const int32_t forced = budget_ ? budget_->forced() : -1;
  const int32_t id = forced >= 0 ? forced : sampler_.sample(logits, seq_.history(), allowed, static_cast<size_t>(count));
  if (constraint_ && !constraint_->accept(id)) {  // cannot happen: the sampler drew from the mask
    fail_with("grammar: the sampled token " + std::to_string(id) + " does not fit the grammar");
    return;
  }
  ++generated_;
  const TokenLogprob* lp = nullptr;
  if (opt_.logprobs >= 0) {
    last_logprob_ = token_logprob(logits, id, opt_.logprobs);
    lp = &last_logprob_;
  }
  if (opt_.keep_output) {
    r_.tokens.push_back(id);
    r_.text_offsets.push_back(decoded_bytes_);
    if (lp) {
      r_.logprobs.push_back(std::move(last_logprob_));
      lp = &r_.logprobs.back();
    }
  }
  ++seq_.stats().generated_tokens;
  if (on_token_) on_token_({id, decoded_bytes_, lp, mask_seconds});
  if (opt_.stop_at_eog && model_.tokenizer().is_eog(id)) {  // not text: never decoded
    r_.finish_reason = "stop";
    finish();
    return;
  }
  // Another token may follow only while the context has room for this one and the next. A
  // token after which nothing is sampled needs no forward step, unless the caller keeps the
  // sequence going (feed_last).
  const bool more = count + 1 < opt_.n_predict && seq_.room() > 1;
  if (more || opt_.feed_last) {
    next_ = id;
    has_next_ = true;
  }
  const std::string piece = decoder_.push(id);
  decoded_bytes_ += piece.size();
  if (budget_) budget_->push(piece);
  if (!emit(stops_.push(piece))) {
    finish();
    return;
  }
  if (constraint_ && constraint_->finished()) {  // only the end may follow: no step for it
    r_.finish_reason = "stop";
    finish();
    return;
  }
  if (!more) {
    if (count + 1 < opt_.n_predict)
      seq_.notice("generation stopped at the context limit (" + std::to_string(seq_.context_limit()) +
                  " tokens) after " + std::to_string(count + 1) + " tokens");
    finish();
  }
}

bool Generation::emit(const StopStrings::Step& step) {
  if (opt_.keep_output) r_.text += step.text;
  if (step.stopped) r_.finish_reason = "stop";
  if (!quiet_ && on_text_ && !step.text.empty() && !on_text_(step.text)) {
    quiet_ = true;
    if (r_.finish_reason.empty()) r_.finish_reason = "callback";
  }
  return r_.finish_reason.empty();
}

void Generation::stop(const std::string& reason) {
  if (finished_) {
    has_next_ = false;
    return;
  }
  r_.finish_reason = reason;
  prompt_fed_ = prompt_.size();
  finish();
  has_next_ = false;
}

void Generation::fail_with(const std::string& message) {
  if (finished_) {
    has_next_ = false;
    return;
  }
  stop("error");
  r_.error = message;
}

void Generation::finish() {
  finished_ = true;
  if (!opt_.feed_last) has_next_ = false;
  // What the decoder and the stop strings still hold is text, unless a stop string ended it.
  if (!stops_.stopped()) {
    StopStrings::Step rest = stops_.push(decoder_.flush());
    if (!rest.stopped) rest.text += stops_.flush();
    const std::string reason = r_.finish_reason;
    emit(rest);
    if (!reason.empty() && !rest.stopped) r_.finish_reason = reason;
  }
  if (r_.finish_reason.empty()) r_.finish_reason = "length";
  const auto now = std::chrono::steady_clock::now();
  if (!in_prefill() && t_decode_ != std::chrono::steady_clock::time_point{})
    seq_.stats().decode_seconds += seconds_between(t_decode_, now);
  seq_.update_stats();
  r_.stats = seq_.stats();
  if (constraint_) r_.stats.grammar_ms = constraint_->seconds() * 1000;
}

}  // namespace triattn
