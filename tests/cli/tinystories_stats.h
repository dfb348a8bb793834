#pragma once
// A test fixture base holding TriAttention statistics of the TinyStories model, calibrated
// once per test binary by `triattn calibrate` on the committed calibration text.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_run.h"

namespace triattn::test {

class TinyStoriesStats : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    stats_ = (*dir_ / "tiny.stats.safetensors").string();
    const RunResult r = run_triattn({"calibrate", "-m", kTinyStoriesDir, "--input",
                                     std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt", "-o",
                                     stats_});
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  static inline const std::string kTinyStoriesDir = shared_path("models/tinystories-656k");
  static inline ScratchDir* dir_ = nullptr;
  static inline std::string stats_;
};

}  // namespace triattn::test
