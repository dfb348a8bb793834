// Statistics under partial RoPE: the accumulator's rotated bands and unrotated ("pass")
// coordinates, layers never observed (DeltaNet), the stats file's q_pass_* tensors and
// rotary_dim metadata, and the loader's refusals of a mismatching rotary layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "calib/stats_accumulator.h"
#include "calib/stats_file.h"
#include "calib_test_util.h"
#include "formats/safetensors.h"

using namespace triattn;
using calib_test::temp_path;
using triattn::test::error_of;

namespace {

// head_dim 16 with the first `rot` coordinates rotating (0 = all).
ModelConfig partial_config(int rot) {
  ModelConfig c = calib_test::model_config("partial", 2, 4, 2, 16);
  c.rotary_dim = rot;
  return c;
}

// Statistics of c's shape from a few random pre-RoPE vectors, through the accumulator.
HeadStats accumulated_partial(const ModelConfig& c, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  StatsAccumulator acc(c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.rotary_dims());
  std::vector<float> q(static_cast<size_t>(c.n_heads) * c.head_dim), k(static_cast<size_t>(c.n_kv_heads) * c.head_dim);
  for (int t = 0; t < 5; ++t)
    for (int l = 0; l < c.n_layers; ++l) {
      for (float& x : q) x = n(gen) + 0.5f;
      for (float& x : k) x = n(gen);
      acc.on_pre_rope(l, t, 1, q.data(), k.data());
    }
  return acc.result();
}

std::string write_partial(const std::string& name, const ModelConfig& c) {
  const std::string path = temp_path(name);
  write_stats_file(path, accumulated_partial(c, 3), stats_info_for(c, 5, 42));
  return path;
}

}  // namespace

TEST(StatsPartialRope, AccumulatorSplitsRotatedBandsFromPassCoordinates) {
  // head_dim 8, 4 rotate: bands (x0, x2), (x1, x3); pass x4..x7.
  StatsAccumulator acc(1, 1, 1, 8, 4);
  const float a[8] = {3, 0, 4, 1, 1, 2, 2, 0}, b[8] = {0, 1, 0, 0, 3, 0, 0, 4};
  acc.on_pre_rope(0, 0, 1, a, a);
  acc.on_pre_rope(0, 1, 1, b, b);
  const HeadStats s = acc.result();
  EXPECT_EQ(s.rotary_dims(), 4);
  EXPECT_EQ(s.bands(), 2);
  EXPECT_EQ(s.pass_dims(), 4);
  EXPECT_EQ(s.q_mean_real, (std::vector<float>{1.5f, 0.5f}));
  EXPECT_EQ(s.q_mean_imag, (std::vector<float>{2.0f, 0.5f}));
  EXPECT_EQ(s.q_abs_mean, (std::vector<float>{2.5f, 1.0f}));  // |(3,4)|, |(0,0)| and |(0,1)|, |(1,0)|
  EXPECT_EQ(s.k_abs_mean, s.q_abs_mean);
  EXPECT_EQ(s.q_pass_mean, (std::vector<float>{2, 1, 1, 2}));
  EXPECT_EQ(s.q_pass_abs_mean, (std::vector<float>{4}));  // ‖(1,2,2,0)‖ = 3, ‖(3,0,0,4)‖ = 5
}

TEST(StatsPartialRope, FullRopeAccumulatesNoPassStatistics) {
  StatsAccumulator acc(1, 1, 1, 4);
  const float a[4] = {1, 2, 3, 4};
  acc.on_pre_rope(0, 0, 1, a, a);
  const HeadStats s = acc.result();
  EXPECT_EQ(s.rotary_dim, 0);
  EXPECT_EQ(s.bands(), 2);
  EXPECT_TRUE(s.q_pass_mean.empty());
  EXPECT_TRUE(s.q_pass_abs_mean.empty());
}

TEST(StatsPartialRope, LayersNeverObservedStayZeroAndDoNotStopTheCount) {
  // A hybrid model: layers 0 and 2 are DeltaNet (no KV), the forward pass reports 1 and 3 only.
  StatsAccumulator acc(4, 1, 1, 4, 0, {1, 3});
  const float a[4] = {1, 2, 3, 4};
  for (int t = 0; t < 3; ++t)
    for (int l : {1, 3}) acc.on_pre_rope(l, t, 1, a, a);
  EXPECT_EQ(acc.tokens(), 3);
  const HeadStats s = acc.result();
  EXPECT_EQ(s.q_mean_real, (std::vector<float>{0, 0, 1, 2, 0, 0, 1, 2}));
  EXPECT_EQ(s.q_abs_mean[0], 0.0f);
  // A report for a layer that should have none is a broken forward pass.
  acc.on_pre_rope(0, 0, 1, a, a);
  EXPECT_NE(error_of([&] { acc.tokens(); }).find("layer without KV"), std::string::npos);
}

TEST(StatsPartialRope, RoundTripWithPassTensors) {
  const ModelConfig c = partial_config(8);
  const HeadStats s = accumulated_partial(c, 3);
  const std::string path = write_partial("partial.safetensors", c);
  {
    auto f = SafetensorsFile::open(path);
    EXPECT_EQ(f->metadata().at("rotary_dim"), "8");
    ASSERT_NE(f->find("q_pass_mean"), nullptr);
    EXPECT_EQ(f->find("q_pass_mean")->shape, (std::vector<int64_t>{2, 4, 8}));
    EXPECT_EQ(f->find("q_pass_abs_mean")->shape, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(f->find("q_mean_real")->shape, (std::vector<int64_t>{2, 4, 4}));
    EXPECT_EQ(f->find("rope_freqs")->shape, (std::vector<int64_t>{4}));
  }
  const auto loaded = load_stats(path, c);
  EXPECT_EQ(loaded->rotary_dims(), 8);
  EXPECT_EQ(loaded->q_pass_mean, s.q_pass_mean);
  EXPECT_EQ(loaded->q_pass_abs_mean, s.q_pass_abs_mean);
  EXPECT_EQ(loaded->q_mean_real, s.q_mean_real);
  EXPECT_EQ(loaded->k_abs_mean, s.k_abs_mean);
}

TEST(StatsPartialRope, FullRopeFilesKeepTheirFormat) {
  // No rotary_dim, no q_pass_*: what every file written before partial RoPE holds, and loads.
  const ModelConfig c = partial_config(0);
  const std::string path = write_partial("full.safetensors", c);
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->metadata().count("rotary_dim"), 0u);
  EXPECT_EQ(f->find("q_pass_mean"), nullptr);
  EXPECT_EQ(f->find("q_pass_abs_mean"), nullptr);
  f.reset();
  EXPECT_EQ(load_stats(path, c)->rotary_dims(), 16);
  EXPECT_EQ(load_stats(path, partial_config(16))->rotary_dims(), 16);  // rotary_dim = head_dim: the same
}

TEST(StatsPartialRope, MismatchedRotaryLayoutIsRefusedNamingTheField) {
  const std::string partial = write_partial("r8.safetensors", partial_config(8));
  std::string msg = error_of([&] { load_stats(partial, partial_config(0)); });
  EXPECT_NE(msg.find("rotary_dim 8 (model: 16)"), std::string::npos) << msg;
  msg = error_of([&] { load_stats(partial, partial_config(4)); });
  EXPECT_NE(msg.find("rotary_dim 8 (model: 4)"), std::string::npos) << msg;
  const std::string full = write_partial("r16.safetensors", partial_config(0));
  msg = error_of([&] { load_stats(full, partial_config(8)); });
  EXPECT_NE(msg.find("rotary_dim 16 (model: 8)"), std::string::npos) << msg;
}

TEST(StatsPartialRope, DamagedPassTensorsAreRefused) {
  const ModelConfig c = partial_config(8);
  const std::string good = write_partial("good.safetensors", c);
  // Not "missing.safetensors": test_stats_file_kind needs that name absent in the shared temp folder.
  const std::string missing = temp_path("pass_mean_dropped.safetensors");
  calib_test::rewrite_safetensors(good, missing, nullptr, [](const std::string& n, std::vector<float>&) {
    return n != "q_pass_mean";
  });
  std::string msg = error_of([&] { load_stats(missing, c); });
  EXPECT_NE(msg.find("'q_pass_mean' is missing"), std::string::npos) << msg;
  const std::string negative = temp_path("negative.safetensors");
  calib_test::rewrite_safetensors(good, negative, nullptr, [](const std::string& n, std::vector<float>& v) {
    if (n == "q_pass_abs_mean") v[5] = -1;
    return true;
  });
  msg = error_of([&] { load_stats(negative, c); });
  EXPECT_NE(msg.find("'q_pass_abs_mean' holds -1 at layer 1, head 1"), std::string::npos) << msg;
  const std::string odd = temp_path("odd.safetensors");
  calib_test::rewrite_safetensors(good, odd, [](auto& m) { m["rotary_dim"] = "7"; });
  msg = error_of([&] { load_stats(odd, c); });
  EXPECT_NE(msg.find("'rotary_dim' is 7"), std::string::npos) << msg;
  // Pass tensors in a file that says every coordinate rotates: a file not written by triattn.
  const std::string stray = temp_path("stray.safetensors");
  calib_test::rewrite_safetensors(good, stray, [](auto& m) { m.erase("rotary_dim"); });
  msg = error_of([&] { load_stats(stray, partial_config(0)); });
  EXPECT_FALSE(msg.empty());
}

TEST(StatsPartialRope, OfficialPtIsRefusedForAPartialRopeModel) {
  const std::string pt = temp_path("partial.pt");
  const std::string cmd = "python3 " + std::string(TRIATTN_SOURCE_DIR) + "/tests/reference/triattention_make_pt.py " + pt +
                          " --mode good";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ModelConfig c = calib_test::model_config("pt", 2, 4, 2, 8);
  EXPECT_NO_THROW(load_stats(pt, c));
  c.rotary_dim = 4;
  const std::string msg = error_of([&] { load_stats(pt, c); });
  EXPECT_NE(msg.find("rotary_dim: the model rotates 4 of its 8 coordinates"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".pt format holds no statistics of the unrotated ones"), std::string::npos) << msg;
}

TEST(StatsPartialRope, HybridModelRecordsOnlyItsAttentionLayersAsScored) {
  ModelConfig c = partial_config(8);
  c.layers.resize(2);
  c.layers[0].mixer = MixerKind::DeltaNet;
  const StatsInfo i = stats_info_for(c, 5, 42);
  EXPECT_EQ(i.scored_layers, (std::vector<int>{1}));
  EXPECT_EQ(i.rotary_dim, 8);
  EXPECT_EQ(i.rope_freqs.size(), 4u);
}
