#include "cli/chat_session.h"

#include <chrono>

#include "core/error.h"

namespace triattn::cli {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

ChatSession::ChatSession(const Model& model, Forward& forward, const PolicyFactory& policies,
                         const ChatPrompt& prompt, const SamplerParams& sampling, int64_t n_predict,
                         std::string system, std::ostream* notices)
    : model_(model),
      forward_(forward),
      policies_(policies),
      prompt_(prompt),
      sampler_(sampling),
      n_predict_(n_predict),
      system_(std::move(system)),
      notices_(notices) {
  reset();
}

void ChatSession::restart_sequence() {
  seq_ = std::make_unique<Sequence>(model_, policies_);
  fed_text_.clear();
}

void ChatSession::reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!system_.empty()) messages_.push_back(chat_message("system", system_));
  restart_sequence();
}

ChatTurn ChatSession::turn(const std::string& user_text, const TextCallback& on_text) {
  const Tokenizer& tok = model_.tokenizer();
  ChatTurn t;
  messages_.push_back(chat_message("user", user_text));
  std::string text;
  try {
    text = prompt_.render(messages_, /*add_generation_prompt=*/true);
  } catch (...) {
    messages_.erase(messages_.end() - 1);  // a rejected message must not poison later turns
    throw;
  }

  // Only text past what the cache holds is new. The reply was fed as sampled, so it is not
  // re-tokenized (its canonical tokenization may differ from what the model produced).
  const bool fresh = seq_->history().empty();
  std::vector<int32_t> ids;
  if (!fresh && text.starts_with(fed_text_)) {
    ids = prompt_.tokenize_continuation(text.substr(fed_text_.size()));
  } else {
    if (!fresh) {
      if (notices_) *notices_ << "note: the chat template rewrote earlier turns; re-feeding the whole conversation\n";
      restart_sequence();
      t.refed_all = true;
    }
    ids = prompt_.tokenize(text);
  }
  if (ids.empty()) fail("chat template produced no new tokens for the message");
  const int64_t ctx = model_.config().context_length;
  if (!warned_context_ && ctx > 0 && seq_->cache().n_processed() + static_cast<int64_t>(ids.size()) > ctx) {
    if (notices_)
      *notices_ << "note: the conversation is past the model's context length (" << ctx
                << " tokens); quality may drop (/reset starts over)\n";
    warned_context_ = true;
  }

  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = seq_->feed(ids, forward_);
  t.prefill_seconds = seconds_since(t0);
  if (fresh || t.refed_all) seq_->set_prompt_length(static_cast<int64_t>(ids.size()));
  t.fed_tokens = static_cast<int64_t>(ids.size());
  fed_text_ = std::move(text);

  StreamDecoder decoder(tok, ids.back() == tok.bos_id());
  t.finish_reason = "length";
  t0 = std::chrono::steady_clock::now();
  auto emit = [&](const std::string& piece) {
    t.reply += piece;
    fed_text_ += piece;
    return piece.empty() || !on_text || on_text(piece);
  };
  for (int64_t i = 0; i < n_predict_; ++i) {
    const int32_t id = sampler_.sample(logits, seq_->history());
    ++t.generated_tokens;
    if (tok.is_eog(id)) {
      t.finish_reason = "stop";
      break;
    }
    // Every reply token goes into the cache, even the last one, so the cache holds exactly
    // fed_text_ and the next turn continues from it.
    const int32_t one[1] = {id};
    logits = seq_->feed(one, forward_);
    if (!emit(decoder.push(id))) {
      t.finish_reason = "callback";
      break;
    }
  }
  emit(decoder.flush());
  t.decode_seconds = seconds_since(t0);
  seq_->stats().prompt_tokens += t.fed_tokens;
  seq_->stats().generated_tokens += t.generated_tokens;
  seq_->stats().prefill_seconds += t.prefill_seconds;
  seq_->stats().decode_seconds += t.decode_seconds;
  messages_.push_back(chat_message("assistant", t.reply));
  return t;
}

}  // namespace triattn::cli
