#pragma once
// `triattn eval ppl`: teacher-forced perplexity under eviction, by the evaluation protocol (docs/design.md)
// (so figures compare across tools): tokens = BOS + text (special tokens not parsed), cut to
// the context or max_tokens; fed one at a time; the logits after token t give the NLL of
// token t+1; before an append that would take any (layer, KV head) past B + β the cache is
// pruned to B (the runtime's own trigger, Sequence); ppl = exp(mean NLL over len−1).
#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_config.h"
#include "eval/report.h"
#include "model/model.h"

namespace triattn::eval {

// BOS (when the vocabulary has one) + the text's tokens, cut to the first `limit` tokens
// (limit <= 0: no cut). Error when fewer than 2 tokens remain (nothing to predict).
std::vector<int32_t> ppl_tokens(const Tokenizer& tok, const std::string& text, int64_t limit);

struct PplResult {
  EvalConfig config;
  double nll_sum = 0;
  int64_t predictions = 0;
  int64_t kv_peak_tokens = 0;
  int64_t prune_events = 0;
  double mean_nll() const { return predictions > 0 ? nll_sum / static_cast<double>(predictions) : 0; }
  double ppl() const;
};

// Every configuration over the same tokens, in parallel on `threads` (0 = all cores).
std::vector<PplResult> run_ppl(const Model& model, const ConfigFactories& configs, const std::vector<int32_t>& tokens,
                               int threads, bool progress);

// results.json (settings, per configuration: ppl, mean NLL, predictions, KV peak, prune
// events), the table and ppl_vs_budget.svg.
TaskReport ppl_report(const std::vector<PplResult>& results, const nlohmann::json& run_info);

}  // namespace triattn::eval
