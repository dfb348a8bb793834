#pragma once
// Chat templates: renders a conversation into the prompt text a model expects, by running
// the model's Jinja chat_template the way transformers' apply_chat_template does
// (trim_blocks + lstrip_blocks, tojson without HTML escaping, raise_exception, strftime_now).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja_errors.h"

namespace triattn {

namespace jinja {
class Template;
}

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  // More template variables, e.g. enable_thinking, tools, date_string. Ordered so that tool
  // schemas keep their key order through `tojson`, as Python dicts do (a plain nlohmann::json
  // assigned here arrives with its keys sorted). `tools` and `documents` default to none, as
  // in transformers; leave `tools` out rather than passing [] when there are none.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // Time for strftime_now(), as Unix seconds formatted in UTC, for reproducible prompts;
  // unset: the local time now (what transformers does).
  std::optional<int64_t> now_unix;
};

// Thrown when the template itself rejects the conversation via raise_exception(msg);
// what() is the template's message. Other failures throw plain Error naming the line.
using ChatTemplateRaised = jinja::TemplateRaised;

class ChatTemplate {
 public:
  explicit ChatTemplate(const std::string& source);  // parses once; throws Error

  // `messages`: a JSON array of {"role", "content", ...} objects, passed to the template
  // as-is. The ordered_json overload keeps object key order (matters for tojson output).
  std::string render(const nlohmann::json& messages, const ChatRenderOptions& opt) const;
  std::string render(const nlohmann::ordered_json& messages, const ChatRenderOptions& opt) const;

  const std::string& source() const { return source_; }

  // A simple fallback (ChatML) for models without a template.
  static ChatTemplate chatml();

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> tpl_;
};

// The ChatML template chatml() uses.
const std::string& chatml_template_source();

// The chat template of a HF tokenizer_config.json: its "chat_template" string, or the entry
// named "default" when it is a list of {"name", "template"}. Throws Error when absent.
std::string chat_template_from_config(const nlohmann::json& tokenizer_config);

}  // namespace triattn
