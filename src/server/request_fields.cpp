#include "server/request_fields.h"

#include <string>
#include <string_view>

#include "kv/policy.h"
#include "server/api_error.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;

enum FieldEndpoints : unsigned { kChatField = 1, kCompletionsField = 2, kEveryEndpoint = 3 };

// Values of a refused field that ask for nothing the server lacks (OpenAI's defaults).
bool asks_no_tools(const json& v) { return v.is_array() && v.empty(); }
bool asks_no_tool_call(const json& v) { return v.is_string() && v.get<std::string>() == "none"; }
bool asks_one_candidate(const json& v) { return v.is_number_integer() && v.get<int64_t>() == 1; }
bool asks_no_suffix(const json& v) { return v.is_string() && v.get<std::string>().empty(); }
bool asks_no_storing(const json& v) { return v.is_boolean() && !v.get<bool>(); }
bool asks_text_only(const json& v) { return v == json::array({"text"}); }
bool asks_default_tier(const json& v) {
  return v.is_string() && (v.get<std::string>() == "auto" || v.get<std::string>() == "default");
}

struct KnownField {
  std::string_view name;
  unsigned endpoints;
  // Refused fields: what the server lacks, and which values ask for none of it (null: any
  // value other than null is refused). Null for the fields the server reads.
  const char* lacks = nullptr;
  bool (*asks_nothing)(const json&) = nullptr;
};

// The fields of OpenAI's two request bodies, and the llama.cpp ones the server also honours.
// The KV fields (kv_policy and a field per knob) come from the policies' own tables.
constexpr KnownField kKnownFields[] = {
    // Read (honoured, or for model/user/safety_identifier, checked: they select or track
    // nothing on a server of one model).
    {"model", kEveryEndpoint},
    {"messages", kChatField},
    {"prompt", kCompletionsField},
    {"stream", kEveryEndpoint},
    {"stream_options", kEveryEndpoint},
    {"n", kEveryEndpoint},
    {"max_tokens", kEveryEndpoint},
    {"max_completion_tokens", kEveryEndpoint},
    {"stop", kEveryEndpoint},
    {"temperature", kEveryEndpoint},
    {"top_p", kEveryEndpoint},
    {"seed", kEveryEndpoint},
    {"frequency_penalty", kEveryEndpoint},
    {"presence_penalty", kEveryEndpoint},
    {"logit_bias", kEveryEndpoint},
    {"logprobs", kEveryEndpoint},
    {"top_logprobs", kChatField},
    {"echo", kCompletionsField},
    {"response_format", kEveryEndpoint},
    {"metadata", kChatField},
    {"user", kEveryEndpoint},
    {"safety_identifier", kChatField},
    // llama.cpp's (llama-server takes them too).
    {"top_k", kEveryEndpoint},
    {"min_p", kEveryEndpoint},
    {"repeat_penalty", kEveryEndpoint},
    {"repeat_last_n", kEveryEndpoint},
    {"ignore_eos", kEveryEndpoint},
    {"grammar", kEveryEndpoint},
    {"chat_template_kwargs", kChatField},
    {"kv_policy", kEveryEndpoint},
    {"stats", kEveryEndpoint},  // "auto" only: statistics measured from the request's own queries
    {"kv_recall", kEveryEndpoint},  // the cold tier and recall (the server's quota and cold cap)
    // Tool calls (server/tool_fields.h): chat, through the model's template (the Responses and
    // Messages APIs read theirs into the same fields: server/api_tools.h).
    {"tools", kChatField},
    {"tool_choice", kChatField},
    {"parallel_tool_calls", kChatField},
    // Refused by name. The legacy form of tools.
    {"functions", kEveryEndpoint, "the legacy form of tools (send 'tools')", asks_no_tools},
    {"function_call", kEveryEndpoint, "the legacy form of tools (send 'tool_choice')", asks_no_tool_call},
    {"best_of", kEveryEndpoint, "best_of", asks_one_candidate},
    {"suffix", kEveryEndpoint, "suffix (fill-in-the-middle)", asks_no_suffix},
    {"audio", kChatField, "audio output"},
    {"modalities", kChatField, "output other than text", asks_text_only},
    {"moderation", kChatField, "moderation"},
    {"prediction", kChatField, "predicted outputs"},
    {"prompt_cache_key", kChatField, "prompt_cache_key (kept conversations are reused by their tokens)"},
    {"prompt_cache_options", kChatField, "prompt_cache_options"},
    {"prompt_cache_retention", kChatField, "prompt_cache_retention"},
    {"reasoning_effort", kChatField, "reasoning_effort (chat_template_kwargs is)"},
    {"service_tier", kChatField, "a service tier other than the default", asks_default_tier},
    {"store", kChatField, "storing completions", asks_no_storing},
    {"verbosity", kChatField, "verbosity"},
    {"web_search_options", kChatField, "web search"},
};

bool is_knob_field(const std::string& name) {
  for (const auto* knobs : {&kv_shared_params(), &kv_policy_knobs()})
    for (const PolicyKnob& k : *knobs)
      if (knob_field(k) == name) return true;
  return false;
}

}  // namespace

void check_request_fields(const json& body, bool chat) {
  const unsigned endpoint = chat ? kChatField : kCompletionsField;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& name = it.key();
    const KnownField* known = nullptr;
    for (const KnownField& f : kKnownFields)
      if (f.name == name && (f.endpoints & endpoint)) known = &f;
    if (!known) {
      if (is_knob_field(name)) continue;
      throw ApiError(400,
                     "'" + name + "' is not a field of " + (chat ? "/v1/chat/completions" : "/v1/completions") +
                         " that this server knows (leave it out)",
                     name);
    }
    if (!known->lacks || it->is_null() || (known->asks_nothing && known->asks_nothing(*it))) continue;
    throw ApiError(400, "'" + name + "' " + known->lacks + " is not supported by this server (leave it out)", name);
  }
}

}  // namespace triattn::server
