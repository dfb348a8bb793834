// NaN/inf anywhere in a stats file (not only q_abs_mean) is refused, in one
// place and by the same rules for our safetensors files, the official .pt and the writer;
// the message names the file, the tensor and the first bad (layer, head, band).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "calib/pt_stats.h"
#include "calib/stats_file.h"
#include "calib/stats_values.h"
#include "calib_test_util.h"
#include "common/shared_files.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::temp_path;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// 2 layers, 4 query heads, 2 KV heads, 4 bands.
const ModelConfig kValuesCfg = calib_test::model_config("m", 2, 4, 2, 8);

std::string good_file() {
  const std::string path = temp_path("values_good.safetensors");
  StatsInfo info = stats_info_for(kValuesCfg, 5000, 1);
  for (int i = 0; i < 256; ++i) info.weights_fingerprint.push_back(std::cos(0.3f * i));
  write_stats_file(path, calib_test::random_stats(kValuesCfg, 11), info);
  return path;
}

using test::slurp;
}  // namespace

TEST(StatsValues, EveryTensorOfTheSafetensorsFileIsChecked) {
  const std::string good = good_file();
  ASSERT_NO_THROW(load_stats(good, kValuesCfg));
  struct Case {
    const char* tensor;
    size_t index;
    float value;
    const char* where;
  } cases[] = {
      // [2, 4, 4]: index (1*4 + 3)*4 + 2 = 30 is layer 1, head 3, band 2.
      {"q_mean_real", 30, kNan, "layer 1, head 3, band 2"},
      {"q_mean_imag", 30, kNan, "layer 1, head 3, band 2"},
      {"q_mean_imag", 5, kInf, "layer 0, head 1, band 1"},
      {"q_abs_mean", 30, kNan, "layer 1, head 3, band 2"},
      {"q_abs_mean", 0, -0.5f, "layer 0, head 0, band 0"},
      {"q_mrl", 30, -kInf, "layer 1, head 3, band 2"},
      {"q_mrl", 3, -0.25f, "layer 0, head 0, band 3"},
      // [2, 2, 4]: index (1*2 + 1)*4 + 2 = 14 is layer 1, head 1, band 2.
      {"k_mean_real", 14, kNan, "layer 1, head 1, band 2"},
      {"k_mean_imag", 14, -kInf, "layer 1, head 1, band 2"},
      {"k_abs_mean", 14, -1.0f, "layer 1, head 1, band 2"},
      {"k_mrl", 14, kNan, "layer 1, head 1, band 2"},
      {"rope_freqs", 2, kNan, "band 2"},
      {"rope_freqs", 3, 0.0f, "band 3"},
      {"rope_freqs", 1, -0.1f, "band 1"},
      {"weights_fingerprint", 100, kInf, "index 100"},
  };
  int n = 0;
  for (const Case& k : cases) {
    const std::string path = temp_path("values_bad_" + std::to_string(n++) + ".safetensors");
    calib_test::rewrite_safetensors(good, path, nullptr, [&](const std::string& name, std::vector<float>& v) {
      if (name == k.tensor) v.at(k.index) = k.value;
      return true;
    });
    const std::string msg = error_of([&] { read_stats_any(path); });
    const std::string what = std::string(k.tensor) + " " + std::to_string(k.value);
    EXPECT_NE(msg.find(path), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find(std::string("tensor '") + k.tensor + "' holds"), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find(k.where), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find("recalibrate"), std::string::npos) << what << ": " << msg;
  }
  // Means of q_f may be negative: only the rule of each tensor applies.
  const std::string neg = temp_path("values_negative_mean.safetensors");
  calib_test::rewrite_safetensors(good, neg, nullptr, [](const std::string& name, std::vector<float>& v) {
    if (name == "q_mean_real" || name == "k_mean_imag") v[7] = -3.5f;
    return true;
  });
  EXPECT_NO_THROW(load_stats(neg, kValuesCfg));
}

TEST(StatsValues, FirstBadValueIsReported) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {1, kNan, 1, 1, 1, 1, kInf, 1};
  const StatsTensorValues t[] = {{"q_mean_real", {1, 2, 4}, a}, {"q_abs_mean", {1, 2, 4}, b}};
  EXPECT_EQ(first_invalid_stats_value(std::span(t, 1)), "");
  EXPECT_EQ(first_invalid_stats_value(t),
            "tensor 'q_abs_mean' holds nan at layer 0, head 0, band 1 (a mean of absolute values is finite and never "
            "negative)");
}

// A forward pass that overflowed must not become a stats file, nor destroy the one there.
TEST(StatsValues, WriterRefusesNonFiniteStatisticsAndKeepsTheOldFile) {
  const std::string path = temp_path("values_writer.safetensors");
  write_stats_file(path, calib_test::random_stats(kValuesCfg, 1), stats_info_for(kValuesCfg, 100, 1));
  const std::string before = slurp(path);
  HeadStats bad = calib_test::random_stats(kValuesCfg, 2);
  bad.q_mean_imag[30] = kNan;
  const std::string msg = error_of([&] { write_stats_file(path, bad, stats_info_for(kValuesCfg, 100, 1)); });
  EXPECT_NE(msg.find("refusing to write"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'q_mean_imag' holds nan at layer 1, head 3, band 2"), std::string::npos) << msg;
  EXPECT_EQ(slurp(path), before);
  bad = calib_test::random_stats(kValuesCfg, 2);
  bad.k_abs_mean[14] = -kInf;
  EXPECT_NE(error_of([&] { write_stats_file(path, bad, stats_info_for(kValuesCfg, 100, 1)); })
                .find("'k_abs_mean' holds -inf at layer 1, head 1, band 2"),
            std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
}

namespace {

std::string make_values_pt(const std::string& name) {
  const std::string out = temp_path(name);
  const std::string cmd =
      "python3 " + std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/triattention_make_pt.py " + out + " --mode good";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "fixture script failed: " << cmd;
  return out;
}

std::string f32_bytes(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

}  // namespace

TEST(StatsValues, OfficialPtIsCheckedByTheSameRules) {
  // The fixture's q_mean_imag at layer 1, head 3, band 2 is float(-(1 + 0.3) - 0.04).
  const float imag = static_cast<float>(-(1 + 0.1 * 3) - 0.02 * 2);
  const std::string nan_pt = make_values_pt("values_nan.pt");
  ASSERT_NO_THROW(read_pt_stats(nan_pt));
  calib_test::patch_zip_bytes(nan_pt, "/data/", f32_bytes(imag), f32_bytes(kNan));
  std::string msg = error_of([&] { load_stats(nan_pt, calib_test::model_config("m", 2, 4, 2, 8)); });
  EXPECT_NE(msg.find(nan_pt), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor 'q_mean_imag' holds nan at layer 1, head 3, band 2"), std::string::npos) << msg;

  // q_abs_mean of layer 0, head 2, band 1 is float(2 + 0.2 + 0.01): made negative.
  const std::string neg_pt = make_values_pt("values_neg.pt");
  const float ab = static_cast<float>(2 + 0.1 * 2 + 0.01 * 1);
  calib_test::patch_zip_bytes(neg_pt, "/data/", f32_bytes(ab), f32_bytes(-ab));
  msg = error_of([&] { read_pt_stats(neg_pt); });
  EXPECT_NE(msg.find("tensor 'q_abs_mean' holds -2.21 at layer 0, head 2, band 1"), std::string::npos) << msg;
}
