#include "cli/prompt.h"

#include "core/error.h"

namespace triattn::cli {

std::vector<int32_t> build_prompt(const Model& model, const std::string& text, const PromptOptions& opt) {
  const Tokenizer& tok = model.tokenizer();
  if (opt.chat) fail("--chat: chat templates are not available yet");
  std::vector<int32_t> ids = tok.encode(text, tok.add_bos_default(), false);
  if (ids.empty()) fail("the prompt is empty and the model adds no BOS token: give a prompt with -p or -f");
  return ids;
}

}  // namespace triattn::cli
