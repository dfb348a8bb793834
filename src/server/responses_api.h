#pragma once
// OpenAI's Responses API over the engine: the body of POST /v1/responses read into a
// generation (input as a string or message, function_call and function_call_output items,
// instructions, max_output_tokens, temperature, top_p, seed, text.format, store,
// previous_response_id, function tools with tool_choice and parallel_tool_calls; every other
// field of the API refused by name), and the response object and stream events it is
// answered with (the model's calls as function_call items).
//
// previous_response_id continues the stored response's token ids with only the new turn
// appended, rendered by the chat template as what follows a finished assistant reply: the
// history is never rendered again, so what the template would drop from earlier turns (a
// reasoning model's <think> text) stays, and the scheduler continues the kept KV cache.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "server/api_reply.h"
#include "server/completion_request.h"
#include "server/responses_store.h"
#include "tokenizer/tokenizer.h"

namespace triattn::server {

struct ResponsesRequest {
  CompletionRequest gen;  // prompt, options, sampling, KV settings
  bool store = true;
  std::string previous_response_id;
  // The request's fields as the response object repeats them (instructions, temperature, ...).
  nlohmann::json echo;
};

// Throws ApiError (400) naming the first bad field; an unknown previous_response_id is 400 too.
ResponsesRequest parse_responses_request(const nlohmann::json& body, const std::string& raw_body, const Model& model,
                                         const ChatPrompt& chat_prompt, const RequestDefaults& defaults,
                                         const ResponseStore& store);

// The text a chat template puts after a finished assistant reply to render these messages
// and the generation prompt: the continuation of a stored response. ApiError when the
// template cannot render it. kwargs: more template variables (the request's tools).
std::string continuation_after_reply(const ChatPrompt& chat_prompt, const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object());

// The response object and events of one request.
class ResponsesFormat : public ReplyFormat {
 public:
  struct Setup {
    std::string id;  // "resp_..."
    int64_t created_at = 0;
    std::string model;
    const Tokenizer* tok = nullptr;
    std::vector<int32_t> prompt;
    bool store = true;
    ResponseStore* store_into = nullptr;
    nlohmann::json echo;
  };
  explicit ResponsesFormat(Setup s) : s_(std::move(s)) {}

  nlohmann::json whole(const GenerateResult& r, const ReasoningSplit::Out& text, const nlohmann::json& calls) override;
  nlohmann::json error_body(const ApiError& e) const override { return e.body(); }
  std::string stream_begin() override;
  std::string stream_piece(const ReasoningSplit::Out& piece, const nlohmann::json& calls) override;
  std::string stream_end(const GenerateResult& r, const ReasoningSplit::Out& text) override;
  std::string stream_error(const ApiError& e) override;

 private:
  struct Item {
    bool reasoning = false;
    std::string id, text;
    nlohmann::json call = nullptr;  // a function_call item: the call as ToolCallReader read it
  };
  nlohmann::json object(const std::string& status, const nlohmann::json& output) const;
  nlohmann::json item_json(const Item& it, const std::string& status) const;
  nlohmann::json finished(const GenerateResult& r, const std::vector<Item>& items, const ReasoningSplit::Out& text);
  std::string item_id(const std::string& prefix, size_t index) const;
  Item call_item(const nlohmann::json& call, size_t index) const;
  std::string event(const std::string& type, nlohmann::json data);
  std::string open_item(bool reasoning);
  std::string close_item();
  std::string stream_call(const nlohmann::json& call);

  Setup s_;
  std::vector<Item> items_;  // streamed: the output items so far, the last one open
  bool open_ = false;
  int64_t sequence_ = 0;
};

}  // namespace triattn::server
