#pragma once
// The body of POST /v1/completions and /v1/chat/completions, checked field by field (type
// and range, each error naming the field) and turned into what the engine runs: prompt ids,
// sampling parameters, generation options and the request's KV settings (the server's
// defaults overridden by kv_policy and a field per KV knob: kv_budget, divide_length, window,
// sink, protect_prompt, pruning_mode and the policies' own, obs_window, ...; stats: "auto"), and a grammar
// from response_format or `grammar` (server/grammar_fields.h). Fields of the API that the
// server does not implement (tools, best_of, suffix, audio, ...) are refused by name, and so
// are fields it does not know at all (server/request_fields.h): none is silently ignored.
// Tools: server/tool_fields.h.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "grammar/vocab_trie.h"
#include "model/model.h"

namespace triattn::server {

class GrammarCache;
struct ToolRequest;

struct CompletionRequest {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int n = 1;                   // choices
  bool echo = false;           // completions: the reply starts with the prompt
  // Log-probabilities: -1 none; k >= 0 each token's and its k most likely alternatives
  // (chat: logprobs + top_logprobs; completions: logprobs = k). options.logprobs and, with
  // echo, options.prompt_logprobs carry it to the engine.
  int logprobs = -1;
  std::vector<int32_t> prompt;
  std::string prompt_text;  // what was tokenized (chat: the rendered template; token ids: their text)
  nlohmann::json metadata;  // chat: up to 16 string pairs, echoed in the reply (null: none)
  GenerateOptions options;
  SamplerParams sampling;
  KvSettings kv;
  std::shared_ptr<const ToolRequest> tools;  // chat with tools offered; null: none
};

// The OpenAI API's sampling when a request names none: temperature 1, top_p 1, no top-k,
// min-p or penalties (the repeat window llama-server's).
inline SamplerParams openai_sampling_defaults() {
  SamplerParams s;
  s.temperature = 1.0f;
  s.top_k = 0;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.repeat_last_n = 64;
  return s;
}

struct RequestDefaults {
  KvSettings kv;                  // the server's flags and TRIATTN_RUNTIME_* (statistics loaded)
  int64_t max_tokens = 512;       // when the request names none
  int64_t max_tokens_limit = 0;   // most a request may ask for (more: 400); 0 = no limit
  // Sampling for fields a request leaves out: OpenAI's defaults unless the server's flags
  // (--temp, --top-k, ...) say otherwise, as llama-server's do.
  SamplerParams sampling = openai_sampling_defaults();
  std::optional<uint64_t> seed;   // --seed; none: a fresh seed per request
  // The model's vocabulary as a trie, for grammars (built once by the server; null: built
  // per request that needs one).
  std::shared_ptr<const grammar::VocabTrie> vocab;
  // Compiled grammars kept between requests (null: none kept).
  std::shared_ptr<GrammarCache> grammars;
};

// Every field but the prompt, for the endpoints that build their prompt themselves (the
// Responses and Messages APIs translate their bodies into these fields); refuses nothing by
// name (each endpoint knows its own unsupported fields).
CompletionRequest parse_generation_fields(const nlohmann::json& body, bool chat, const Model& model,
                                          const RequestDefaults& defaults, const std::string* raw_body = nullptr);

// With r.tools forcing a call (tool_choice required or named): the grammar that makes the
// reply one, from r.prompt_text (refused next to response_format or grammar).
void force_tool_calls(CompletionRequest& r, const Model& model, const ChatPrompt& chat_prompt,
                      const RequestDefaults& defaults);

// Throws ApiError (400) naming the first bad field. raw_body: the body's text, for a JSON
// schema's property order (grammar_of_request).
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat, const Model& model,
                                           const ChatPrompt& chat_prompt, const RequestDefaults& defaults,
                                           const std::string* raw_body = nullptr);

}  // namespace triattn::server
