// `triattn calibrate --into` as a user runs it: a GGUF copy that carries the statistics
// generates with --kv-policy triattention and no --stats exactly as the original with the
// separate file; `info` names the statistics; the refusals say what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "cli/tinystories_stats.h"

namespace calibrate_into_cli_test {

using namespace triattn::test;

class CalibrateIntoCli : public TinyStoriesStats {
 protected:
  static inline const std::string kGguf = kStoriesGguf;
  static inline const std::string kText = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt";
  ScratchDir dir_;

  static nlohmann::json generate(const std::string& model, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate", "-m", model, "-p", "Once upon a time, there was a", "-n", "80",
                                     "--temp", "0", "--ignore-eos", "--kv-policy", "triattention", "--kv-budget",
                                     "32", "--divide-length", "8", "--window", "8", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_triattn(args);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }
};

TEST_F(CalibrateIntoCli, TheModelsOwnStatisticsGenerateAsTheStatsFile) {
  const std::string carrying = dir_.file("tiny+stats.gguf");
  const RunResult c = run_triattn({"calibrate", "--into", kGguf, "--input", kText, "-o", carrying});
  ASSERT_EQ(c.rc, 0) << c.err;
  // The same calibration as a separate file (of the GGUF: the fixture's is of the HF copy).
  const std::string file = dir_.file("tiny-gguf.stats");
  ASSERT_EQ(run_triattn({"calibrate", "-m", kGguf, "--input", kText, "-o", file}).rc, 0);
  const nlohmann::json own = generate(carrying, {});
  const nlohmann::json separate = generate(kGguf, {"--stats", file});
  ASSERT_FALSE(own.is_null());
  EXPECT_EQ(own["tokens"], separate["tokens"]);
  EXPECT_EQ(own["stats"]["prune_events"], separate["stats"]["prune_events"]);
  EXPECT_EQ(own["stats"]["kv_peak_tokens"], separate["stats"]["kv_peak_tokens"]);
  EXPECT_GT(own["stats"]["prune_events"].get<int>(), 0);

  const RunResult info = run_triattn({"info", "-m", carrying});
  EXPECT_NE(info.out.find("statistics    TriAttention statistics in " + carrying), std::string::npos) << info.out;
  const RunResult json = run_triattn({"info", "-m", carrying, "--json"});
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["triattention_stats"]["path"], carrying);
  EXPECT_GT(j["triattention_stats"]["token_count"].get<int64_t>(), 800);
  EXPECT_TRUE(nlohmann::json::parse(run_triattn({"info", "-m", kGguf, "--json"}).out)["triattention_stats"].is_null());
}

TEST_F(CalibrateIntoCli, StoresAStatsFileAndRefusesWhatWouldGoWrong) {
  const std::string carrying = dir_.file("tiny+stats.gguf");
  ASSERT_EQ(run_triattn({"calibrate", "--into", kGguf, "--stats", stats_, "-o", carrying}).rc, 0);

  RunResult r = run_triattn({"calibrate", "--into", carrying, "--stats", stats_, "-o", carrying});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("is the --into model itself"), std::string::npos) << r.err;

  const std::string twice = dir_.file("twice.gguf");
  r = run_triattn({"calibrate", "--into", carrying, "--stats", stats_, "-o", twice});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("already holds TriAttention statistics"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(twice));
  EXPECT_EQ(run_triattn({"calibrate", "--into", carrying, "--stats", stats_, "-o", twice, "--replace"}).rc, 0);

  // Statistics of another model: stories260k's, into TinyStories.
  const std::string other = dir_.file("s260.stats");
  ASSERT_EQ(run_triattn({"calibrate", "-m", shared_path("models/stories260k/stories260K.bin"), "--input", kText,
                         "-o", other})
                .rc,
            0);
  r = run_triattn({"calibrate", "--into", kGguf, "--stats", other, "-o", dir_.file("wrong.gguf")});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("does not match the model"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("wrong.gguf")));

  // An HF directory takes its file in place: -o is refused.
  r = run_triattn({"calibrate", "--into", kTinyStoriesDir, "--stats", stats_, "-o", dir_.file("x")});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("takes its statistics in place"), std::string::npos) << r.err;
}

}  // namespace calibrate_into_cli_test
