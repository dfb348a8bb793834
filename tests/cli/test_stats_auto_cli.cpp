// `--stats auto` on the command line: triattention runs with no statistics file and measures
// them from the sequence; what contradicts it is refused by name (another policy, a knob of
// auto with a file), and the server takes it as the default of requests of any policy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tinystories_stats.h"

namespace triattn::test {
namespace {

class StatsAutoCli : public TinyStoriesStats {};

std::vector<std::string> auto_gen(std::vector<std::string> extra) {
  std::vector<std::string> a = {"generate", "-m", shared_path("models/tinystories-656k"), "-p", "Once upon a time,",
                                "-n", "80", "--temp", "0", "--kv-budget", "32", "--divide-length", "16",
                                "--window", "8"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST_F(StatsAutoCli, TriAttentionRunsWithoutAFile) {
  const RunResult r = run_triattn(auto_gen({"--kv-policy", "triattention", "--stats", "auto", "--json"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["stats"]["prune_events"].get<int64_t>(), 0) << r.out;
}

TEST_F(StatsAutoCli, ContradictionsAreRefusedByName) {
  struct Case {
    std::vector<std::string> args;
    std::string what;
  };
  const std::vector<Case> cases = {
      {{"--kv-policy", "snapkv", "--stats", "auto"}, "--stats auto: the 'snapkv' policy uses no statistics"},
      {{"--kv-policy", "triattention-split", "--stats", "auto"},
       "--stats auto: the 'triattention-split' policy cannot measure its statistics itself"},
      {{"--kv-policy", "triattention", "--stats", stats_, "--auto-stats-min", "777"},
       "--auto-stats-min (triattention) applies to --stats auto only"},
  };
  for (const Case& c : cases) {
    const RunResult r = run_triattn(auto_gen(c.args));
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find(c.what), std::string::npos) << "expected '" << c.what << "' in: " << r.err;
  }
}

// keep-overlap prints one line per pruning event and the mean fraction of the file's kept rows
// that auto keeps too (a fraction, and not all rows: the two rankings differ somewhere).
TEST_F(StatsAutoCli, KeepOverlapComparesEveryPruning) {
  const RunResult r = run_triattn({"keep-overlap", "-m", shared_path("models/tinystories-656k"), "--stats", stats_,
                                   "--text", std::string(TRIATTN_SOURCE_DIR) + "/tests/data/eval_stories.txt",
                                   "--kv-budget", "64", "--window", "0"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const size_t at = r.out.find("mean overlap over 3 events: ");
  ASSERT_NE(at, std::string::npos) << r.out;  // 512 tokens, B + β = 192: prunings at 192, 320, 448
  const double mean = std::stod(r.out.substr(at + std::string("mean overlap over 3 events: ").size()));
  EXPECT_GT(mean, 0.5);
  EXPECT_LT(mean, 1.0);
}

}  // namespace
}  // namespace triattn::test
