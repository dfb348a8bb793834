// `triattn generate` as a user runs it: the --json contract (docs/design.md, Contracts),
// TriAttention flags and the TRIATTN_RUNTIME_* environment (flags win), and clear refusals.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "tinystories_stats.h"

namespace triattn::test {
namespace {


class GenerateCli : public TinyStoriesStats {
 protected:
  static nlohmann::json run_json(std::vector<std::string> args) {
    args.insert(args.begin(), {"generate", "-m", kStoriesDir, "-p", "Once upon a time,", "--temp", "0", "--json",
                               "--ignore-eos"});
    const RunResult r = run_triattn(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }
};

TEST_F(GenerateCli, JsonHasTheContractKeys) {
  const auto j = run_json({"-n", "12"});
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_EQ(j["tokens"].size(), 12u);
  EXPECT_EQ(j["prompt_tokens"], 7);
  for (const char* k : {"prefill_tok_s", "decode_tok_s", "kv_peak_tokens", "kv_peak_bytes", "prune_events",
                        "scoring_ms"})
    EXPECT_TRUE(j["stats"].contains(k)) << k;
  EXPECT_EQ(j["stats"]["kv_peak_tokens"], 7 + 12 - 1);
  EXPECT_EQ(j["stats"]["prune_events"], 0);
}

TEST_F(GenerateCli, TriAttentionFlagsBoundTheCache) {
  const auto j = run_json({"-n", "150", "--kv-policy", "triattention", "--stats", stats_, "--kv-budget", "32",
                           "--divide-length", "16", "--window", "8"});
  EXPECT_EQ(j["stats"]["kv_peak_tokens"], 48);
  EXPECT_GT(j["stats"]["prune_events"], 5);
}

// Environment variables set the knobs; a flag overrides its variable.
TEST_F(GenerateCli, EnvironmentSetsKnobsAndFlagsOverrideIt) {
  setenv("TRIATTN_RUNTIME_KV_BUDGET", "40", 1);
  setenv("TRIATTN_RUNTIME_DIVIDE_LENGTH", "8", 1);
  setenv("TRIATTN_RUNTIME_SPARSE_STATS_PATH", stats_.c_str(), 1);
  const auto from_env = run_json({"-n", "100", "--kv-policy", "triattention"});
  const auto flag_wins = run_json({"-n", "100", "--kv-policy", "triattention", "--kv-budget", "24"});
  unsetenv("TRIATTN_RUNTIME_KV_BUDGET");
  unsetenv("TRIATTN_RUNTIME_DIVIDE_LENGTH");
  unsetenv("TRIATTN_RUNTIME_SPARSE_STATS_PATH");
  EXPECT_EQ(from_env["stats"]["kv_peak_tokens"], 48);
  EXPECT_EQ(flag_wins["stats"]["kv_peak_tokens"], 32);
}

TEST_F(GenerateCli, RefusesMissingStatsAndStatsOfAnotherModel) {
  RunResult r = run_triattn({"generate", "-m", kStoriesDir, "-p", "hi", "--kv-policy", "triattention"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("triattn calibrate"), std::string::npos) << r.err;

  const std::string other = (*dir_ / "stories260k.stats.safetensors").string();
  r = run_triattn({"calibrate", "-m", shared_path("models/stories260k/stories260K.bin"), "--input",
                   std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt", "-o", other});
  ASSERT_EQ(r.rc, 0) << r.err;
  // stderr is a file here, not a terminal: progress comes as plain lines, no carriage returns.
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  r = run_triattn({"generate", "-m", kStoriesDir, "-p", "hi", "--kv-policy", "triattention", "--stats", other});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("n_layers 5 (model: 2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("head_dim 8 (model: 16)"), std::string::npos) << r.err;

  r = run_triattn({"generate", "-m", kStoriesDir, "-p", "hi", "--pruning-mode", "sideways"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("sideways"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace triattn::test
