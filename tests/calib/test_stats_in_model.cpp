// Statistics stored in the model file (calib/stats_into.h, calib/stats_embedded.h): written
// into a GGUF copy and read back they equal the separate stats file bit for bit, the model's
// own keys and tensors are copied unchanged, and the refusals name their cause.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "calib/stats_embedded.h"
#include "calib/stats_file.h"
#include "calib/stats_into.h"
#include "common/error_of.h"
#include "common/shared_files.h"
#include "common/temp_dir.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "formats/stats_names.h"
#include "model/model.h"
#include "model/weights_fingerprint.h"

namespace stats_in_model_test {

using namespace triattn;
using triattn::test::error_of;
using triattn::test::TempDir;

// Statistics of the TinyStories model's shape with its identity (values random: these tests
// are about storage, not about what the numbers mean).
struct Calibrated {
  HeadStats stats;
  StatsInfo info;
};

Calibrated made_for(const Model& m, unsigned seed) {
  const ModelConfig& c = m.config();
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Calibrated out;
  HeadStats& s = out.stats;
  s.n_layers = c.n_layers, s.n_heads = c.n_heads, s.n_kv_heads = c.n_kv_heads, s.head_dim = c.head_dim;
  const size_t half = static_cast<size_t>(c.rotary_dims()) / 2;
  for (size_t i = 0; i < static_cast<size_t>(c.n_layers) * c.n_heads * half; ++i) {
    s.q_mean_real.push_back(n(gen));
    s.q_mean_imag.push_back(n(gen));
    s.q_abs_mean.push_back(std::hypot(s.q_mean_real.back(), s.q_mean_imag.back()) + 0.5f);
  }
  for (size_t i = 0; i < static_cast<size_t>(c.n_layers) * c.n_kv_heads * half; ++i) {
    s.k_mean_real.push_back(n(gen));
    s.k_mean_imag.push_back(n(gen));
    s.k_abs_mean.push_back(std::hypot(s.k_mean_real.back(), s.k_mean_imag.back()) + 0.25f);
  }
  out.info = stats_info_for(c, 1000 + seed, 0x1234 + seed);
  out.info.weights_fingerprint = weights_fingerprint(m);
  return out;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_same_stats(const LoadedStats& a, const LoadedStats& b) {
  const HeadStats &x = *a.stats, &y = *b.stats;
  EXPECT_EQ(x.n_layers, y.n_layers);
  EXPECT_EQ(x.n_heads, y.n_heads);
  EXPECT_EQ(x.n_kv_heads, y.n_kv_heads);
  EXPECT_EQ(x.head_dim, y.head_dim);
  EXPECT_EQ(x.rotary_dim, y.rotary_dim);
  EXPECT_TRUE(same_floats(x.q_mean_real, y.q_mean_real));
  EXPECT_TRUE(same_floats(x.q_mean_imag, y.q_mean_imag));
  EXPECT_TRUE(same_floats(x.q_abs_mean, y.q_abs_mean));
  EXPECT_TRUE(same_floats(x.k_mean_real, y.k_mean_real));
  EXPECT_TRUE(same_floats(x.k_mean_imag, y.k_mean_imag));
  EXPECT_TRUE(same_floats(x.k_abs_mean, y.k_abs_mean));
  EXPECT_TRUE(same_floats(x.q_pass_mean, y.q_pass_mean));
  EXPECT_TRUE(same_floats(x.q_pass_abs_mean, y.q_pass_abs_mean));
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.info.model_name, b.info.model_name);
  EXPECT_EQ(a.info.architecture, b.info.architecture);
  EXPECT_EQ(a.info.token_count, b.info.token_count);
  EXPECT_EQ(a.info.input_hash, b.info.input_hash);
  EXPECT_EQ(a.info.rope_scaling, b.info.rope_scaling);
  EXPECT_EQ(a.info.rope_theta, b.info.rope_theta);
  EXPECT_EQ(a.info.scored_layers, b.info.scored_layers);
  EXPECT_TRUE(same_floats(a.info.rope_freqs, b.info.rope_freqs));
  EXPECT_TRUE(same_floats(a.info.weights_fingerprint, b.info.weights_fingerprint));
}

class StatsInModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(test::kStoriesGguf, {.repack = false, .threads = 1}); }
  static inline std::shared_ptr<const Model> model_;
  TempDir dir_;
};

TEST_F(StatsInModel, ReadBackEqualsTheStatsFileBitForBit) {
  const Calibrated c = made_for(*model_, 1);
  const std::string separate = dir_.file("tiny.stats"), gguf = dir_.file("tiny+stats.gguf");
  write_stats_file(separate, c.stats, c.info);
  embed_stats_in_gguf(test::kStoriesGguf, gguf, c.stats, c.info, false);
  const auto out = GgufFile::open(gguf);
  expect_same_stats(read_gguf_stats(*out), read_stats_any(separate));
  // Every tensor and metadata entry of the stats file is there under the prefix, the same
  // bytes and text; nothing else carries the prefix.
  const auto st = SafetensorsFile::open(separate);
  size_t prefixed = 0;
  for (const GgufTensorInfo& t : out->tensors()) prefixed += t.name.rfind(kGgufStatsPrefix, 0) == 0;
  EXPECT_EQ(prefixed, st->tensors().size());
  for (const SafetensorsTensor& t : st->tensors()) {
    const GgufTensorInfo* g = out->find_tensor(kGgufStatsPrefix + t.name);
    ASSERT_TRUE(g) << t.name;
    EXPECT_EQ(g->type, DType::F32);
    EXPECT_EQ(g->shape, t.shape) << t.name;
    ASSERT_EQ(g->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(g->data, t.data, t.nbytes), 0) << t.name;
  }
  for (const auto& [key, value] : st->metadata()) {
    if (key == "__metadata__") continue;
    EXPECT_EQ(out->get_string(kGgufStatsPrefix + key), value) << key;
  }
}

TEST_F(StatsInModel, TheModelsKeysAndTensorsAreCopiedUnchanged) {
  const Calibrated c = made_for(*model_, 2);
  const std::string gguf = dir_.file("tiny+stats.gguf");
  embed_stats_in_gguf(test::kStoriesGguf, gguf, c.stats, c.info, false);
  const auto in = GgufFile::open(test::kStoriesGguf), out = GgufFile::open(gguf);
  EXPECT_EQ(out->alignment(), in->alignment());
  for (const auto& [key, v] : in->metadata()) {
    const GgufValue* o = out->find(key);
    ASSERT_TRUE(o) << key;
    EXPECT_TRUE(*o == v) << key;
  }
  for (const auto& [key, v] : out->metadata())
    EXPECT_TRUE(in->has(key) || key.rfind(kGgufStatsPrefix, 0) == 0) << key;
  ASSERT_GE(out->tensors().size(), in->tensors().size());
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const GgufTensorInfo &a = in->tensors()[i], &b = out->tensors()[i];  // same order, first
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << a.name;
    EXPECT_EQ(a.shape, b.shape) << a.name;
    EXPECT_EQ(a.offset, b.offset) << a.name;
    ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name;
  }
}

TEST_F(StatsInModel, TheLoaderLeavesTheStatisticsToThePolicies) {
  const Calibrated c = made_for(*model_, 3);
  const std::string gguf = dir_.file("tiny+stats.gguf");
  embed_stats_in_gguf(test::kStoriesGguf, gguf, c.stats, c.info, false);
  const auto m = Model::load(gguf, {.repack = false, .threads = 1});
  for (const std::string& w : m->warnings()) EXPECT_EQ(w.find("not used"), std::string::npos) << w;
  EXPECT_EQ(find_embedded_stats(gguf).kind, EmbeddedStats::Kind::Gguf);
  EXPECT_FALSE(find_embedded_stats(test::kStoriesGguf));
  std::vector<std::string> warnings;
  const auto loaded = load_embedded_stats(*m, &warnings);
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_TRUE(same_floats(loaded->q_mean_real, c.stats.q_mean_real));
  EXPECT_FALSE(load_embedded_stats(*model_, &warnings));  // the original carries none
}

TEST_F(StatsInModel, RefusesToOverwriteItsInputAndToEmbedTwice) {
  const Calibrated c = made_for(*model_, 4), d = made_for(*model_, 5);
  const std::string gguf = dir_.file("tiny+stats.gguf"), again = dir_.file("again.gguf");
  EXPECT_NE(error_of([&] { embed_stats_in_gguf(test::kStoriesGguf, test::kStoriesGguf, c.stats, c.info, false); })
                .find("is the --into model itself"),
            std::string::npos);
  embed_stats_in_gguf(test::kStoriesGguf, gguf, c.stats, c.info, false);
  const std::string e = error_of([&] { embed_stats_in_gguf(gguf, again, d.stats, d.info, false); });
  EXPECT_NE(e.find("already holds TriAttention statistics"), std::string::npos) << e;
  EXPECT_NE(e.find("--replace"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(again));
  // With replace, the old statistics go and the new ones are the only ones.
  embed_stats_in_gguf(gguf, again, d.stats, d.info, true);
  const auto first = GgufFile::open(gguf), second = GgufFile::open(again);
  EXPECT_EQ(first->tensors().size(), second->tensors().size());
  EXPECT_EQ(first->metadata().size(), second->metadata().size());
  EXPECT_TRUE(same_floats(read_gguf_stats(*second).stats->q_mean_real, d.stats.q_mean_real));
}

TEST_F(StatsInModel, StatisticsOfOtherWeightsAreRefusedAtLoad) {
  Calibrated c = made_for(*model_, 6);
  for (size_t i = 0; i < c.info.weights_fingerprint.size(); ++i) c.info.weights_fingerprint[i] = std::sin(float(i));
  const std::string gguf = dir_.file("tiny+other.gguf");
  embed_stats_in_gguf(test::kStoriesGguf, gguf, c.stats, c.info, false);
  const auto m = Model::load(gguf, {.repack = false, .threads = 1});
  const std::string e = error_of([&] { load_embedded_stats(*m, nullptr); });
  EXPECT_NE(e.find("calibrated on a model with different weights"), std::string::npos) << e;
  EXPECT_NE(e.find(gguf), std::string::npos) << e;
}

TEST_F(StatsInModel, AnHfDirectoryGetsItsStatsFileInPlace) {
  for (const auto& e : std::filesystem::directory_iterator(test::kStoriesDir))
    if (e.path().extension() != ".gguf") std::filesystem::copy_file(e.path(), dir_ / e.path().filename().string());
  const std::string hf = dir_.path().string();
  const auto m = Model::load(hf, {.repack = false, .threads = 1});
  EXPECT_FALSE(find_embedded_stats(hf));
  const Calibrated c = made_for(*m, 7), d = made_for(*m, 8);
  const std::string written = write_stats_beside_hf(hf, c.stats, c.info, false);
  EXPECT_EQ(written, dir_.file(kHfStatsFileName));
  const EmbeddedStats where = find_embedded_stats(hf);
  EXPECT_EQ(where.kind, EmbeddedStats::Kind::HfFile);
  EXPECT_EQ(where.path, written);
  const std::string e = error_of([&] { write_stats_beside_hf(hf, d.stats, d.info, false); });
  EXPECT_NE(e.find("already holds TriAttention statistics"), std::string::npos) << e;
  write_stats_beside_hf(hf, d.stats, d.info, true);
  const auto reloaded = Model::load(hf, {.repack = false, .threads = 1});
  for (const std::string& w : reloaded->warnings()) EXPECT_EQ(w.find("not used"), std::string::npos) << w;
  const auto loaded = load_embedded_stats(*reloaded, nullptr);
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(same_floats(loaded->q_mean_real, d.stats.q_mean_real));
}

}  // namespace stats_in_model_test
