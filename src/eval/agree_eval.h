#pragma once
// `triattn eval agree`: how closely each configuration follows full attention on the same
// prompts. Per prompt, full attention generates n tokens greedily (end-of-generation tokens
// do not stop it, so every run has the same length); each configuration generates its own
// n greedy tokens, compared position by position with full's (fraction identical, index of
// the first difference, n when none); and, teacher-forced on full's tokens (prompt, then
// full's tokens fed one at a time, pruning as the runtime does), the mean over the n
// positions of KL(full's next-token distribution || the configuration's).
#include <string>
#include <vector>

#include "eval/eval_config.h"
#include "eval/report.h"

namespace triattn::eval {

// A prompt file: JSONL (.jsonl: "prompt" or "text" field per line) or plain text, one
// prompt per non-empty line. Error naming the file (and line) otherwise.
std::vector<std::string> read_prompts(const std::string& path);

struct AgreeSample {
  std::vector<int32_t> tokens;  // the configuration's greedy tokens
  double agreement = 0;         // fraction of positions equal to full's
  int64_t first_divergence = 0;
  double mean_kl = 0;
};

struct AgreeResult {
  EvalConfig config;
  std::vector<AgreeSample> samples;  // per prompt
  double agreement() const;
  double first_divergence() const;
  double mean_kl() const;
};

std::vector<AgreeResult> run_agree(const Model& model, const ConfigFactories& configs,
                                   const std::vector<std::string>& prompts, int64_t n_tokens, int threads,
                                   bool progress);

TaskReport agree_report(const std::vector<AgreeResult>& results, const nlohmann::json& run_info);

}  // namespace triattn::eval
