// TRIATTN_RUNTIME_* variables (cli/kv_environment.h): each sets its knob unless its flag was
// given; none is read for the full policy; a variable that is read is checked.
#include "cli/kv_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "core/error.h"

namespace triattn::cli {
namespace {

struct Env {
  explicit Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      setenv(k, v, 1);
      names.push_back(k);
    }
  }
  ~Env() {
    for (const char* k : names) unsetenv(k);
  }
  std::vector<const char*> names;
};

auto given(std::set<std::string> flags) {
  return [flags](const char* f) { return flags.count(f) > 0; };
}

TEST(KvEnvironment, VariablesSetTheKnobsOfACompressingPolicy) {
  const Env env({{"TRIATTN_RUNTIME_KV_BUDGET", "512"},
                 {"TRIATTN_RUNTIME_DIVIDE_LENGTH", "64"},
                 {"TRIATTN_RUNTIME_WINDOW_SIZE", "32"},
                 {"TRIATTN_RUNTIME_SPARSE_STATS_PATH", "/tmp/x.safetensors"},
                 {"TRIATTN_RUNTIME_PRUNING_MODE", "per_layer"}});
  KvSettings s;
  s.policy = "triattention";
  apply_kv_environment(s, given({}));
  EXPECT_EQ(s.params.budget, 512);
  EXPECT_EQ(s.params.divide_length, 64);
  EXPECT_EQ(s.params.window, 32);
  EXPECT_EQ(s.stats_path, "/tmp/x.safetensors");
  EXPECT_EQ(s.params.mode, PruningMode::PerLayer);
}

TEST(KvEnvironment, AGivenFlagWinsAndItsVariableIsNotRead) {
  const Env env({{"TRIATTN_RUNTIME_KV_BUDGET", "lots"}, {"TRIATTN_RUNTIME_PRUNING_MODE", "sideways"}});
  KvSettings s;
  s.policy = "triattention";
  s.params.budget = 77;
  apply_kv_environment(s, given({"--kv-budget", "--pruning-mode"}));
  EXPECT_EQ(s.params.budget, 77);
}

TEST(KvEnvironment, TheFullPolicyReadsNothing) {
  const Env env({{"TRIATTN_RUNTIME_KV_BUDGET", "lots"}, {"TRIATTN_RUNTIME_SPARSE_STATS_PATH", "/x"}});
  KvSettings s;
  apply_kv_environment(s, given({}));
  EXPECT_EQ(s.params.budget, PolicyParams{}.budget);
  EXPECT_TRUE(s.stats_path.empty());
}

TEST(KvEnvironment, AReadVariableIsCheckedAndNamed) {
  for (const char* bad : {"lots", "-5", "9223372036854775807", "12x", "1073741825"}) {
    const Env env({{"TRIATTN_RUNTIME_DIVIDE_LENGTH", bad}});
    KvSettings s;
    s.policy = "triattention";
    try {
      apply_kv_environment(s, given({}));
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TRIATTN_RUNTIME_DIVIDE_LENGTH"), std::string::npos) << e.what();
    }
  }
  const Env env({{"TRIATTN_RUNTIME_PRUNING_MODE", "sideways"}});
  KvSettings s;
  s.policy = "triattention";
  EXPECT_THROW(apply_kv_environment(s, given({})), Error);
}

}  // namespace
}  // namespace triattn::cli
