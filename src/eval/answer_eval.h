#pragma once
// The scored-answer evaluations (`eval dfs`, `eval math`): problems with one exact answer,
// a reply per configuration × problem × sample (seed), a scorer, accuracy averaged over the
// samples; overall and per group (dfs: the step count).
#include <functional>
#include <string>
#include <vector>

#include "eval/completion_backend.h"
#include "eval/report.h"

namespace triattn::eval {

struct ScoredProblem {
  std::string prompt, answer;
  std::string group;        // dfs: "6" (steps); math: ""
  nlohmann::json meta;      // kept in results.json (dfs: graph size; math: the source line)
};

using Scorer = std::function<bool(const std::string& reply, const std::string& answer)>;

struct AnswerRunOptions {
  int64_t max_tokens = 1024;
  SamplerParams sampling;  // sample k uses seed sampling.seed + k
  int samples = 1;         // K
  int threads = 0;         // engine threads, or requests in flight against --url
  bool progress = true;
};

struct AnswerResult {
  EvalConfig config;
  // [problem][sample]
  std::vector<std::vector<Completion>> replies;
  std::vector<std::vector<bool>> correct;
  double accuracy() const;  // mean over problems and samples
  double accuracy_in(const std::vector<ScoredProblem>& problems, const std::string& group) const;
};

std::vector<AnswerResult> run_answers(const CompletionBackend& backend, const std::vector<ScoredProblem>& problems,
                                      const Scorer& scorer, const AnswerRunOptions& options, const std::string& label);

// task: "dfs" or "math"; x_label for the per-group plot (dfs: "recursion steps k"), empty for
// none.
TaskReport answer_report(const std::string& task, const std::vector<AnswerResult>& results,
                         const std::vector<ScoredProblem>& problems, const nlohmann::json& run_info,
                         const std::string& group_label);

}  // namespace triattn::eval
