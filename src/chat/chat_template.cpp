#include "chat/chat_template.h"

#include <ctime>

#include "chat/jinja_template.h"
#include "core/error.h"

namespace triattn {
namespace {

jinja::Value strftime_value(const std::string& fmt, const std::optional<int64_t>& now_unix) {
  std::time_t t = now_unix ? static_cast<std::time_t>(*now_unix) : std::time(nullptr);
  std::tm tm{};
  if (now_unix) gmtime_r(&t, &tm);
  else localtime_r(&t, &tm);
  if (fmt.empty()) return jinja::Value(std::string());
  std::string buf(256, '\0');
  for (int tries = 0; tries < 8; ++tries) {
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) return jinja::Value(buf.substr(0, n));
    buf.resize(buf.size() * 4);
  }
  return jinja::Value(std::string());  // a format that expands to nothing
}

template <class Json>
std::string render_impl(const jinja::Template& tpl, const Json& messages, const ChatRenderOptions& opt) {
  using jinja::Value;
  if (!messages.is_array()) fail("chat template: messages must be a JSON array");
  jinja::ValueDict vars;
  vars.set("messages", jinja::value_from_json(messages));
  vars.set("tools", Value::none());
  vars.set("documents", Value::none());
  vars.set("add_generation_prompt", Value::boolean(opt.add_generation_prompt));
  vars.set("bos_token", Value(opt.bos_token));
  vars.set("eos_token", Value(opt.eos_token));
  vars.set("raise_exception", Value::callable("raise_exception", [](const jinja::CallArgs& a) -> Value {
    std::string msg = a.pos.empty() ? std::string() : a.pos[0].to_str();
    throw jinja::TemplateRaised(msg);
  }));
  std::optional<int64_t> now = opt.now_unix;
  vars.set("strftime_now", Value::callable("strftime_now", [now](const jinja::CallArgs& a) {
    if (a.pos.size() != 1 || !a.pos[0].is_string()) fail("strftime_now() takes one format string");
    return strftime_value(a.pos[0].str_ref(), now);
  }));
  if (!opt.extra.is_object()) fail("chat template: ChatRenderOptions::extra must be a JSON object");
  for (auto it = opt.extra.begin(); it != opt.extra.end(); ++it) {
    if (it.key() == "messages") fail("chat template: extra must not set 'messages'");
    vars.set(it.key(), jinja::value_from_json(it.value()));
  }
  return tpl.render(vars);
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source)
    : source_(source), tpl_(std::make_shared<const jinja::Template>(source)) {}

std::string ChatTemplate::render(const nlohmann::json& messages, const ChatRenderOptions& opt) const {
  return render_impl(*tpl_, messages, opt);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const ChatRenderOptions& opt) const {
  return render_impl(*tpl_, messages, opt);
}

const std::string& chatml_template_source() {
  // Without tools, plain ChatML. With them, the functions go in a system message and calls are
  // written as a JSON object in <tool_call> tags (the Hermes / Qwen2.5 convention, which the
  // server reads back); results come back as <tool_response> in a user turn.
  static const std::string src =
      "{%- if tools %}"
      "{{- '<|im_start|>system\\n' }}"
      "{%- if messages and messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
      "{{- '# Tools\\n\\nThese functions can be called; their signatures are inside <tools></tools>:\\n<tools>' }}"
      "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
      "{{- '\\n</tools>\\n\\nTo call one, reply with a JSON object of its name and arguments between <tool_call> and "
      "</tool_call>:\\n<tool_call>\\n{\"name\": NAME, \"arguments\": ARGUMENTS}\\n</tool_call><|im_end|>\\n' }}"
      "{%- endif %}"
      "{%- for message in messages %}"
      "{%- if tools and loop.first and message['role'] == 'system' %}"
      "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}"
      "{{- '<|im_start|>assistant\\n' + (message['content'] or '') }}"
      "{%- for call in message['tool_calls'] %}"
      "{%- set f = call['function'] if call['function'] else call %}"
      "{{- '\\n<tool_call>\\n{\"name\": \"' + f['name'] + '\", \"arguments\": ' }}"
      "{{- f['arguments'] if f['arguments'] is string else (f['arguments'] | tojson) }}"
      "{{- '}\\n</tool_call>' }}"
      "{%- endfor %}"
      "{{- '<|im_end|>\\n' }}"
      "{%- elif message['role'] == 'tool' %}"
      "{{- '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' }}"
      "{%- else %}"
      "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
      "{%- endif %}"
      "{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  return src;
}

ChatTemplate ChatTemplate::chatml() { return ChatTemplate(chatml_template_source()); }

std::string chat_template_from_config(const nlohmann::json& cfg) {
  auto it = cfg.find("chat_template");
  if (it == cfg.end() || it->is_null()) fail("tokenizer_config.json: no chat_template");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& e : *it)
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
        return e["template"].get<std::string>();
    fail("tokenizer_config.json: chat_template list has no entry named 'default'");
  }
  fail("tokenizer_config.json: chat_template is neither a string nor a list");
}

}  // namespace triattn
