// `triattn policies`: every KV policy the registry knows, what it needs, its own parameters
// and defaults, as text and as JSON; and the per-policy defaults reaching `generate`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_run.h"

namespace triattn::test {
namespace {

const char* const kAll[] = {"full", "triattention", "triattention-split", "streaming", "h2o",
                            "snapkv", "rkv",          "knorm",              "tova",      "random"};

TEST(PoliciesCli, ListsEveryPolicyWithItsParameters) {
  const RunResult r = run_triattn({"policies"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* name : kAll) EXPECT_NE(r.out.find("\n  " + std::string(name) + "\n"), std::string::npos) << name;
  for (const char* s : {"--obs-window", "(default: 32)", "--pool-kernel", "(default: 7)", "--rkv-lambda", "(default: 0.1)",
                        "--kv-seed", "--sink default 4", "default pruning mode per_head",
                        "default pruning mode per_layer_per_head", "attention weights", "recent post-RoPE queries",
                        "calibration statistics", "--kv-budget", "--divide-length", "--window", "--protect-prompt"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " in:\n" << r.out;
}

TEST(PoliciesCli, JsonDescribesNeedsModesAndDefaults) {
  const RunResult r = run_triattn({"policies", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (const auto& p : j["policies"]) {
    names.insert(p["name"].get<std::string>());
    EXPECT_FALSE(p["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, std::set<std::string>(std::begin(kAll), std::end(kAll)));
  const auto find = [&](const char* n) {
    for (const auto& p : j["policies"])
      if (p["name"] == n) return p;
    return nlohmann::json();
  };
  EXPECT_TRUE(find("h2o")["needs"]["attention"].get<bool>());
  EXPECT_FALSE(find("h2o")["needs"]["queries"].get<bool>());
  EXPECT_TRUE(find("snapkv")["needs"]["queries"].get<bool>());
  EXPECT_TRUE(find("triattention")["needs"]["stats"].get<bool>());
  EXPECT_EQ(find("triattention")["default_pruning_mode"], "per_head");
  EXPECT_TRUE(find("triattention-split")["needs"]["stats"].get<bool>());
  EXPECT_FALSE(find("triattention-split")["needs"]["queries"].get<bool>());
  // It shares the paper's ranking across layers itself and selects per stream.
  EXPECT_FALSE(find("triattention-split")["pruning_mode_applies"].get<bool>());
  EXPECT_TRUE(find("triattention-split")["default_pruning_mode"].is_null());
  EXPECT_EQ(find("tova")["default_pruning_mode"], "per_layer_per_head");
  EXPECT_TRUE(find("streaming")["default_pruning_mode"].is_null());
  EXPECT_EQ(find("streaming")["default_sink"], 4);
  EXPECT_EQ(find("rkv")["parameters"].size(), 4u);
  EXPECT_EQ(j["pruning_modes"].size(), 4u);
  EXPECT_GE(j["shared_parameters"].size(), 6u);
}

TEST(PoliciesCli, RejectsUnknownOptions) {
  const RunResult r = run_triattn({"policies", "--sideways"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--sideways"), std::string::npos) << r.err;
}

// Bad baseline parameters reach the user as errors naming the flag.
TEST(PoliciesCli, GenerateRefusesBadBaselineParameters) {
  const std::string model = shared_path("models/tinystories-656k");
  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Bad& b : {Bad{{"--kv-policy", "snapkv", "--obs-window", "0"}, "--obs-window"},
                       Bad{{"--kv-policy", "rkv", "--pool-kernel", "6"}, "--pool-kernel"},
                       Bad{{"--kv-policy", "rkv", "--rkv-lambda", "-0.5"}, "--rkv-lambda"},
                       Bad{{"--kv-policy", "streaming", "--kv-budget", "3"}, "--sink"}}) {
    std::vector<std::string> args = {"generate", "-m", model, "-p", "hi", "-n", "2"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const RunResult r = run_triattn(args);
    EXPECT_NE(r.rc, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace triattn::test
