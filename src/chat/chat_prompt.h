#pragma once
// The chat side of prompting: which template a model uses, how a conversation renders, and
// how the rendered text becomes token ids. Engine-independent (a vocabulary is enough), so
// `generate --chat`, `chat` and the tests share one behaviour.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace triattn {

struct ChatPromptOptions {
  // --chat-template: a Jinja file, or a tokenizer_config.json holding "chat_template".
  // Empty: the model's own template.
  std::string template_path;
  bool no_think = false;  // enable_thinking = false (Qwen3-style templates)
};

class ChatPrompt {
 public:
  // Template, in order: opt.template_path; the one stored with the vocabulary (GGUF
  // tokenizer.chat_template, tokenizer_config.json chat_template); chat_template.jinja in the
  // model directory; else ChatML, announced on `notices` (nullptr: silent).
  // Error naming the template's origin when it does not parse.
  ChatPrompt(const Tokenizer& tok, const std::string& model_path, const ChatPromptOptions& opt,
             std::ostream* notices);

  // messages: JSON array of {"role", "content"} objects. Error (naming the template's origin)
  // when the template fails or rejects the conversation with raise_exception.
  // kwargs: more template variables (an API request's chat_template_kwargs, e.g.
  // {"enable_thinking": false}); they override --no-think.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  // A whole prompt, special tokens parsed: BOS as the model asks, except when the text already
  // begins with the BOS text (templates that write {{ bos_token }} would otherwise get two).
  std::vector<int32_t> tokenize(const std::string& text) const;
  // Text that continues what a sequence already holds: special tokens parsed, never BOS.
  std::vector<int32_t> tokenize_continuation(const std::string& text) const;

  const std::string& origin() const { return origin_; }  // e.g. "GGUF tokenizer.chat_template"
  const std::string& template_source() const { return tpl_->source(); }
  bool is_fallback() const { return fallback_; }
  const std::string& bos_text() const { return bos_text_; }

 private:
  const Tokenizer& tok_;
  std::unique_ptr<ChatTemplate> tpl_;
  std::string origin_;
  bool fallback_ = false;
  std::string bos_text_, eos_text_;
  bool no_think_ = false;
};

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content);

}  // namespace triattn
