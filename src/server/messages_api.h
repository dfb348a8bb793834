#pragma once
// Anthropic's Messages API over the engine: the body of POST /v1/messages (system, messages
// with text, thinking, tool_use and tool_result content, max_tokens, stop_sequences,
// temperature, top_p, top_k, stream, metadata, tools, tool_choice; every other field refused
// by name) read into a generation, and the message and stream events it is answered with
// (the model's calls as tool_use blocks), errors in Anthropic's shape. A conversation whose
// last message is the assistant's is continued from that text (Anthropic's prefill).
// POST /v1/messages/count_tokens counts the same prompt, tools included.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "server/api_reply.h"
#include "server/completion_request.h"
#include "tokenizer/tokenizer.h"

namespace triattn::server {

struct MessagesRequest {
  CompletionRequest gen;
};

// Throws ApiError (400) naming the first bad field. count_only: the body of count_tokens
// (no max_tokens, no sampling). raw_body: the body's text, for the key order of the tools'
// schemas.
MessagesRequest parse_messages_request(const nlohmann::json& body, const std::string* raw_body, const Model& model,
                                       const ChatPrompt& chat_prompt, const RequestDefaults& defaults, bool count_only);

// {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}
nlohmann::json anthropic_error(const ApiError& e);

class MessagesFormat : public ReplyFormat {
 public:
  struct Setup {
    std::string id;  // "msg_..."
    std::string model;
    const Tokenizer* tok = nullptr;
    int64_t input_tokens = 0;
    std::vector<std::string> stop;  // the request's stop_sequences
  };
  explicit MessagesFormat(Setup s) : s_(std::move(s)) {}

  nlohmann::json whole(const GenerateResult& r, const ReasoningSplit::Out& text, const nlohmann::json& calls) override;
  nlohmann::json error_body(const ApiError& e) const override { return anthropic_error(e); }
  std::string stream_begin() override;
  std::string stream_piece(const ReasoningSplit::Out& piece, const nlohmann::json& calls) override;
  std::string stream_end(const GenerateResult& r, const ReasoningSplit::Out& text) override;
  std::string stream_error(const ApiError& e) override;

 private:
  // stop_reason and stop_sequence of a finished reply.
  std::pair<std::string, nlohmann::json> stop_of(const GenerateResult& r, bool called) const;
  nlohmann::json usage(const GenerateResult* r) const;
  std::string open_block(bool thinking);
  std::string close_block();
  std::string stream_call(const nlohmann::json& call);

  Setup s_;
  int blocks_ = 0;      // content blocks started
  bool open_ = false;   // the last one is open
  bool thinking_ = false;  // ... and is a thinking block
  bool text_seen_ = false;  // a text block was started
  bool called_ = false;     // a tool_use block was sent
};

}  // namespace triattn::server
