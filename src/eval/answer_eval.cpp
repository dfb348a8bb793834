#include "eval/answer_eval.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "eval/progress.h"

namespace triattn::eval {

double AnswerResult::accuracy() const {
  int64_t n = 0, ok = 0;
  for (const auto& p : correct)
    for (bool c : p) ++n, ok += c;
  return n ? static_cast<double>(ok) / static_cast<double>(n) : NAN;
}

double AnswerResult::accuracy_in(const std::vector<ScoredProblem>& problems, const std::string& group) const {
  int64_t n = 0, ok = 0;
  for (size_t i = 0; i < problems.size(); ++i)
    if (problems[i].group == group)
      for (bool c : correct[i]) ++n, ok += c;
  return n ? static_cast<double>(ok) / static_cast<double>(n) : NAN;
}

std::vector<AnswerResult> run_answers(const CompletionBackend& backend, const std::vector<ScoredProblem>& problems,
                                      const Scorer& scorer, const AnswerRunOptions& o, const std::string& label) {
  if (o.samples < 1) fail("--samples must be at least 1");
  if (o.max_tokens < 1) fail("--max-tokens must be at least 1");
  const size_t C = backend.configs().size(), P = problems.size(), K = static_cast<size_t>(o.samples);
  std::vector<AnswerResult> results(C);
  for (size_t c = 0; c < C; ++c) {
    results[c].config = backend.configs()[c];
    results[c].replies.assign(P, std::vector<Completion>(K));
    results[c].correct.assign(P, std::vector<bool>(K, false));
  }
  Progress bar(label, static_cast<int64_t>(C * P * K), o.progress);
  std::vector<CompletionJob> jobs(C * P * K);
  for (size_t c = 0; c < C; ++c)
    for (size_t p = 0; p < P; ++p)
      for (size_t k = 0; k < K; ++k) {
        CompletionJob& j = jobs[(c * P + p) * K + k];
        j.config = c;
        j.prompt = problems[p].prompt;
        j.max_tokens = o.max_tokens;
        j.sampling = o.sampling;
        j.sampling.seed = o.sampling.seed + k;
      }
  std::vector<Completion> replies = backend.complete_all(jobs, o.threads, [&] { bar.advance(); });
  for (size_t c = 0; c < C; ++c)
    for (size_t p = 0; p < P; ++p)
      for (size_t k = 0; k < K; ++k) {
        Completion& r = replies[(c * P + p) * K + k];
        results[c].correct[p][k] = scorer(r.text, problems[p].answer);
        results[c].replies[p][k] = std::move(r);
      }
  bar.finish();
  return results;
}

TaskReport answer_report(const std::string& task, const std::vector<AnswerResult>& results,
                         const std::vector<ScoredProblem>& problems, const nlohmann::json& run_info,
                         const std::string& group_label) {
  TaskReport rep;
  rep.json = run_info;
  rep.json["task"] = task;
  rep.json["problems"] = problems.size();
  rep.json["results"] = nlohmann::json::array();
  std::vector<std::string> groups;
  for (const ScoredProblem& p : problems)
    if (!p.group.empty() && std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  rep.table.columns = {"policy", "budget", "accuracy"};
  for (const std::string& g : groups) rep.table.columns.push_back(group_label + " " + g);
  std::vector<double> acc;
  std::vector<EvalConfig> cfgs;
  LinePlot by_group;
  by_group.title = task + " accuracy by " + group_label;
  by_group.x_label = group_label;
  by_group.y_label = "accuracy";
  for (const AnswerResult& r : results) {
    const nlohmann::json budget = r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json();
    nlohmann::json samples = nlohmann::json::array(), per_group = nlohmann::json::object();
    for (size_t p = 0; p < problems.size(); ++p) {
      nlohmann::json replies = nlohmann::json::array();
      for (size_t k = 0; k < r.replies[p].size(); ++k)
        replies.push_back({{"text", r.replies[p][k].text}, {"tokens", r.replies[p][k].tokens},
                           {"finish_reason", r.replies[p][k].finish_reason}, {"correct", static_cast<bool>(r.correct[p][k])}});
      samples.push_back({{"answer", problems[p].answer}, {"group", problems[p].group}, {"meta", problems[p].meta},
                         {"replies", replies}});
    }
    std::vector<nlohmann::json> row = {r.config.policy_label(), r.config.prunes() ? budget : nlohmann::json("-"), r.accuracy()};
    PlotSeries s{r.config.label(), {}};
    for (const std::string& g : groups) {
      const double a = r.accuracy_in(problems, g);
      per_group[g] = a;
      row.push_back(a);
      s.points.emplace_back(std::stod(g), a);
    }
    by_group.series.push_back(std::move(s));
    rep.json["results"].push_back({{"policy", r.config.policy_label()}, {"budget", budget}, {"accuracy", r.accuracy()},
                                   {"accuracy_by_" + (group_label.empty() ? std::string("group") : group_label), per_group},
                                   {"samples", samples}});
    rep.table.rows.push_back(std::move(row));
    acc.push_back(r.accuracy());
    cfgs.push_back(r.config);
  }
  rep.plots.emplace_back(task + "_vs_budget.svg", budget_plot(task + " accuracy", "accuracy", cfgs, acc));
  if (!groups.empty()) rep.plots.emplace_back(task + "_by_" + group_label + ".svg", by_group);
  return rep;
}

}  // namespace triattn::eval
