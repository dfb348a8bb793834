#pragma once
// Prompt text -> token ids: BOS when the model asks for it, or the chat template.
#include <string>
#include <vector>

#include "model/model.h"

namespace triattn::cli {

struct PromptOptions {
  bool chat = false;
  std::string system;
};

std::vector<int32_t> build_prompt(const Model& model, const std::string& text, const PromptOptions& opt);

}  // namespace triattn::cli
