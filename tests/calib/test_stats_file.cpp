// The safetensors stats file: round trip, metadata, mismatch refusals, malformed files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "calib/stats_file.h"
#include "calib_test_util.h"
#include "formats/safetensors.h"
#include "model/model.h"

using namespace triattn;
using triattn::test::error_of;
using calib_test::random_stats;
using calib_test::temp_path;

namespace {

ModelConfig config(const std::string& name, int L, int H, int Hkv, int d) {
  return calib_test::model_config(name, L, H, Hkv, d);
}

std::string write(const std::string& name, const ModelConfig& c, unsigned seed = 1) {
  const std::string path = temp_path(name);
  const std::vector<int32_t> toks = {1, 2, 3};
  write_stats_file(path, random_stats(c, seed), stats_info_for(c, 1234, fnv1a64_tokens(toks)));
  return path;
}

}  // namespace

TEST(StatsFile, Fnv1aOfTokenIds) {
  EXPECT_EQ(fnv1a64_tokens({}), 0xcbf29ce484222325ull);
  const std::vector<int32_t> t = {1, -2, 300};
  EXPECT_EQ(fnv1a64_tokens(t), 0xd138c7a1bb0bcd62ull);  // FNV-1a 64 of their LE int32 bytes
  EXPECT_EQ(format_input_hash(0xabcull), "fnv1a64:0000000000000abc");
}

TEST(StatsFile, RoundTripKeepsEveryValueAndTheIdentity) {
  const ModelConfig c = config("tiny", 2, 8, 4, 16);
  const HeadStats s = random_stats(c, 7);
  const std::string path = temp_path("roundtrip.safetensors");
  const std::vector<int32_t> toks = {5, 6, 7};
  write_stats_file(path, s, stats_info_for(c, 3, fnv1a64_tokens(toks)));

  const LoadedStats l = read_stats_any(path);
  EXPECT_FALSE(l.official_pt);
  EXPECT_EQ(l.stats->q_mean_real, s.q_mean_real);
  EXPECT_EQ(l.stats->q_mean_imag, s.q_mean_imag);
  EXPECT_EQ(l.stats->q_abs_mean, s.q_abs_mean);
  EXPECT_EQ(l.stats->k_mean_real, s.k_mean_real);
  EXPECT_EQ(l.stats->k_mean_imag, s.k_mean_imag);
  EXPECT_EQ(l.stats->k_abs_mean, s.k_abs_mean);
  EXPECT_EQ(l.info.architecture, "llama");
  EXPECT_EQ(l.info.model_name, "tiny");
  EXPECT_EQ(l.info.n_kv_heads, 4);
  EXPECT_EQ(l.info.token_count, 3);
  EXPECT_EQ(l.info.input_hash, format_input_hash(fnv1a64_tokens(toks)));
  EXPECT_EQ(l.info.rope_scaling, "none");
  EXPECT_EQ(l.info.rope_freqs, c.rope_freqs());
  EXPECT_DOUBLE_EQ(l.info.rope_theta, 10000.0);
  auto loaded = load_stats(path, c);
  EXPECT_EQ(loaded->n_layers, 2);
  EXPECT_EQ(loaded->n_kv_heads, 4);

  // The file itself: the tensor names (docs/design.md, Contracts) and shapes, metadata, and the
  // derived R_f.
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->metadata().at("format"), "triattn-stats");
  EXPECT_EQ(f->metadata().at("format_version"), "2");
  EXPECT_EQ(f->metadata().at("head_dim"), "16");
  EXPECT_EQ(f->find("q_abs_mean")->shape, (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(f->find("k_mean_real")->shape, (std::vector<int64_t>{2, 4, 8}));
  const float* mrl = static_cast<const float*>(f->find("q_mrl")->data);
  EXPECT_NEAR(mrl[5], std::hypot(s.q_mean_real[5], s.q_mean_imag[5]) / s.q_abs_mean[5], 1e-6);
}

TEST(StatsFile, StatsOfAnotherModelAreRefusedNamingEachField) {
  // stories260k's shape (5 layers, head_dim 8) loaded for TinyStories-656K (2 layers, head_dim 16).
  const std::string path = write("stories.safetensors", config("stories260K", 5, 8, 4, 8));
  const std::string msg = error_of([&] { load_stats(path, config("tinystories-656k", 2, 8, 4, 16)); });
  EXPECT_NE(msg.find("n_layers 5 (model: 2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("head_dim 8 (model: 16)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stories260K"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(msg.find("n_heads"), std::string::npos) << msg;  // only real mismatches are named
}

TEST(StatsFile, RopeAndArchitectureMismatchesAreRefused) {
  const ModelConfig c = config("m", 2, 4, 2, 8);
  const std::string path = write("rope.safetensors", c);
  ModelConfig other = c;
  other.rope_theta = 500000.0f;
  std::string msg = error_of([&] { load_stats(path, other); });
  EXPECT_NE(msg.find("rope_theta 10000 (model: 500000)"), std::string::npos) << msg;

  other = c;
  other.rope_scaling.type = RopeScalingType::Linear;
  other.rope_scaling.factor = 4.0f;
  msg = error_of([&] { load_stats(path, other); });
  EXPECT_NE(msg.find("rope scaling 'none' (model: 'linear factor=4"), std::string::npos) << msg;

  other = c;
  other.arch = "qwen2";
  other.n_kv_heads = 1;
  msg = error_of([&] { load_stats(path, other); });
  EXPECT_NE(msg.find("architecture 'llama' (model: 'qwen2')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n_kv_heads 2 (model: 1)"), std::string::npos) << msg;
}

TEST(StatsFile, RealModelsStories260kStatsAreRefusedForTinyStories) {
  const std::string shared = TRIATTN_SHARED_DIR;
  const std::string stories = shared + "/models/stories260k/stories260K.bin";
  const std::string tiny = shared + "/models/tinystories-656k";
  // The shared models are part of the test: missing, it fails (never a skip).
  ASSERT_TRUE(std::filesystem::exists(stories)) << stories << " is missing";
  ASSERT_TRUE(std::filesystem::exists(tiny)) << tiny << " is missing";
  const auto a = Model::load(stories);
  const auto b = Model::load(tiny);
  const std::string path = write("real.safetensors", a->config());
  const std::string msg = error_of([&] { load_stats(path, b->config()); });
  EXPECT_NE(msg.find("head_dim 8 (model: 16)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n_layers 5 (model: 2)"), std::string::npos) << msg;
  EXPECT_NO_THROW(load_stats(path, a->config()));
}

TEST(StatsFile, MalformedFilesAreErrors) {
  const ModelConfig c = config("m", 2, 4, 2, 8);
  // Not a stats file: a safetensors without our format name.
  const std::string other = temp_path("other.safetensors");
  {
    SafetensorsWriter w;
    const float x[2] = {1, 2};
    w.add("q_mean_real", DType::F32, {2}, x, sizeof x);
    w.write(other);
  }
  EXPECT_NE(error_of([&] { load_stats(other, c); }).find("not a triattn stats file"), std::string::npos);

  // A tensor with the wrong shape.
  const std::string bad_shape = temp_path("badshape.safetensors");
  {
    SafetensorsWriter w;
    w.set_metadata("format", "triattn-stats");
    w.set_metadata("format_version", "1");
    w.set_metadata("architecture", "llama");
    w.set_metadata("n_layers", "2");
    w.set_metadata("n_heads", "4");
    w.set_metadata("n_kv_heads", "2");
    w.set_metadata("head_dim", "8");
    w.set_metadata("rope_theta", "10000");
    w.set_metadata("rope_scaling", "none");
    w.set_metadata("rope_attn_factor", "1");
    w.set_metadata("token_count", "1000");
    w.set_metadata("input_hash", "fnv1a64:0");
    std::vector<float> v(2 * 4 * 3);
    w.add("q_mean_real", DType::F32, {2, 4, 3}, v.data(), v.size() * 4);
    w.write(bad_shape);
  }
  const std::string msg = error_of([&] { load_stats(bad_shape, c); });
  EXPECT_NE(msg.find("'q_mean_real' has shape [2,4,3], expected [2,4,4]"), std::string::npos) << msg;

  // A newer format version.
  const std::string good = write("good.safetensors", c);
  {
    auto f = SafetensorsFile::open(good);
    SafetensorsWriter w;
    for (const auto& [k, v] : f->metadata()) w.set_metadata(k, v);
    w.set_metadata("format_version", "9");
    for (const auto& t : f->tensors()) w.add(t.name, t.type, t.shape, t.data, t.nbytes);
    w.write(temp_path("v9.safetensors"));
  }
  EXPECT_NE(error_of([&] { load_stats(temp_path("v9.safetensors"), c); }).find("version 9"), std::string::npos);

  // Truncated file, garbage, missing file.
  const std::string trunc = temp_path("trunc.safetensors");
  std::filesystem::copy_file(good, trunc, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(trunc, std::filesystem::file_size(good) - 40);
  EXPECT_THROW(load_stats(trunc, c), Error);
  const std::string junk = temp_path("junk.bin");
  std::ofstream(junk) << "this is not a stats file at all";
  EXPECT_THROW(load_stats(junk, c), Error);
  EXPECT_NE(error_of([&] { load_stats(temp_path("nope.safetensors"), c); }).find("nope.safetensors"), std::string::npos);
}

// Every metadata field is range-checked: a NaN rope_theta compared unequal to nothing and so
// passed the match check; n_layers beyond int narrowed silently (4294967298 -> 2).
TEST(StatsFile, MetadataOutOfRangeIsRefusedNamingTheField) {
  const ModelConfig c = config("m", 2, 4, 2, 8);
  const std::string good = write("meta_good.safetensors", c);
  struct Case {
    const char* key;
    const char* value;
    const char* expect;
  } cases[] = {
      {"n_layers", "4294967298", "'n_layers' is 4294967298, outside 1..1048576"},
      {"n_heads", "0", "'n_heads' is 0, outside 1..1048576"},
      {"head_dim", "7", "'head_dim' is 7 (must be even"},
      {"head_dim", " 8", "'head_dim' is not an integer: ' 8'"},
      {"n_kv_heads", "99999999999999999999", "'n_kv_heads' is not an integer"},
      {"rope_theta", "nan", "'rope_theta' is nan (must be finite and positive)"},
      {"rope_theta", "-10000", "'rope_theta' is -10000 (must be finite and positive)"},
      {"rope_attn_factor", "inf", "'rope_attn_factor' is inf (must be finite and positive)"},
      {"token_count", "-3", "'token_count' is -3, outside 0.."},
      {"token_count", "1", "calibrated on 1 token(s), fewer than the 2 needed"},
      {"format_version", "0", "'format_version' is 0, outside 1.."},
      {"pairing", "interleaved", "'pairing' is 'interleaved'; only \"half\""},
  };
  for (const Case& k : cases) {
    const std::string path = temp_path(std::string("meta_") + k.key + ".safetensors");
    calib_test::rewrite_safetensors(good, path, [&](auto& m) { m[k.key] = k.value; });
    const std::string msg = error_of([&] { load_stats(path, c); });
    EXPECT_NE(msg.find(k.expect), std::string::npos) << k.key << "=" << k.value << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
}

TEST(StatsFile, FingerprintRoundTripsAndVersionOneStillLoads) {
  const ModelConfig c = config("m", 2, 4, 2, 8);
  StatsInfo info = stats_info_for(c, 500, 7);
  for (int i = 0; i < 256; ++i) info.weights_fingerprint.push_back(std::sin(0.1f * i));
  const std::string path = temp_path("fp.safetensors");
  write_stats_file(path, random_stats(c, 3), info);
  const LoadedStats l = read_stats_any(path);
  EXPECT_EQ(l.format_version, 2);
  EXPECT_EQ(l.info.weights_fingerprint, info.weights_fingerprint);

  // A version-1 file (no fingerprint tensor) from an older build reads as before.
  const std::string v1 = temp_path("v1.safetensors");
  calib_test::rewrite_safetensors(
      path, v1, [](auto& m) { m["format_version"] = "1"; },
      [](const std::string& name, std::vector<float>&) { return name != "weights_fingerprint"; });
  const LoadedStats old = read_stats_any(v1);
  EXPECT_EQ(old.format_version, 1);
  EXPECT_TRUE(old.info.weights_fingerprint.empty());
  EXPECT_EQ(old.stats->q_mean_real, l.stats->q_mean_real);
  EXPECT_NO_THROW(load_stats(v1, c));

  // A fingerprint of another length is damage, not an unknown scheme to skip.
  const std::string short_fp = temp_path("short_fp.safetensors");
  {
    auto f = SafetensorsFile::open(path);
    SafetensorsWriter w;
    for (const auto& [k, v] : f->metadata()) w.set_metadata(k, v);
    for (const auto& t : f->tensors())
      if (t.name != "weights_fingerprint") w.add(t.name, t.type, t.shape, t.data, t.nbytes);
    w.add("weights_fingerprint", DType::F32, {8}, info.weights_fingerprint.data(), 32);
    w.write(short_fp);
  }
  const std::string msg = error_of([&] { read_stats_any(short_fp); });
  EXPECT_NE(msg.find("'weights_fingerprint' has shape [8], expected [256]"), std::string::npos) << msg;
}
