// triattn scores (dev): the TriAttention score S_h(k) of every cached key after a prompt, for
// every layer / KV head / query head, at p = prompt length. The prompt runs with full
// attention (nothing evicted), so the reference test can recompute every score independently.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "calib/stats_file.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/kv_setup.h"
#include "kv/triattention_score.h"
#include "model/forward.h"

namespace triattn::cli {

int cmd_scores(const std::vector<std::string>& args) {
  CLI::App app{"Print TriAttention key scores after a prompt (for checks)", "triattn scores"};
  std::string model_path, stats_path, prompt, kv_type = "f32";
  bool json = false;
  int threads = 0, max_offset_log2 = 16;
  app.add_option("-m,--model", model_path, "model path")->required();
  app.add_option("--stats", stats_path, "stats file from `triattn calibrate` (or the official .pt)")->required();
  app.add_option("-p,--prompt", prompt, "prompt text (tokenized with BOS when the model asks)")->required();
  app.add_flag("--json", json, "print one JSON object instead of a table");
  app.add_option("--max-offset-log2", max_offset_log2, "offsets D = {1, 2, 4, ..., 2^N}")->capture_default_str();
  app.add_option("--kv-type", kv_type, "KV cache type: f32, f16 or q8_0")->capture_default_str();
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;

  const DType cache_type = parse_kv_type(kv_type);
  auto model = load_model(model_path, {.threads = threads});
  const ModelConfig& c = model->config();
  std::vector<std::string> warnings;
  auto stats = load_stats(stats_path, *model, &warnings);
  print_warnings(warnings);
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> ids = tok.encode(prompt, tok.add_bos_default());
  if (ids.empty()) fail("the prompt is empty");

  const FreshRun run = run_fresh(*model, ids, cache_type, ForwardItem::Logits::None, threads);
  const KvCache& cache = run.seq->cache();
  const AttentionGeometry g = attention_geometry(c);
  TriAttentionScorer scorer(stats, g, max_offset_log2);
  const int64_t p = cache.n_processed();
  scorer.prepare(p);

  const int G = scorer.group();
  nlohmann::json positions = nlohmann::json::array(), scores = nlohmann::json::array();
  for (int l = 0; l < c.n_layers; ++l) {
    nlohmann::json lp = nlohmann::json::array(), ls = nlohmann::json::array();
    for (int h = 0; h < c.n_kv_heads; ++h) {
      const int64_t n = cache.size(l, h);
      std::vector<int32_t> rows(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) rows[i] = static_cast<int32_t>(i);
      std::vector<float> out(static_cast<size_t>(G * n));
      scorer.score_stream(cache, l, h, rows, out.data());
      lp.push_back(std::vector<int32_t>(cache.positions(l, h), cache.positions(l, h) + n));
      for (int j = 0; j < G; ++j) ls.push_back(std::vector<float>(out.begin() + j * n, out.begin() + (j + 1) * n));
    }
    positions.push_back(std::move(lp));
    scores.push_back(std::move(ls));
  }

  if (json) {
    std::cout << nlohmann::json{{"p", p},
                                {"tokens", ids},
                                {"max_offset_log2", max_offset_log2},
                                {"n_layers", c.n_layers},
                                {"n_heads", c.n_heads},
                                {"n_kv_heads", c.n_kv_heads},
                                {"positions", positions},
                                {"scores", scores}}
                     .dump()
              << "\n";
    return 0;
  }
  std::printf("p = %lld, %d layers, %d query heads over %d KV heads, offsets 1..2^%d\n", static_cast<long long>(p),
              c.n_layers, c.n_heads, c.n_kv_heads, max_offset_log2);
  for (int l = 0; l < c.n_layers; ++l)
    for (int qh = 0; qh < c.n_heads; ++qh) {
      const int kh = qh / G;
      std::printf("layer %d kv_head %d q_head %d:", l, kh, qh);
      const auto& pos = positions[l][kh];
      const auto& s = scores[l][qh];
      for (size_t i = 0; i < s.size(); ++i) std::printf(" %d:%.5g", pos[i].get<int>(), s[i].get<float>());
      std::printf("\n");
    }
  return 0;
}

}  // namespace triattn::cli
