// triattn logits: the model's logits for a token sequence, as JSON; used by the reference
// tests to compare against an independent implementation.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/forward.h"

namespace triattn::cli {

int cmd_logits(const std::vector<std::string>& args) {
  CLI::App app{"Print logits for a token sequence as JSON", "triattn logits"};
  std::string model_path, tokens, prompt, kv_type = "f32";
  bool all = false;
  int threads = 0;
  app.add_option("-m,--model", model_path, "model path")->required();
  app.add_option("--tokens", tokens, "comma-separated token ids");
  app.add_option("-p,--prompt", prompt, "prompt text (tokenized with BOS when the model asks)");
  app.add_flag("--all", all, "logits of every position (default: the last only)");
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16 or q8_0")->capture_default_str();
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (tokens.empty() == prompt.empty()) fail("give exactly one of --tokens or -p");
  const DType cache_type = parse_kv_type(kv_type);
  auto model = load_model(model_path, {.threads = threads});
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> ids = tokens.empty() ? tok.encode(prompt, tok.add_bos_default()) : parse_token_list(tokens);
  const FreshRun run = run_fresh(*model, ids, cache_type,
                                 all ? ForwardItem::Logits::All : ForwardItem::Logits::Last, threads);
  const std::vector<float>& logits = run.logits;
  nlohmann::json rows = nlohmann::json::array();
  const size_t V = static_cast<size_t>(model->config().vocab_size);
  for (size_t r = 0; r * V < logits.size(); ++r)
    rows.push_back(std::vector<float>(logits.begin() + r * V, logits.begin() + (r + 1) * V));
  std::cout << nlohmann::json{{"tokens", ids}, {"logits", rows}}.dump() << "\n";
  return 0;
}

}  // namespace triattn::cli
