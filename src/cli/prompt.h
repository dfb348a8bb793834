#pragma once
// Prompt text -> token ids: plain text with BOS when the model asks for it, or (--chat) the
// text as a user message rendered by the model's chat template.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "model/model.h"

namespace triattn::cli {

struct PromptOptions {
  bool chat = false;
  std::string system;  // system message (chat only; empty = none)
  ChatPromptOptions chat_opt;
};

struct BuiltPrompt {
  std::vector<int32_t> ids;
  std::string text;  // what was tokenized: the rendered template in chat mode
};

BuiltPrompt build_prompt(const Model& model, const std::string& text, const PromptOptions& opt);

// --chat-template FILE and --no-think, shared by `generate --chat` and `chat`.
void add_chat_template_options(CLI::App& app, ChatPromptOptions& opt);

}  // namespace triattn::cli
