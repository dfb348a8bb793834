#include "server/api_fields.h"

#include <random>

#include "kv/policy.h"
#include "server/api_error.h"

namespace triattn::server {

using json = nlohmann::json;

void refuse_field(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field);
}

bool is_kv_field(const std::string& name) {
  if (name == "kv_policy") return true;
  for (const auto* knobs : {&kv_shared_params(), &kv_policy_knobs()})
    for (const PolicyKnob& k : *knobs)
      if (knob_field(k) == name) return true;
  return false;
}

void check_fields(const json& body, const std::vector<std::string>& known, const std::map<std::string, std::string>& refused,
                  const std::string& api) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  for (auto it = body.begin(); it != body.end(); ++it)
    if (auto r = refused.find(it.key()); r != refused.end()) refuse_field(it.key(), r->second);
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool ok = is_kv_field(it.key());
    for (const std::string& k : known) ok = ok || k == it.key();
    if (!ok) refuse_field(it.key(), "is not a field of " + api + " that this server supports (leave it out)");
  }
}

ApiError renamed_error(const ApiError& e, const std::map<std::string, std::string>& renames) {
  // std::map orders keys so that a longer name follows its prefix: the last match is the longest.
  const std::pair<const std::string, std::string>* best = nullptr;
  for (const auto& r : renames)
    if (e.param.rfind(r.first, 0) == 0) best = &r;
  if (!best) return e;
  const std::string param = best->second + e.param.substr(best->first.size());
  std::string message = e.what();
  if (const std::string quoted = "'" + e.param + "'"; message.rfind(quoted, 0) == 0)
    message = "'" + param + "'" + message.substr(quoted.size());
  return ApiError(e.status, message, param, e.type);
}

CompletionRequest parse_translated(const json& chat_body, const std::map<std::string, std::string>& renames,
                                   const Model& model, const RequestDefaults& defaults, const std::string* raw_body) {
  try {
    return parse_generation_fields(chat_body, true, model, defaults, raw_body);
  } catch (const ApiError& e) {
    throw renamed_error(e, renames);
  }
}

std::string content_text(const json& content, const std::string& at, const std::vector<std::string>& text_types,
                         const std::function<bool(const json& part, const std::string& at)>& on_other) {
  if (content.is_string()) return content.get<std::string>();
  std::string types;
  for (const std::string& t : text_types) types += (types.empty() ? "" : ", ") + t;
  if (!content.is_array()) refuse_field(at, "must be a string or a list of content parts (" + types + ")");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pat = at + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      refuse_field(pat, "must be an object with a 'type'");
    const std::string type = part["type"].get<std::string>();
    bool is_text = false;
    for (const std::string& t : text_types) is_text = is_text || t == type;
    if (!is_text) {
      if (on_other && on_other(part, pat)) continue;
      refuse_field(pat + ".type", "'" + type + "' is not supported by this server (text parts are: " + types + ")");
    }
    if (!part.contains("text") || !part["text"].is_string()) refuse_field(pat + ".text", "must be a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

std::string random_hex(size_t chars) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < chars; ++i) s += digits[rng() & 15];
  return s;
}

}  // namespace triattn::server
