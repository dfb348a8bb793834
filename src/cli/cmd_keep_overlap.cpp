// triattn keep-overlap (dev): how far --stats auto's keep sets are from a statistics file's.
// A text is fed one token at a time (eval ppl's protocol) under triattention --stats auto; at
// every pruning event the plan a policy with the file's statistics makes on the same cache is
// computed beside it, and the fraction of the file's kept rows that auto keeps too is printed.
#include <cstdio>

#include "calib/stats_file.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "engine/kv_setup.h"
#include "engine/sequence.h"
#include "engine/step.h"
#include "eval/ppl_eval.h"
#include "kv/online_stats.h"
#include "model/forward.h"

namespace triattn::cli {

namespace {

// Σ over streams |auto ∩ file| / Σ |file| (both lists increasing).
double keep_overlap(const KeepPlan& online, const KeepPlan& file) {
  int64_t both = 0, total = 0;
  for (size_t s = 0; s < file.keep.size(); ++s) {
    const auto& a = online.keep[s];
    const auto& f = file.keep[s];
    total += static_cast<int64_t>(f.size());
    for (size_t i = 0, j = 0; i < a.size() && j < f.size();) {
      if (a[i] == f[j]) ++both, ++i, ++j;
      else if (a[i] < f[j]) ++i;
      else ++j;
    }
  }
  return total ? static_cast<double>(both) / static_cast<double>(total) : 1.0;
}

}  // namespace

int cmd_keep_overlap(const std::vector<std::string>& args) {
  CLI::App app{"Compare --stats auto's keep sets with a statistics file's at each pruning event (for checks)",
               "triattn keep-overlap"};
  std::string model_path, stats_path, text_path;
  KvSettings kv;
  kv.policy = "triattention";
  int64_t max_tokens = 0;
  int threads = 0;
  app.add_option("-m,--model", model_path, "model path")->required();
  app.add_option("--stats", stats_path, "the statistics file to compare with")->required();
  app.add_option("--text", text_path, "the text to feed (BOS + text, cut to the context)")->required();
  app.add_option("--max-tokens", max_tokens, "cut the tokens to N (0 = the model's context)")->capture_default_str();
  app.add_option("--kv-budget", kv.params.budget, "B")->capture_default_str();
  app.add_option("--divide-length", kv.params.divide_length, "β")->capture_default_str();
  app.add_option("--window", kv.params.window, "W")->capture_default_str();
  app.add_option("--auto-stats-min", kv.params.auto_stats_min, "as generate's")->capture_default_str();
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;

  auto model = load_model(model_path, {.threads = threads});
  std::vector<std::string> warnings;
  PolicyParams file_params = kv.params;
  file_params.stats = load_stats(stats_path, *model, &warnings);
  file_params.auto_stats_min = PolicyParams{}.auto_stats_min;
  print_warnings(warnings);
  kv.stats_path = std::string(kStatsAuto);
  const PolicyFactory online(*model, kv);
  auto file_policy = make_kv_policy("triattention", file_params, attention_geometry(model->config()));
  const int64_t ctx = model->config().context_length;
  const std::vector<int32_t> tokens =
      eval::ppl_tokens(model->tokenizer(), read_text_file(text_path), max_tokens > 0 ? max_tokens : ctx);

  Sequence seq(*model, online);
  Forward fwd(*model, nullptr);
  EngineStep step(fwd);
  double sum = 0;
  int events = 0;
  std::printf("event\tposition\ttokens_seen\toverlap\n");
  for (size_t t = 0; t < tokens.size(); ++t) {
    // The plan the sequence is about to apply (deterministic: feeding makes it again).
    if (auto plan = seq.policy().plan_before_append(seq.cache(), 1, {}, nullptr)) {
      const auto file_plan = file_policy->plan_before_append(seq.cache(), 1, {}, nullptr);
      if (!file_plan) fail("keep-overlap: the file's policy did not prune where auto did");
      const double o = keep_overlap(*plan, *file_plan);
      std::printf("%d\t%zu\t%lld\t%.4f\n", events, t, static_cast<long long>(seq.policy().online_stats()->tokens()),
                  o);
      sum += o;
      ++events;
    }
    feed(step, seq, std::span(tokens).subspan(t, 1));
  }
  std::printf("mean overlap over %d events: %.4f\n", events, events ? sum / events : 1.0);
  return 0;
}

}  // namespace triattn::cli
