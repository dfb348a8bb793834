#pragma once
// The JSON of replies to /v1/completions and /v1/chat/completions, whole or streamed: choices
// (text or message, reasoning apart), log-probabilities in each endpoint's format, and usage
// with the request's KV figures. Pure functions of the engine's results, so the formats are
// tested without a server.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "server/completion_request.h"
#include "server/reasoning_split.h"
#include "tokenizer/tokenizer.h"

namespace triattn::server {

// The generated tokens whose text was kept (a prefix: text offsets never decrease); a stop
// string's tokens and an end-of-generation token are not.
size_t kept_tokens(const GenerateResult& r);

// Chat format: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}].
nlohmann::json chat_logprobs_content(const Tokenizer& tok, std::span<const TokenLogprob> tokens);

// Completions (legacy) format, built token by token: {tokens, token_logprobs, top_logprobs,
// text_offset}; a token without log-probabilities (the first of an echoed prompt) has nulls.
class CompletionLogprobs {
 public:
  explicit CompletionLogprobs(const Tokenizer& tok) : tok_(tok) {}
  void add(int32_t id, const TokenLogprob* lp, size_t text_offset);
  // The echoed prompt: its tokens with the log-probabilities of all but the first.
  void add_prompt(std::span<const int32_t> prompt, std::span<const TokenLogprob> prompt_logprobs);
  bool empty() const { return tokens_.empty(); }
  nlohmann::json to_json() const;

 private:
  const Tokenizer& tok_;
  nlohmann::json tokens_ = nlohmann::json::array(), token_logprobs_ = nlohmann::json::array(),
                 top_logprobs_ = nlohmann::json::array(), text_offset_ = nlohmann::json::array();
};

// "stop" (end-of-generation token, stop string) or "length" (everything else).
std::string api_finish_reason(const GenerateResult& r);

// usage: prompt tokens (once), completion tokens over all choices, the prompt tokens reused
// from a kept conversation (prompt_tokens_details.cached_tokens), and the request's KV figures
// over its choices (largest peak tokens, summed bytes, prune events and scoring time).
nlohmann::json usage_json(int64_t prompt_tokens, std::span<const GenerateResult> choices, const std::string& policy);

// What one reply needs besides the engine's results.
struct ReplyContext {
  const Tokenizer* tok = nullptr;
  const CompletionRequest* request = nullptr;
  bool split_reasoning = false;  // chat: <think>…</think> as reasoning_content
  bool opens_reasoning = false;  // the rendered prompt ends inside <think>
};

// A whole (non-streamed) choice.
nlohmann::json whole_choice(const ReplyContext& ctx, int index, const GenerateResult& r);

// Streamed: one choice's delta with this text and, when given, these log-probabilities (in
// the endpoint's format); finish is null until the last chunk of the choice.
nlohmann::json stream_choice(const ReplyContext& ctx, int index, const ReasoningSplit::Out& text,
                             const nlohmann::json& logprobs, const nlohmann::json& finish, bool first);

}  // namespace triattn::server
