#include "chat/chat_prompt.h"

#include <filesystem>
#include <ostream>

#include "core/read_file.h"
#include "core/error.h"

namespace triattn {

namespace {

std::string token_text_or_empty(const Tokenizer& tok, int32_t id) {
  return id >= 0 && id < tok.vocab_size() ? tok.token_text(id) : std::string();
}

// --chat-template FILE: a tokenizer_config.json is recognised by its extension, anything
// else is taken as Jinja source.
std::string read_template_file(const std::string& path) {
  const std::string text = read_file(path);
  if (std::filesystem::path(path).extension() != ".json") return text;
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
  try {
    return chat_template_from_config(cfg);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace

ChatPrompt::ChatPrompt(const Tokenizer& tok, const std::string& model_path, const ChatPromptOptions& opt,
                       std::ostream* notices)
    : tok_(tok), no_think_(opt.no_think) {
  namespace fs = std::filesystem;
  std::string source;
  std::error_code ec;
  const bool is_dir = fs::is_directory(model_path, ec);
  if (!opt.template_path.empty()) {
    source = read_template_file(opt.template_path);
    origin_ = opt.template_path;
  } else if (!tok.chat_template().empty()) {
    source = tok.chat_template();
    origin_ = is_dir ? (fs::path(model_path) / "tokenizer_config.json").string()
                     : model_path + " (tokenizer.chat_template)";
  } else if (is_dir && fs::exists(fs::path(model_path) / "chat_template.jinja", ec)) {
    // Recent transformers versions save the template as its own file.
    origin_ = (fs::path(model_path) / "chat_template.jinja").string();
    source = read_file(origin_);
  } else {
    fallback_ = true;
    origin_ = "built-in ChatML";
    source = chatml_template_source();
    if (notices) *notices << "note: " << model_path << " has no chat template; using ChatML\n";
  }
  try {
    tpl_ = std::make_unique<ChatTemplate>(source);
  } catch (const Error& e) {
    fail(origin_, ": chat template does not parse: ", e.what());
  }
  bos_text_ = token_text_or_empty(tok, tok.bos_id());
  eos_text_ = token_text_or_empty(tok, tok.eos_id());
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                               const nlohmann::ordered_json& kwargs) const {
  ChatRenderOptions ro;
  ro.add_generation_prompt = add_generation_prompt;
  ro.bos_token = bos_text_;
  ro.eos_token = eos_text_;
  if (no_think_) ro.extra["enable_thinking"] = false;
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) ro.extra[it.key()] = it.value();
  try {
    return tpl_->render(messages, ro);
  } catch (const ChatTemplateRaised& e) {
    fail("chat template (", origin_, ") rejected the conversation: ", e.what());
  } catch (const Error& e) {
    fail("chat template (", origin_, "): ", e.what());
  }
}

std::vector<int32_t> ChatPrompt::tokenize(const std::string& text) const {
  const bool has_bos_text = !bos_text_.empty() && text.starts_with(bos_text_);
  return tok_.encode(text, has_bos_text ? false : tok_.add_bos_default(), /*parse_special=*/true);
}

std::vector<int32_t> ChatPrompt::tokenize_continuation(const std::string& text) const {
  return tok_.encode(text, /*add_bos=*/false, /*parse_special=*/true);
}

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  m["role"] = role;
  m["content"] = content;
  return m;
}

}  // namespace triattn
