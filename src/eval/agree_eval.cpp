#include "eval/agree_eval.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "engine/generate.h"
#include "eval/distributions.h"
#include "eval/jsonl.h"
#include "eval/parallel_runs.h"
#include "eval/progress.h"
#include "eval/teacher_forcing.h"

namespace triattn::eval {

std::vector<std::string> read_prompts(const std::string& path) {
  std::vector<std::string> out;
  if (std::filesystem::path(path).extension() == ".jsonl") {
    for (const JsonlRecord& r : read_jsonl(path))
      out.push_back(string_field(path, r, r.value.contains("prompt") ? "prompt" : "text"));
    return out;
  }
  std::string text = read_file(path), line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) out.push_back(line);
  }
  if (out.empty()) fail(path, ": no prompts (one prompt per non-empty line, or JSONL with a \"prompt\" field)");
  return out;
}

namespace {
template <class F>
double mean_of(const std::vector<AgreeSample>& s, F f) {
  double sum = 0;
  for (const AgreeSample& x : s) sum += f(x);
  return s.empty() ? NAN : sum / static_cast<double>(s.size());
}

std::vector<int32_t> greedy(const Model& model, Forward& forward, const PolicyFactory& f,
                            const std::vector<int32_t>& prompt, int64_t n) {
  SamplerParams sp;
  sp.temperature = 0;
  return generate_fresh(model, forward, f, prompt, n, sp).tokens;
}
}  // namespace

double AgreeResult::agreement() const { return mean_of(samples, [](const AgreeSample& s) { return s.agreement; }); }
double AgreeResult::first_divergence() const {
  return mean_of(samples, [](const AgreeSample& s) { return static_cast<double>(s.first_divergence); });
}
double AgreeResult::mean_kl() const { return mean_of(samples, [](const AgreeSample& s) { return s.mean_kl; }); }

std::vector<AgreeResult> run_agree(const Model& model, const ConfigFactories& configs,
                                   const std::vector<std::string>& prompts, int64_t n_tokens, int threads,
                                   bool progress) {
  if (n_tokens < 1) fail("-n must be at least 1");
  const size_t P = prompts.size(), C = configs.size();
  std::vector<std::vector<int32_t>> ids(P);
  const Tokenizer& tok = model.tokenizer();
  for (size_t p = 0; p < P; ++p) ids[p] = tok.encode(prompts[p], tok.add_bos_default());
  std::vector<AgreeResult> results(C);
  for (size_t c = 0; c < C; ++c) results[c].config = configs.configs()[c], results[c].samples.resize(P);
  Progress bar("agree", static_cast<int64_t>(C * P), progress);

  // Full attention first (configuration 0): its tokens and, per position, its logits.
  std::vector<std::vector<std::vector<float>>> full_logits(P);
  run_parallel(&model, static_cast<int64_t>(P), threads, [&](int64_t job, Forward* fw) {
    const size_t p = static_cast<size_t>(job);
    AgreeSample& s = results[0].samples[p];
    s.tokens = greedy(model, *fw, configs.at(0), ids[p], n_tokens);
    s.agreement = 1;
    s.first_divergence = static_cast<int64_t>(s.tokens.size());
    Sequence seq(model, configs.at(0));
    if (s.tokens.empty()) fail("full attention generated nothing for prompt ", p + 1, " (is it as long as the context?)");
    const std::span<const int32_t> forced(s.tokens.data(), s.tokens.size() - 1);
    feed_one_at_a_time(seq, *fw, ids[p], forced,
                       [&](int64_t, std::span<const float> l) { full_logits[p].emplace_back(l.begin(), l.end()); });
    bar.advance();
  });
  run_parallel(&model, static_cast<int64_t>((C - 1) * P), threads, [&](int64_t job, Forward* fw) {
    const size_t c = 1 + static_cast<size_t>(job) / P, p = static_cast<size_t>(job) % P;
    const std::vector<int32_t>& ref = results[0].samples[p].tokens;
    AgreeSample& s = results[c].samples[p];
    s.tokens = greedy(model, *fw, configs.at(c), ids[p], n_tokens);
    int64_t same = 0;
    s.first_divergence = -1;
    for (size_t i = 0; i < ref.size(); ++i) {
      const bool eq = i < s.tokens.size() && s.tokens[i] == ref[i];
      same += eq;
      if (!eq && s.first_divergence < 0) s.first_divergence = static_cast<int64_t>(i);
    }
    if (s.first_divergence < 0) s.first_divergence = static_cast<int64_t>(ref.size());
    s.agreement = ref.empty() ? 1 : static_cast<double>(same) / static_cast<double>(ref.size());
    Sequence seq(model, configs.at(c));
    double kl = 0;
    const std::span<const int32_t> forced(ref.data(), ref.size() - 1);
    feed_one_at_a_time(seq, *fw, ids[p], forced, [&](int64_t i, std::span<const float> l) {
      kl += kl_divergence(full_logits[p][static_cast<size_t>(i + 1)], l);
    });
    s.mean_kl = kl / static_cast<double>(ref.size());
    bar.advance();
  });
  bar.finish();
  return results;
}

TaskReport agree_report(const std::vector<AgreeResult>& results, const nlohmann::json& run_info) {
  TaskReport rep;
  rep.json = run_info;
  rep.json["task"] = "agree";
  rep.json["results"] = nlohmann::json::array();
  rep.table.columns = {"policy", "budget", "token agreement", "first divergence", "mean KL (nats)"};
  std::vector<double> agree, kl;
  std::vector<EvalConfig> cfgs;
  for (const AgreeResult& r : results) {
    nlohmann::json samples = nlohmann::json::array();
    for (const AgreeSample& s : r.samples)
      samples.push_back({{"agreement", s.agreement}, {"first_divergence", s.first_divergence},
                         {"mean_kl", s.mean_kl}, {"tokens", s.tokens}});
    const nlohmann::json budget = r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json();
    rep.json["results"].push_back({{"policy", r.config.policy_label()}, {"budget", budget}, {"agreement", r.agreement()},
                                   {"first_divergence", r.first_divergence()}, {"mean_kl", r.mean_kl()},
                                   {"samples", samples}});
    rep.table.rows.push_back({r.config.policy_label(), r.config.prunes() ? budget : nlohmann::json("-"), r.agreement(),
                              r.first_divergence(), r.mean_kl()});
    agree.push_back(r.agreement());
    kl.push_back(r.mean_kl());
    cfgs.push_back(r.config);
  }
  rep.plots.emplace_back("agree_vs_budget.svg",
                         budget_plot("Greedy token agreement with full attention", "fraction of tokens", cfgs, agree));
  rep.plots.emplace_back("kl_vs_budget.svg",
                         budget_plot("KL(full || policy), teacher-forced", "mean KL (nats)", cfgs, kl));
  return rep;
}

}  // namespace triattn::eval
