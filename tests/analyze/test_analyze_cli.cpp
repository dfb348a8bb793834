// `triattn analyze` end to end through the binary: the report folder on a real model
// (TinyStories-656K from ../shared; small --max-tokens to stay fast), --compare, and clear
// errors for bad input (missing files, stats of another model, bad --heads, a file as -o,
// too short an input). The numbers themselves are checked against numpy in
// tests/reference/test_analyze_reference.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_run.h"

namespace triattn::test {
namespace {

namespace fs = std::filesystem;

std::string tinystories() { return shared_path("models/tinystories-656k"); }
std::string stories260k() { return shared_path("models/stories260k/stories260K.bin"); }
std::string text() { return std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt"; }

class AnalyzeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& p : {tinystories(), stories260k(), text()})
      ASSERT_TRUE(fs::exists(p)) << "missing test data: " << p;
  }
  // A failing run whose stderr must contain every `needle`.
  void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
    const RunResult r = run_triattn(args);
    EXPECT_EQ(r.rc, 1) << r.err;
    for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "want '" << n << "' in: " << r.err;
  }
  std::string calibrate(const std::string& model, int64_t max_tokens, const std::string& name) {
    const std::string out = dir_.file(name);
    const RunResult r = run_triattn({"calibrate", "-m", model, "--input", text(), "--max-tokens", std::to_string(max_tokens),
                                     "-o", out, "-t", "2"});
    EXPECT_EQ(r.rc, 0) << r.err;
    return out;
  }
  ScratchDir dir_;
};

TEST_F(AnalyzeCli, WritesJsonFiguresAndASelfContainedReport) {
  const std::string out = dir_.file("report");
  const RunResult r = run_triattn({"analyze", "-m", tinystories(), "--input", text(), "--max-tokens", "200", "-t", "2",
                                   "--heads", "1:2,0:5", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("mean r̄"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(fs::path(out) / "analysis.json"));
  EXPECT_EQ(j["format"], "triattn-analysis");
  EXPECT_EQ(j["input"]["token_count"], 200);
  EXPECT_EQ(j["query_heads"].size(), 16u);
  EXPECT_EQ(j["key_heads"].size(), 8u);
  ASSERT_EQ(j["chosen_heads"].size(), 2u);
  EXPECT_EQ(j["chosen_heads"][0]["layer"], 1);
  EXPECT_EQ(j["chosen_heads"][0]["head"], 2);
  EXPECT_EQ(j["figures"].size(), 3u + 2 * 2);  // two heat maps, the histogram, a curve and a scatter per head
  const std::string html = slurp(fs::path(out) / "index.html");
  for (const auto& f : j["figures"]) {
    const std::string svg = slurp(fs::path(out) / f["file"].get<std::string>());
    EXPECT_NE(svg.find("<svg xmlns="), std::string::npos) << f["file"];
    EXPECT_GT(svg.size(), 500u) << f["file"];
    EXPECT_NE(html.find("data-file=\"" + f["file"].get<std::string>() + "\""), std::string::npos) << f["file"];
  }
  // Self-contained: no scripts, nothing fetched from elsewhere.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://", html.find("</svg>")), html.find("http://www.w3.org/2000/svg", html.find("</svg>")));
  EXPECT_NE(html.find("What this means for TriAttention"), std::string::npos);
  EXPECT_NE(html.find("Weighted R"), std::string::npos);
  EXPECT_GE(j["findings"].size(), 4u);
}

TEST_F(AnalyzeCli, StatisticsFromAFileAreUsedAndNamed) {
  const std::string stats = calibrate(tinystories(), 400, "ts.safetensors");
  const std::string out = dir_.file("report");
  const RunResult r = run_triattn({"analyze", "-m", tinystories(), "--input", text(), "--max-tokens", "100", "--stats",
                                   stats, "-t", "2", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(fs::path(out) / "analysis.json"));
  EXPECT_EQ(j["stats"]["source"], stats);
  EXPECT_EQ(j["stats"]["key_source"], stats);
  EXPECT_EQ(j["stats"]["token_count"], 400);
  EXPECT_EQ(j["input"]["token_count"], 100);
}

TEST_F(AnalyzeCli, MissingFilesAreNamed) {
  expect_error({"analyze", "-m", tinystories(), "--input", "/nonexistent/text.txt", "-o", dir_.file("r")},
               {"/nonexistent/text.txt"});
  expect_error({"analyze", "-m", "/nonexistent/model.gguf", "--input", text(), "-o", dir_.file("r")},
               {"/nonexistent/model.gguf"});
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--stats", "/nonexistent/s.safetensors", "-o",
                dir_.file("r")},
               {"/nonexistent/s.safetensors"});
}

TEST_F(AnalyzeCli, StatsOfAnotherModelAreRefusedNamingTheMismatch) {
  const std::string other = calibrate(stories260k(), 100, "s260.safetensors");
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--stats", other, "-o", dir_.file("r")},
               {other, "does not match the model", "n_layers 5 (model: 2)", "head_dim 8 (model: 16)"});
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--stats", text(), "-o", dir_.file("r")}, {text()});
}

TEST_F(AnalyzeCli, BadHeadsAreRefusedBeforeTheRun) {
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--heads", "2:0", "-o", dir_.file("r")},
               {"--heads", "layer 2 does not exist", "2 layers (0-1)"});
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--heads", "0:8", "-o", dir_.file("r")},
               {"head 8 does not exist", "8 query heads per layer (0-7)"});
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--heads", "0-1", "-o", dir_.file("r")},
               {"'0-1' is not LAYER:HEAD"});
}

TEST_F(AnalyzeCli, BadOutputAndShortInputAndMissingFlags) {
  const std::string file = dir_.write("a-file", "x");
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "-o", file}, {file, "must be a folder"});
  const std::string short_text = dir_.write("short.txt", "Hi");
  expect_error({"analyze", "-m", tinystories(), "--input", short_text, "-o", dir_.file("r")}, {"at least 5"});
  expect_error({"analyze", "-m", tinystories(), "--input", text()}, {"-o DIR is required"});
  expect_error({"analyze", "--input", text(), "-o", dir_.file("r")}, {"-m MODEL is required"});
  expect_error({"analyze", "-m", tinystories(), "--input", text(), "--max-tokens", "-3", "-o", dir_.file("r")},
               {"--max-tokens -3 is negative"});
}

TEST_F(AnalyzeCli, CompareTwoCalibrationsPrintsATableAndWritesJson) {
  const std::string a = calibrate(tinystories(), 300, "a.safetensors"), b = calibrate(tinystories(), 900, "b.safetensors");
  const std::string out = dir_.file("cmp");
  const RunResult r = run_triattn({"analyze", "--compare", a, b, "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("layer  head    cosine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mean cosine"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(fs::path(out) / "compare.json"));
  EXPECT_EQ(j["heads"].size(), 16u);
  EXPECT_EQ(j["first"]["token_count"], 300);
  const double cosine = j["summary"]["mean_cosine"];
  EXPECT_GT(cosine, 0.5);  // one text, more of it: the centres mostly agree
  EXPECT_LT(cosine, 1.0);
  // A file against itself: identical centres; without -o, no file.
  const RunResult same = run_triattn({"analyze", "--compare", a, a});
  ASSERT_EQ(same.rc, 0) << same.err;
  EXPECT_NE(same.out.find("mean cosine 1.0000"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("mean relative distance 0.0000"), std::string::npos) << same.out;
}

TEST_F(AnalyzeCli, CompareRefusesStatsOfDifferentModelsAndExtraFlags) {
  const std::string a = calibrate(tinystories(), 100, "a.safetensors"), b = calibrate(stories260k(), 100, "b.safetensors");
  expect_error({"analyze", "--compare", a, b}, {"statistics of different models", "n_layers 2 vs 5", "head_dim 16 vs 8"});
  expect_error({"analyze", "--compare", a, a, "-m", tinystories()}, {"--compare takes two stats files"});
  expect_error({"analyze", "--compare", a}, {"--compare"});
}

}  // namespace
}  // namespace triattn::test
