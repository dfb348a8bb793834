// How a generation ends: the context rule (full attention stops at the context, a
// compressing policy may pass it and says so), a protected prompt larger than the budget,
// stop strings, end-of-generation text that is not shown, and the default random seed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli_run.h"
#include "tinystories_stats.h"

namespace triattn::test {
namespace {


class GenerateEndings : public TinyStoriesStats {
 protected:
  // generate --json on the usual prompt (7 tokens with BOS), greedy unless args say otherwise.
  static RunResult run(std::vector<std::string> args) {
    args.insert(args.begin(), {"generate", "-m", kStoriesDir, "-p", "Once upon a time,", "--temp", "0", "--json"});
    return run_triattn(args);
  }
  static nlohmann::json ok_json(const std::vector<std::string>& args) {
    const RunResult r = run(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }
  static std::vector<std::string> tri(std::vector<std::string> more) {
    std::vector<std::string> a = {"--kv-policy", "triattention", "--stats", stats_};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
};

TEST_F(GenerateEndings, FullAttentionStopsAtTheContext) {
  const RunResult r = run({"-n", "100", "--ignore-eos", "--ctx", "20"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["tokens"].size(), 20u - 7u);
  EXPECT_NE(r.err.find("stopped at the context limit (20 tokens)"), std::string::npos) << r.err;
  // Without --ctx the model's own context (512) is the limit: -n 10000000 no longer grows the
  // cache without bound.
  const auto model_ctx = ok_json({"-n", "10000000", "--ignore-eos"});
  EXPECT_EQ(model_ctx["tokens"].size(), 512u - 7u);
  EXPECT_EQ(model_ctx["stats"]["kv_peak_tokens"], 511);  // the last token is not fed
}

TEST_F(GenerateEndings, FullAttentionRefusesAPromptLongerThanTheContext) {
  const RunResult r = run({"-n", "5", "--ctx", "5"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("past its context of 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("compressing --kv-policy"), std::string::npos) << r.err;
}

TEST_F(GenerateEndings, CompressingPolicyPassesTheContextAndSaysSo) {
  const RunResult r = run(tri({"-n", "120", "--ignore-eos", "--ctx", "64", "--kv-budget", "32", "--divide-length",
                               "16", "--window", "8"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].size(), 120u);
  EXPECT_EQ(j["stats"]["kv_peak_tokens"], 48);
  EXPECT_NE(r.err.find("passes 64 tokens, the context limit"), std::string::npos) << r.err;
}

// --protect-prompt with a prompt longer than B: announced, bounded by prompt + W + β, and
// pruned once per β tokens (it used to disable the budget and score at every step).
TEST_F(GenerateEndings, ProtectedPromptLargerThanTheBudgetIsAnnounced) {
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "The cat sat on the mat. ";
  std::vector<std::string> args = {"generate", "-m", kStoriesDir, "-p", prompt, "--temp", "0", "--json", "-n", "100",
                                   "--ignore-eos"};
  for (const std::string& a : tri({"--kv-budget", "32", "--divide-length", "16", "--window", "8", "--protect-prompt"}))
    args.push_back(a);
  const RunResult r = run_triattn(args);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const int64_t p = j["prompt_tokens"];
  ASSERT_GT(p, 32);
  EXPECT_NE(r.err.find("does not fit the KV budget"), std::string::npos) << r.err;
  EXPECT_LE(j["stats"]["kv_peak_tokens"].get<int64_t>(), p + 8 + 16);
  EXPECT_LE(j["stats"]["prune_events"].get<int64_t>(), 100 / 16 + 1);
  EXPECT_GT(j["stats"]["prune_events"].get<int64_t>(), 0);
}

TEST_F(GenerateEndings, StopStringsEndTheTextBeforeThem) {
  const auto all = ok_json({"-n", "60", "--ignore-eos"});
  const std::string text = all["text"];
  ASSERT_GT(text.size(), 60u) << text;
  const std::string stop = text.substr(40, 6);  // ends the text at its first occurrence
  const size_t at = text.find(stop);
  const auto cut = ok_json({"-n", "60", "--ignore-eos", "--stop", "zzz-never", "--stop", stop});
  EXPECT_EQ(cut["text"], text.substr(0, at));
  EXPECT_EQ(cut["finish_reason"], "stop");
  // Streamed text holds the same: nothing past the stop string ever reaches stdout.
  const RunResult streamed = run_triattn({"generate", "-m", kStoriesDir, "-p", "Once upon a time,", "--temp", "0", "-n",
                                          "60", "--ignore-eos", "--stop", stop});
  ASSERT_EQ(streamed.rc, 0) << streamed.err;
  EXPECT_EQ(streamed.out, "Once upon a time," + text.substr(0, at) + "\n");
}

// The model writes its end token's text with ordinary tokens ("<|" "end" "_story" "|>")
// before the real one; neither is text.
TEST_F(GenerateEndings, EndOfGenerationTextIsNotShown) {
  int stopped = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    const auto j = ok_json({"-n", "400", "--temp", "0.8", "--seed", std::to_string(seed)});
    const std::string text = j["text"];
    EXPECT_EQ(text.find("<|end_story|>"), std::string::npos) << "seed " << seed << ": " << text;
    EXPECT_EQ(text.find("<|"), std::string::npos) << "seed " << seed << ": " << text;
    stopped += j["finish_reason"] == "stop";
  }
  EXPECT_GT(stopped, 0);  // the stories do end within 400 tokens
}

TEST_F(GenerateEndings, SamplingSeedIsRandomAndPrinted) {
  const std::vector<std::string> base = {"generate", "-m", kStoriesDir, "-p", "Once upon a time,", "-n", "40",
                                         "--temp", "1", "--ignore-eos"};
  const RunResult a = run_triattn(base);
  ASSERT_EQ(a.rc, 0) << a.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.err, m, std::regex("seed (\\d+) \\(repeat with --seed \\1\\)"))) << a.err;
  std::vector<std::string> again = base;
  again.insert(again.end(), {"--seed", m[1].str()});
  const RunResult b = run_triattn(again);
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(b.err.find("seed "), std::string::npos) << "a given seed is not announced: " << b.err;
  // Two unseeded runs differ (40 tokens at temperature 1: equal by chance ~never).
  const RunResult c = run_triattn(base);
  EXPECT_NE(a.out, c.out);
}

}  // namespace
}  // namespace triattn::test
