#pragma once
// What the Responses and Messages APIs share in reading a request: their bodies are checked
// against the fields each API names (any other is refused by name, never ignored), then
// translated into the fields of a chat completion so that one parser (parse_generation_fields)
// reads sampling, limits, grammar and KV settings for every endpoint; its errors are renamed
// back to the fields the client sent.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace triattn::server {

[[noreturn]] void refuse_field(const std::string& field, const std::string& what);

// The per-request KV fields (kv_policy and one per knob), taken by every endpoint.
bool is_kv_field(const std::string& name);

// Each field of `body` must be in `known` or a KV field; `refused` names fields refused with
// their own reason when present (e.g. tools), checked first. `api` names the API in the error.
void check_fields(const nlohmann::json& body, const std::vector<std::string>& known,
                  const std::map<std::string, std::string>& refused, const std::string& api);

// The same error naming the API's field for a chat field (renames: chat field -> the API's,
// the longest matching prefix of its param wins; the message's leading 'field' too).
ApiError renamed_error(const ApiError& e, const std::map<std::string, std::string>& renames);

// parse_generation_fields on a translated body; an error about a chat field names the field
// the client sent instead (renames: chat field -> the API's, longest prefix first).
CompletionRequest parse_translated(const nlohmann::json& chat_body, const std::map<std::string, std::string>& renames,
                                   const Model& model, const RequestDefaults& defaults,
                                   const std::string* raw_body = nullptr);

// The text of content given as a string or a list of parts {type, text} whose type is one of
// `text_types`; `at` names it in errors; on_other(part, at) may take other parts (else refused).
std::string content_text(const nlohmann::json& content, const std::string& at, const std::vector<std::string>& text_types,
                         const std::function<bool(const nlohmann::json& part, const std::string& at)>& on_other = nullptr);

// Random lowercase hex, for API object ids.
std::string random_hex(size_t chars);

}  // namespace triattn::server
