// `triattn eval ppl` on stories260K: with a budget at least the text length every
// registered policy gives exactly full attention's perplexity (nothing is evicted); with a
// small budget the evicting ones prune, stay within B + beta, and differ. The outputs
// (results.json, results.csv, ppl_vs_budget.svg, the Markdown table) are all there.
#include <gtest/gtest.h>

#include <algorithm>

#include "eval/eval_cli_util.h"
#include "kv/policy.h"

namespace triattn::test {
namespace {

class EvalPpl : public StoriesStats {};

TEST_F(EvalPpl, BudgetCoveringTheTextEqualsFullForEveryPolicy) {
  ScratchDir out;
  const RunResult r = run_triattn({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "all", "--stats",
                                   stats_, "--budgets", "200,300", "--window", "0", "--max-tokens", "150", "-t", "2",
                                   "-o", out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out.path());
  EXPECT_EQ(j.at("tokens"), 150);
  const double full = result_of(j, "full").at("ppl");
  EXPECT_GT(full, 1.0);
  EXPECT_LT(full, 100.0) << "a coherent story should be predictable to this model";
  EXPECT_EQ(result_of(j, "full").at("predictions"), 149);
  size_t checked = 0;
  for (const PolicyInfo& p : kv_policy_list()) {
    if (!p.prunes) continue;
    for (int64_t b : {200, 300}) {
      const auto& e = result_of(j, p.name, b);
      EXPECT_EQ(e.at("ppl").get<double>(), full) << p.name << "@" << b << " must equal full exactly";
      EXPECT_EQ(e.at("prune_events"), 0) << p.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 2u);
  // The table on stdout and the files.
  EXPECT_NE(r.out.find("| policy | budget | ppl |"), std::string::npos) << r.out;
  const std::string csv = slurp(out / "results.csv");
  EXPECT_EQ(csv.rfind("policy,budget,ppl,", 0), 0u) << csv;
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), 2 + checked) << csv;
  const std::string svg = slurp(out / "ppl_vs_budget.svg");
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("triattention"), std::string::npos);
}

TEST_F(EvalPpl, SmallBudgetPrunesWithinBound) {
  ScratchDir out;
  const RunResult r = run_triattn({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "all", "--stats",
                                   stats_, "--budgets", "16", "--divide-length", "8", "--window", "0", "--max-tokens",
                                   "120", "-t", "2", "-q", "-o", out.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(out.path());
  const double full = result_of(j, "full").at("ppl");
  EXPECT_EQ(j.at("settings").at("window"), 0);
  for (const PolicyInfo& p : kv_policy_list()) {
    if (!p.prunes) continue;
    const auto& e = result_of(j, p.name, 16);
    EXPECT_GT(e.at("prune_events").get<int64_t>(), 0) << p.name;
    EXPECT_LE(e.at("kv_peak_tokens").get<int64_t>(), 16 + 8) << p.name << " holds at most B + beta";
    EXPECT_NE(e.at("ppl").get<double>(), full) << p.name << " evicted, so its perplexity moves";
  }
  EXPECT_EQ(result_of(j, "full").at("kv_peak_tokens"), 120);
}

TEST_F(EvalPpl, ClearErrors) {
  ScratchDir out;
  const std::string o = out.path().string();
  auto err = [&](std::vector<std::string> args) {
    const RunResult r = run_triattn(args);
    EXPECT_EQ(r.rc, 1) << r.err;
    return r.err;
  };
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", "/nonexistent/t.txt", "--policies", "full", "-o", o})
                .find("/nonexistent/t.txt"),
            std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "full,bogus", "-o", o})
                .find("unknown KV policy 'bogus'"),
            std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "triattention", "--stats", stats_,
                 "--budgets", "0", "-o", o})
                .find("at least 1"),
            std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "triattention", "--budgets", "64",
                 "-o", o})
                .find("calibrate"),
            std::string::npos)
      << "triattention without --stats says how to get them";
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--policies", "triattention", "--stats", stats_,
                 "-o", o})
                .find("--budgets"),
            std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--bogus-flag", "-o", o}).find("--bogus-flag"),
            std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText}).find("--output"), std::string::npos);
  EXPECT_NE(err({"eval", "nosuchtask"}).find("unknown task 'nosuchtask'"), std::string::npos);
  EXPECT_NE(err({"eval"}).find("give a task"), std::string::npos);
  EXPECT_NE(err({"eval", "ppl", "-m", kStories, "--text", kEvalText, "--pruning-mode", "diagonal", "-o", o})
                .find("diagonal"),
            std::string::npos);
  EXPECT_EQ(run_triattn({"eval", "ppl", "--help"}).rc, 0);
}

}  // namespace
}  // namespace triattn::test
