#include "eval/needle_eval.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "eval/jsonl.h"
#include "eval/generations.h"
#include "eval/progress.h"

namespace triattn::eval {

std::vector<NeedleItem> read_needles(const std::string& path) {
  std::vector<NeedleItem> out;
  for (const JsonlRecord& r : read_jsonl(path)) {
    NeedleItem it;
    it.line = r.line;
    it.text = string_field(path, r, "text");
    it.answer = string_field(path, r, "answer");
    if (it.answer.empty()) fail(path, ":", r.line, ": field 'answer' is empty");
    const size_t at = it.text.find(it.answer);
    it.depth = at == std::string::npos ? -1 : static_cast<double>(at) / static_cast<double>(std::max<size_t>(1, it.text.size()));
    out.push_back(std::move(it));
  }
  return out;
}

void check_needle_turns(const NeedleTurns& t) {
  if (t.turns != 1 && t.turns != 2)
    fail("--turns ", t.turns, ": 1 (the prompt whole) or 2 (the document, then the question in a second turn)");
  if (t.gen < 0) fail("--gen must be >= 0, got ", t.gen);
  if (t.turns == 1 && t.gen != 0)
    fail("--gen ", t.gen, " needs --turns 2 (it is what is generated between the document and the question)");
}

std::pair<std::string, std::string> split_needle_turns(const NeedleItem& item) {
  const size_t nl = item.text.rfind('\n');
  if (nl == std::string::npos)
    fail("needle item on line ", item.line, ": --turns 2 splits the prompt at its last line, but it has no line break");
  if (nl + 1 == item.text.size())
    fail("needle item on line ", item.line, ": --turns 2 splits the prompt at its last line, but it ends with a line "
         "break (no question after it)");
  return {item.text.substr(0, nl + 1), item.text.substr(nl + 1)};
}

bool needle_correct(const std::string& continuation, const std::string& answer) {
  const size_t start = continuation.find_first_not_of(" \t\n");
  if (start == std::string::npos) return false;
  return continuation.compare(start, answer.size(), answer) == 0;
}

double NeedleResult::accuracy() const {
  if (correct.empty()) return NAN;
  return static_cast<double>(std::count(correct.begin(), correct.end(), true)) / static_cast<double>(correct.size());
}

int64_t NeedleResult::max_kv_peak() const {
  return kv_peak.empty() ? 0 : *std::max_element(kv_peak.begin(), kv_peak.end());
}

double NeedleResult::accuracy_in_quarter(const std::vector<NeedleItem>& items, int q) const {
  int64_t n = 0, ok = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].depth < 0) continue;
    if (std::min(3, static_cast<int>(items[i].depth * 4)) != q) continue;
    ++n;
    ok += correct[i];
  }
  return n ? static_cast<double>(ok) / static_cast<double>(n) : NAN;
}

std::vector<NeedleResult> run_needle(const Model& model, const ConfigFactories& configs,
                                     const std::vector<NeedleItem>& items, int threads, bool progress,
                                     const NeedleTurns& turns) {
  check_needle_turns(turns);
  const size_t C = configs.size(), N = items.size();
  const Tokenizer& tok = model.tokenizer();
  // Per item: the first turn's prompt (BOS + the whole text, or the document), the question
  // (turns 2), the answer's token count.
  std::vector<std::vector<int32_t>> prompts(N), questions(N);
  std::vector<int64_t> answer_tokens(N);
  for (size_t i = 0; i < N; ++i) {
    if (turns.turns == 2) {
      const auto [document, question] = split_needle_turns(items[i]);
      prompts[i] = tok.encode(document, tok.add_bos_default());
      questions[i] = tok.encode(question, false);
    } else {
      prompts[i] = tok.encode(items[i].text, tok.add_bos_default());
    }
    answer_tokens[i] = static_cast<int64_t>(tok.encode(items[i].answer, false).size());
  }
  std::vector<NeedleResult> results(C);
  for (size_t c = 0; c < C; ++c) {
    results[c].config = configs.configs()[c];
    results[c].outputs.resize(N);
    if (turns.turns == 2) {
      results[c].first_outputs.resize(N);
      results[c].first_tokens.resize(N);
    }
    results[c].correct.resize(N);
    results[c].kv_peak.resize(N);
  }
  Progress bar("needle", static_cast<int64_t>(C * N), progress);
  std::vector<GenerationJob> jobs(C * N);
  for (size_t c = 0; c < C; ++c)
    for (size_t i = 0; i < N; ++i) {
      GenerationJob& j = jobs[c * N + i];
      j.policies = &configs.at(c);
      j.prompt = prompts[i];
      j.sampling.temperature = 0;
      GenerateOptions answer;
      answer.n_predict = answer_tokens[i] + 4;
      if (turns.turns == 2) {
        j.options.n_predict = turns.gen;
        j.options.stop_at_eog = false;  // exactly gen tokens
        j.follow_ups.push_back({questions[i], answer});
      } else {
        j.options = answer;
      }
    }
  ThreadPool pool(threads);
  Forward forward(model, &pool);
  const std::vector<std::vector<GenerateResult>> out =
      run_conversations(model, forward, jobs, eval_parallel(C, jobs.size()), [&](size_t) { bar.advance(); });
  for (size_t c = 0; c < C; ++c)
    for (size_t i = 0; i < N; ++i) {
      const std::vector<GenerateResult>& conv = out[c * N + i];
      const GenerateResult& g = conv.back();
      results[c].outputs[i] = g.text;
      results[c].correct[i] = needle_correct(g.text, items[i].answer);
      // The most any turn held (the cache's peak spans the sequence's life).
      for (const GenerateResult& t : conv) results[c].kv_peak[i] = std::max(results[c].kv_peak[i], t.stats.kv_peak_tokens);
      if (turns.turns == 2) {
        results[c].first_outputs[i] = conv.front().text;
        results[c].first_tokens[i] = static_cast<int64_t>(conv.front().tokens.size());
      }
    }
  bar.finish();
  return results;
}

TaskReport needle_report(const std::vector<NeedleResult>& results, const std::vector<NeedleItem>& items,
                         const nlohmann::json& run_info) {
  TaskReport rep;
  rep.json = run_info;
  rep.json["task"] = "needle";
  rep.json["items"] = items.size();
  rep.json["results"] = nlohmann::json::array();
  // KV peak: the most tokens any (layer, KV head) held over every item, long prompts' prefill
  // included (at most B + β for a pruning policy: the protocol's memory bound).
  rep.table.columns = {"policy", "budget", "accuracy", "depth 0-25%", "25-50%", "50-75%", "75-100%", "KV peak"};
  std::vector<double> acc;
  std::vector<EvalConfig> cfgs;
  auto or_null = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  for (const NeedleResult& r : results) {
    nlohmann::json samples = nlohmann::json::array(), by_depth = nlohmann::json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      samples.push_back({{"line", items[i].line}, {"answer", items[i].answer},
                         {"depth", items[i].depth < 0 ? nlohmann::json() : nlohmann::json(items[i].depth)},
                         {"output", r.outputs[i]}, {"correct", static_cast<bool>(r.correct[i])},
                         {"kv_peak_tokens", r.kv_peak[i]}});
      if (!r.first_outputs.empty()) {
        samples.back()["first_turn_output"] = r.first_outputs[i];
        samples.back()["first_turn_tokens"] = r.first_tokens[i];
      }
    }
    std::vector<nlohmann::json> row = {r.config.policy_label(),
                                       r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json("-"),
                                       r.accuracy()};
    for (int q = 0; q < 4; ++q) {
      by_depth.push_back(or_null(r.accuracy_in_quarter(items, q)));
      row.push_back(or_null(r.accuracy_in_quarter(items, q)));
    }
    row.push_back(r.max_kv_peak());
    rep.json["results"].push_back({{"policy", r.config.policy_label()},
                                   {"budget", r.config.prunes() ? nlohmann::json(r.config.budget) : nlohmann::json()},
                                   {"accuracy", r.accuracy()},
                                   {"accuracy_by_depth_quarter", by_depth},
                                   {"kv_peak_tokens", r.max_kv_peak()},
                                   {"samples", samples}});
    rep.table.rows.push_back(std::move(row));
    acc.push_back(r.accuracy());
    cfgs.push_back(r.config);
  }
  std::string title = "Needle retrieval accuracy";
  if (run_info.value("turns", 1) == 2)
    title += " (question in turn 2, after " + std::to_string(run_info.value("gen", int64_t{0})) + " generated tokens)";
  rep.plots.emplace_back("needle_vs_budget.svg", budget_plot(title, "exact match", cfgs, acc));
  return rep;
}

}  // namespace triattn::eval
