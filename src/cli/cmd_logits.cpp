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
  app.add_option("--kv-type", kv_type, "KV cache type: f32 or f16")->capture_default_str();
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (tokens.empty() == prompt.empty()) fail("give exactly one of --tokens or -p");
  auto model = Model::load(model_path);
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> ids = tokens.empty() ? tok.encode(prompt, tok.add_bos_default()) : parse_token_list(tokens);
  auto type = dtype_from_name(kv_type);
  if (!type || (*type != DType::F16 && *type != DType::F32)) fail("--kv-type must be f16 or f32");

  const ModelConfig& c = model->config();
  KvCache cache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, *type}, static_cast<int64_t>(ids.size()));
  ThreadPool pool(threads);
  Forward forward(*model, &pool);
  ForwardItem item;
  item.cache = &cache;
  item.tokens = ids;
  item.logits = all ? ForwardItem::Logits::All : ForwardItem::Logits::Last;
  std::vector<std::vector<float>> logits;
  forward.run(std::span<const ForwardItem>(&item, 1), logits);

  nlohmann::json rows = nlohmann::json::array();
  const size_t V = static_cast<size_t>(c.vocab_size);
  for (size_t r = 0; r * V < logits[0].size(); ++r)
    rows.push_back(std::vector<float>(logits[0].begin() + r * V, logits[0].begin() + (r + 1) * V));
  std::cout << nlohmann::json{{"tokens", ids}, {"logits", rows}}.dump() << "\n";
  return 0;
}

}  // namespace triattn::cli
