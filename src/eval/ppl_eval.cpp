#include "eval/ppl_eval.h"

#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/step.h"
#include "eval/distributions.h"
#include "eval/progress.h"

namespace triattn::eval {

double PplResult::ppl() const { return std::exp(mean_nll()); }

std::vector<int32_t> ppl_tokens(const Tokenizer& tok, const std::string& text, int64_t limit) {
  std::vector<int32_t> ids;
  if (tok.bos_id() >= 0) ids.push_back(tok.bos_id());
  const std::vector<int32_t> body = tok.encode(text, /*add_bos=*/false, /*parse_special=*/false);
  ids.insert(ids.end(), body.begin(), body.end());
  if (limit > 0 && static_cast<int64_t>(ids.size()) > limit) ids.resize(static_cast<size_t>(limit));
  if (ids.size() < 2) fail("the text gives ", ids.size(), " token(s): perplexity needs at least 2");
  return ids;
}

std::vector<PplResult> run_ppl(const Model& model, const ConfigFactories& configs, const std::vector<int32_t>& tokens,
                               int threads, bool progress) {
  const size_t C = configs.size();
  std::vector<PplResult> results(C);
  Progress bar("ppl", static_cast<int64_t>(C * tokens.size()), progress);
  // Every configuration teacher-forced together: one weight pass per token for all of them.
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<ForcedRun> runs;
  for (size_t c = 0; c < C; ++c) {
    seqs.push_back(std::make_unique<Sequence>(model, configs.at(c)));
    runs.push_back({seqs.back().get(), {}, tokens});
    results[c].config = configs.configs()[c];
  }
  ThreadPool pool(threads);
  Forward forward(model, &pool);
  EngineStep step(forward);
  // After token i comes the prediction of token i+1; the last token predicts nothing.
  feed_together(step, runs, [&](size_t c, int64_t i, std::span<const float> logits) {
    if (static_cast<size_t>(i) + 1 < tokens.size()) {
      results[c].nll_sum += nll_of(logits, tokens[static_cast<size_t>(i) + 1]);
      ++results[c].predictions;
    }
    bar.advance();
  });
  for (size_t c = 0; c < C; ++c) {
    seqs[c]->update_stats();
    results[c].kv_peak_tokens = seqs[c]->stats().kv_peak_tokens;
    results[c].prune_events = seqs[c]->stats().prune_events;
  }
  bar.finish();
  return results;
}

TaskReport ppl_report(const std::vector<PplResult>& results, const nlohmann::json& run_info) {
  TaskReport rep;
  rep.json = run_info;
  rep.json["task"] = "ppl";
  rep.json["results"] = nlohmann::json::array();
  rep.table.columns = {"policy", "budget", "ppl", "mean NLL", "vs full", "KV peak", "prunes"};
  std::vector<double> ppls;
  std::vector<EvalConfig> cfgs;
  const double full = results.empty() ? NAN : results.front().ppl();  // the reference (make_configs)
  for (const PplResult& r : results) {
    rep.json["results"].push_back({{"policy", r.config.policy_label()},
                                   {"budget", r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json()},
                                   {"ppl", r.ppl()},
                                   {"mean_nll", r.mean_nll()},
                                   {"predictions", r.predictions},
                                   {"kv_peak_tokens", r.kv_peak_tokens},
                                   {"prune_events", r.prune_events}});
    rep.table.rows.push_back({r.config.policy_label(), r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json("-"),
                              r.ppl(), r.mean_nll(), r.ppl() / full, r.kv_peak_tokens, r.prune_events});
    ppls.push_back(r.ppl());
    cfgs.push_back(r.config);
  }
  rep.plots.emplace_back("ppl_vs_budget.svg", budget_plot("Perplexity under KV eviction", "perplexity", cfgs, ppls));
  return rep;
}

}  // namespace triattn::eval
