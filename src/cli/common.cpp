#include "cli/common.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/error.h"

namespace triattn::cli {

int parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    fail(app.get_name(), ": ", e.what(), " (see --help)");
  }
  return -1;
}

void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("-t,--threads", threads, "worker threads (0 = all cores)")->capture_default_str();
}

void add_kv_options(CLI::App& app, KvOptions& kv) {
  KvSettings& s = kv.settings;
  apply_kv_environment(s);
  kv.pruning_mode = std::string(pruning_mode_name(s.params.mode));
  std::string policies;
  for (const PolicyInfo& p : kv_policy_list()) policies += (policies.empty() ? "" : ", ") + p.name;
  app.add_option("--kv-policy", s.policy, "KV cache policy: " + policies)->capture_default_str();
  app.add_option("--kv-budget", s.params.budget, "B: tokens kept per (layer, KV head) [TRIATTN_RUNTIME_KV_BUDGET]")
      ->capture_default_str();
  app.add_option("--divide-length", s.params.divide_length,
                 "beta: prune when the cache would exceed B + beta [TRIATTN_RUNTIME_DIVIDE_LENGTH]")
      ->capture_default_str();
  app.add_option("--window", s.params.window, "W: most recent tokens always kept [TRIATTN_RUNTIME_WINDOW_SIZE]")
      ->capture_default_str();
  app.add_option("--sink", s.params.sink, "S: first tokens always kept")->capture_default_str();
  app.add_flag("--protect-prompt", s.params.protect_prompt, "never evict prompt tokens");
  app.add_option("--pruning-mode", kv.pruning_mode,
                 "per_head, per_layer_per_head, per_layer or global [TRIATTN_RUNTIME_PRUNING_MODE]")
      ->capture_default_str();
  app.add_option("--stats", s.stats_path,
                 "TriAttention statistics (from `triattn calibrate`) [TRIATTN_RUNTIME_SPARSE_STATS_PATH]")
      ->capture_default_str();
  app.add_option("--kv-type", kv.cache_type, "KV cache element type: f16 or f32")->capture_default_str();
  app.add_option("--prefill-chunk", s.prefill_chunk, "most prompt tokens per forward step")->capture_default_str();
}

void finish_kv_options(KvOptions& kv) {
  auto mode = pruning_mode_from_name(kv.pruning_mode);
  if (!mode) fail("--pruning-mode '", kv.pruning_mode, "' is not one of per_head, per_layer_per_head, per_layer, global");
  kv.settings.params.mode = *mode;
  kv.settings.cache_type = parse_kv_type(kv.cache_type);
  if (kv.settings.prefill_chunk <= 0) fail("--prefill-chunk must be positive");
}

void add_sampling_options(CLI::App& app, SamplerParams& s) {
  app.add_option("--temp", s.temperature, "temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens considered by the penalty")->capture_default_str();
  app.add_option("--seed", s.seed, "sampling seed")->capture_default_str();
}

DType parse_kv_type(const std::string& name) {
  auto type = dtype_from_name(name);
  if (!type || (*type != DType::F16 && *type != DType::F32)) fail("--kv-type '", name, "' must be f16 or f32");
  return *type;
}

FreshRun run_fresh(const Model& model, std::span<const int32_t> ids, DType kv_type, ForwardItem::Logits logits,
                   int threads) {
  const ModelConfig& c = model.config();
  FreshRun r{KvCache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, kv_type}, static_cast<int64_t>(ids.size())),
             {}};
  ThreadPool pool(threads);
  Forward forward(model, &pool);
  ForwardItem item;
  item.cache = &r.cache;
  item.tokens = ids;
  item.logits = logits;
  std::vector<std::vector<float>> out;
  forward.run(std::span<const ForwardItem>(&item, 1), out);
  r.logits = std::move(out[0]);
  return r;
}

std::string read_text_file(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int32_t> parse_token_list(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0) fail("token list: '", item, "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) fail("token list is empty");
  return ids;
}

}  // namespace triattn::cli
