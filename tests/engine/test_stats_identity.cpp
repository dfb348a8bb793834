// A stats file calibrated on other weights of the same shape (another seed,
// another name) is refused by the weights fingerprint; the same weights in another format
// load, a different name alone is a warning, and files without a fingerprint (format 1, the
// official .pt) load with a warning that identity cannot be verified.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/calibrate.h"
#include "calib/stats_file.h"
#include "calib/calib_test_util.h"
#include "common/temp_dir.h"
#include "model/maker.h"
#include "model/model.h"
#include "model/weights_fingerprint.h"

using namespace triattn;
using triattn::test::error_of;

namespace {

const std::string kShared = TRIATTN_SHARED_DIR;
const std::string kText = "Once upon a time there was a little robot who liked to count the stars every night. ";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// tiny-llama with seeds 1 and 2 (GGUF Q8_0 and HF F32), calibrated once on seed 1's GGUF.
class StatsIdentity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    const ModelConfig cfg = model_preset("tiny-llama");
    write_random_gguf(cfg, {DType::Q8_0, 1}, dir_->file("seed1.gguf"));
    write_random_hf(cfg, {DType::F32, 1}, dir_->file("seed1-hf"));
    write_random_gguf(cfg, {DType::Q8_0, 2}, dir_->file("seed2.gguf"));
    s1_gguf_ = Model::load(dir_->file("seed1.gguf"));
    s1_hf_ = Model::load(dir_->file("seed1-hf"));
    s2_gguf_ = Model::load(dir_->file("seed2.gguf"));
    stats_ = dir_->file("seed1.stats.safetensors");
    const CalibrationResult r = calibrate_text(*s1_gguf_, kText + kText, {});
    write_stats_file(stats_, r.stats, r.info);
  }
  static void TearDownTestSuite() {
    s1_gguf_.reset(), s1_hf_.reset(), s2_gguf_.reset();
    delete dir_;
  }
  static inline test::TempDir* dir_ = nullptr;
  static inline std::shared_ptr<const Model> s1_gguf_, s1_hf_, s2_gguf_;
  static inline std::string stats_;
};

}  // namespace

TEST_F(StatsIdentity, CalibrationRecordsTheFingerprint) {
  const LoadedStats l = read_stats_any(stats_);
  EXPECT_EQ(l.format_version, kStatsFormatVersion);
  EXPECT_EQ(l.info.weights_fingerprint, weights_fingerprint(*s1_gguf_));
  EXPECT_EQ(l.info.model_name, "tiny-llama");
}

TEST_F(StatsIdentity, OtherWeightsOfTheSameShapeAreRefused) {
  std::vector<std::string> warnings;
  const std::string msg = error_of([&] { load_stats(stats_, *s2_gguf_, &warnings); });
  EXPECT_NE(msg.find(stats_ + ": stats file was calibrated on a model with different weights (fingerprint similarity 0.0"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("recalibrate with `triattn calibrate -m " + s2_gguf_->path()), std::string::npos) << msg;
  // The config alone cannot tell them apart: the shape-only overload still loads it.
  EXPECT_NO_THROW(load_stats(stats_, s2_gguf_->config()));
}

TEST_F(StatsIdentity, SameWeightsInAnotherFormatLoadWithANameWarningOnly) {
  std::vector<std::string> warnings;
  EXPECT_NO_THROW(load_stats(stats_, *s1_gguf_, &warnings));
  EXPECT_TRUE(warnings.empty()) << joined(warnings);

  ASSERT_NE(s1_hf_->config().name, s1_gguf_->config().name);  // "seed1-hf" vs "tiny-llama"
  auto s = load_stats(stats_, *s1_hf_, &warnings);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n_layers, 2);
  ASSERT_EQ(warnings.size(), 1u) << joined(warnings);
  EXPECT_NE(warnings[0].find(stats_ + ": the statistics were calibrated on a model named 'tiny-llama', this one is named "
                                      "'seed1-hf' (the weights fingerprint matches)"),
            std::string::npos)
      << warnings[0];
  EXPECT_NO_THROW(load_stats(stats_, *s1_hf_, nullptr));  // warnings are optional
}

TEST_F(StatsIdentity, FilesWithoutAFingerprintLoadWithAWarning) {
  const std::string v1 = dir_->file("v1.safetensors");
  calib_test::rewrite_safetensors(
      stats_, v1, [](auto& m) { m["format_version"] = "1"; },
      [](const std::string& name, std::vector<float>&) { return name != "weights_fingerprint"; });
  std::vector<std::string> warnings;
  EXPECT_NO_THROW(load_stats(v1, *s2_gguf_, &warnings));  // cannot tell: must not refuse
  EXPECT_TRUE(contains(warnings, v1 + ": stats format version 1 records no weights fingerprint, so it cannot be verified"))
      << joined(warnings);

  // The official .pt of the same shape (2 layers, 4 heads, head_dim 16).
  const std::string pt = dir_->file("official.pt");
  const std::string cmd = "python3 " + std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/triattention_make_pt.py " +
                          pt + " --layers 2 --heads 4 --head-dim 16";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  warnings.clear();
  auto s = load_stats(pt, *s1_gguf_, &warnings);
  EXPECT_EQ(s->n_kv_heads, 2);
  ASSERT_EQ(warnings.size(), 1u) << joined(warnings);
  EXPECT_NE(warnings[0].find(pt + ": the official .pt format records no weights fingerprint"), std::string::npos)
      << warnings[0];
}

// The reported case on real data: TinyStories-656K calibrated from its GGUF is accepted for
// its HF copy and refused for random weights of exactly its shape.
TEST(StatsIdentityReal, TinyStoriesAcrossFormatsAndAgainstRandomWeightsOfItsShape) {
  const std::string tiny = kShared + "/models/tinystories-656k";
  ASSERT_TRUE(std::filesystem::exists(tiny + "/TinyStories-656K-Q8_0.gguf")) << tiny << " is missing";
  const auto gguf = Model::load(tiny + "/TinyStories-656K-Q8_0.gguf");
  const auto hf = Model::load(tiny);
  test::TempDir dir;
  const std::string stats = dir.file("tiny.stats.safetensors");
  const CalibrationResult r = calibrate_text(*gguf, kText + kText + kText, {});
  write_stats_file(stats, r.stats, r.info);

  std::vector<std::string> warnings;
  EXPECT_NO_THROW(load_stats(stats, *hf, &warnings));
  for (const auto& w : warnings) EXPECT_EQ(w.find("cannot be verified"), std::string::npos) << w;

  write_random_gguf(hf->config(), {DType::Q8_0, 7}, dir.file("same-shape.gguf"));
  const auto impostor = Model::load(dir.file("same-shape.gguf"));
  ASSERT_NO_THROW(check_stats_match(read_stats_any(stats), impostor->config(), stats));  // the shape matches
  const std::string msg = error_of([&] { load_stats(stats, *impostor, &warnings); });
  EXPECT_NE(msg.find("calibrated on a model with different weights"), std::string::npos) << msg;
}
