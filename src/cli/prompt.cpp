#include "cli/prompt.h"

#include <iostream>

#include "core/error.h"

namespace triattn::cli {

BuiltPrompt build_prompt(const Model& model, const std::string& text, const PromptOptions& opt) {
  const Tokenizer& tok = model.tokenizer();
  BuiltPrompt p;
  if (opt.chat) {
    const ChatPrompt chat(tok, model.path(), opt.chat_opt, &std::cerr);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!opt.system.empty()) messages.push_back(chat_message("system", opt.system));
    messages.push_back(chat_message("user", text));
    p.text = chat.render(messages, /*add_generation_prompt=*/true);
    p.ids = chat.tokenize(p.text);
  } else {
    if (!opt.system.empty()) fail("--system needs --chat");
    p.text = text;
    p.ids = tok.encode(text, tok.add_bos_default(), false);
  }
  if (p.ids.empty()) fail("the prompt is empty and the model adds no BOS token: give a prompt with -p or -f");
  return p;
}

void add_chat_template_options(CLI::App& app, ChatPromptOptions& opt) {
  app.add_option("--chat-template", opt.template_path,
                 "chat template to use instead of the model's: a Jinja file or a tokenizer_config.json");
  app.add_flag("--no-think", opt.no_think, "render the template with enable_thinking=false (Qwen3)");
}

}  // namespace triattn::cli
