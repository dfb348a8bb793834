#pragma once
// Helpers for the `triattn eval` command tests: the stories260K model and its statistics
// (calibrated once per test binary on tests/data/calibration_stories.txt; evaluations use
// tests/data/eval_stories.txt, a different text), and reading a results directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"

namespace triattn::test {

inline const std::string kStories = shared_path("models/stories260k/stories260K.bin");
inline const std::string kEvalText = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/eval_stories.txt";
inline const std::string kCalibText = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt";

class StoriesStats : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(kStories)) << kStories << " is missing (../shared/models/stories260k)";
    dir_ = new ScratchDir();
    stats_ = (*dir_ / "stories.stats.safetensors").string();
    const RunResult r = run_triattn({"calibrate", "-m", kStories, "--input", kCalibText, "-o", stats_});
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static inline ScratchDir* dir_ = nullptr;
  static inline std::string stats_;
};

inline nlohmann::json read_results(const std::filesystem::path& dir) {
  const std::string text = slurp(dir / "results.json");
  EXPECT_FALSE(text.empty()) << (dir / "results.json") << " is missing or empty";
  return nlohmann::json::parse(text);
}

// The result entry of one configuration ("full", or policy + budget).
inline const nlohmann::json& result_of(const nlohmann::json& j, const std::string& policy, int64_t budget = 0) {
  for (const auto& r : j.at("results"))
    if (r.at("policy") == policy && (budget == 0 ? r.at("budget").is_null() : r.at("budget") == budget)) return r;
  ADD_FAILURE() << "no result for " << policy << "@" << budget << " in " << j.dump().substr(0, 400);
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

}  // namespace triattn::test
