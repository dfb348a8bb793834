#pragma once
// One conversation held in one Sequence. Each turn renders the whole conversation with the
// template but feeds only the text past what the KV cache already holds; when the template
// rewrote earlier turns (some drop old reasoning, trim replies) the sequence starts over.
#include <memory>
#include <ostream>
#include <string>

#include "chat/chat_prompt.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "engine/sequence.h"

namespace triattn::cli {

struct ChatTurn {
  std::string reply;
  int64_t fed_tokens = 0;      // tokens fed for this turn's prompt
  bool refed_all = false;      // the cache was dropped and the whole conversation fed again
  int64_t generated_tokens = 0;  // sampled, an end-of-generation token included
  std::string finish_reason;   // as GenerateResult: "stop", "length" or "callback"
  double prefill_seconds = 0, decode_seconds = 0;
};

class ChatSession {
 public:
  // notices: where restarts and the sequence's notices (context, budget) are reported
  // (nullptr: silent).
  ChatSession(const Model& model, Forward& forward, const PolicyFactory& policies, const ChatPrompt& prompt,
              const SamplerParams& sampling, const GenerateOptions& reply, std::string system,
              std::ostream* notices);

  // Adds the user message, generates the reply (streamed through on_text, which may return
  // false to stop early) and adds it to the conversation.
  ChatTurn turn(const std::string& user_text, const TextCallback& on_text);
  // Forgets the conversation (the system message stays) and the KV cache.
  void reset();

  const Sequence& sequence() const { return *seq_; }
  Sequence& sequence() { return *seq_; }
  size_t n_messages() const { return messages_.size(); }

 private:
  void restart_sequence();

  const Model& model_;
  Forward& forward_;
  const PolicyFactory& policies_;
  const ChatPrompt& prompt_;
  Sampler sampler_;
  GenerateOptions reply_;  // n_predict, end-of-generation, stop strings of every reply
  std::string system_;
  std::ostream* notices_;
  std::unique_ptr<Sequence> seq_;
  nlohmann::ordered_json messages_;
  // The text whose tokens the sequence holds: the last rendered prompt plus the reply.
  std::string fed_text_;
};

}  // namespace triattn::cli
