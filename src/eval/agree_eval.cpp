#include "eval/agree_eval.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/step.h"
#include "eval/distributions.h"
#include "eval/jsonl.h"
#include "eval/generations.h"
#include "eval/progress.h"

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

  ThreadPool pool(threads);
  Forward forward(model, &pool);
  EngineStep step(forward);
  // n greedy tokens (end-of-generation ignored) of each listed configuration for every
  // prompt, all on one scheduler.
  auto greedy = [&](size_t first_config) {
    std::vector<GenerationJob> jobs;
    for (size_t c = first_config; c < (first_config == 0 ? 1 : C); ++c)
      for (size_t p = 0; p < P; ++p) {
        GenerationJob j;
        j.policies = &configs.at(c);
        j.prompt = ids[p];
        j.options.n_predict = n_tokens;
        j.options.stop_at_eog = false;
        j.sampling.temperature = 0;
        jobs.push_back(std::move(j));
      }
    return run_generations(model, forward, jobs, eval_parallel(C, jobs.size()));
  };

  // Full attention first (configuration 0): its tokens and, per position, its logits.
  const std::vector<GenerateResult> full = greedy(0);
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<ForcedRun> runs;
  for (size_t p = 0; p < P; ++p) {
    AgreeSample& s = results[0].samples[p];
    s.tokens = full[p].tokens;
    s.agreement = 1;
    s.first_divergence = static_cast<int64_t>(s.tokens.size());
    if (s.tokens.empty()) fail("full attention generated nothing for prompt ", p + 1, " (is it as long as the context?)");
    seqs.push_back(std::make_unique<Sequence>(model, configs.at(0)));
    runs.push_back({seqs.back().get(), ids[p], std::span<const int32_t>(s.tokens.data(), s.tokens.size() - 1)});
  }
  std::vector<std::vector<std::vector<float>>> full_logits(P);
  feed_together(step, runs, [&](size_t p, int64_t, std::span<const float> l) {
    full_logits[p].emplace_back(l.begin(), l.end());
  });
  for (size_t p = 0; p < P; ++p) bar.advance();
  if (C < 2) {
    bar.finish();
    return results;
  }

  // Every other configuration: its own greedy tokens, then KL teacher-forced on full's.
  const std::vector<GenerateResult> mine = greedy(1);
  seqs.clear();
  runs.clear();
  std::vector<double> kl((C - 1) * P, 0.0);
  for (size_t c = 1; c < C; ++c)
    for (size_t p = 0; p < P; ++p) {
      const std::vector<int32_t>& ref = results[0].samples[p].tokens;
      AgreeSample& s = results[c].samples[p];
      s.tokens = mine[(c - 1) * P + p].tokens;
      int64_t same = 0;
      s.first_divergence = -1;
      for (size_t i = 0; i < ref.size(); ++i) {
        const bool eq = i < s.tokens.size() && s.tokens[i] == ref[i];
        same += eq;
        if (!eq && s.first_divergence < 0) s.first_divergence = static_cast<int64_t>(i);
      }
      if (s.first_divergence < 0) s.first_divergence = static_cast<int64_t>(ref.size());
      s.agreement = ref.empty() ? 1 : static_cast<double>(same) / static_cast<double>(ref.size());
      seqs.push_back(std::make_unique<Sequence>(model, configs.at(c)));
      runs.push_back({seqs.back().get(), ids[p], std::span<const int32_t>(ref.data(), ref.size() - 1)});
    }
  feed_together(step, runs, [&](size_t r, int64_t i, std::span<const float> l) {
    kl[r] += kl_divergence(full_logits[r % P][static_cast<size_t>(i + 1)], l);
  });
  for (size_t c = 1; c < C; ++c)
    for (size_t p = 0; p < P; ++p) {
      results[c].samples[p].mean_kl =
          kl[(c - 1) * P + p] / static_cast<double>(results[0].samples[p].tokens.size());
      bar.advance();
    }
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
