// Hugging Face directories through Model::load: config.json values are refused by file, key
// and expectation; the config's layer count must match the checkpoint's layers; tensors the
// loader does not use are reported as warnings.
#include <gtest/gtest.h>

#include "common/temp_dir.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/safetensors.h"
#include "model/maker.h"
#include "model/model.h"
#include "model_test_util.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;
using test::TempDir;


// A random tiny-llama HF directory (f32) with `layers` layers.
std::string make_hf(const TempDir& dir, int layers = 2) {
  ModelConfig c = model_preset("tiny-llama");
  c.n_layers = layers;
  MakerOptions opt;
  opt.weight_type = DType::F32;
  const std::string path = (dir / "hf").string();
  write_random_hf(c, opt, path);
  return path;
}

nlohmann::json read_config(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "config.json");
  return nlohmann::json::parse(in);
}

void write_config(const std::string& dir, const nlohmann::json& cfg) {
  std::ofstream(fs::path(dir) / "config.json", std::ios::trunc) << cfg.dump(2);
}

// The load error after config.json's `key` is set to `value` (erased when value is
// "<erase>"); config.json is restored afterwards.
std::string error_with(const std::string& dir, const std::string& key, const nlohmann::json& value) {
  const nlohmann::json original = read_config(dir);
  nlohmann::json cfg = original;
  if (value == "<erase>") {
    cfg.erase(key);
  } else {
    cfg[key] = value;
  }
  write_config(dir, cfg);
  const std::string msg = test::load_error_of(dir);
  write_config(dir, original);
  return msg;
}

TEST(LoadHfConfig, EveryBadValueNamesFileKeyAndExpectation) {
  TempDir tmp;
  const std::string dir = make_hf(tmp);
  const std::string cfg = dir + "/config.json";
  ASSERT_EQ(test::load_error_of(dir), "");
  EXPECT_EQ(error_with(dir, "hidden_size", "<erase>"), cfg + ": 'hidden_size' is missing");
  EXPECT_EQ(error_with(dir, "hidden_size", "abc"), cfg + ": 'hidden_size' must be a positive integer, got \"abc\"");
  EXPECT_EQ(error_with(dir, "hidden_size", 64.5), cfg + ": 'hidden_size' must be a positive integer, got 64.5");
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 0), cfg + ": 'num_hidden_layers' must be a positive integer, got 0");
  EXPECT_EQ(error_with(dir, "num_attention_heads", -4),
            cfg + ": 'num_attention_heads' must be a positive integer, got -4");
  EXPECT_EQ(error_with(dir, "intermediate_size", "128"),
            cfg + ": 'intermediate_size' must be a positive integer, got \"128\"");
  EXPECT_EQ(error_with(dir, "vocab_size", "<erase>"), cfg + ": 'vocab_size' is missing");
  EXPECT_EQ(error_with(dir, "head_dim", 16.5), cfg + ": 'head_dim' must be a positive integer, got 16.5");
  // Context lengths too: refused, not truncated or taken as "none".
  EXPECT_EQ(error_with(dir, "max_position_embeddings", 0),
            cfg + ": 'max_position_embeddings' must be a positive integer, got 0");
  EXPECT_EQ(error_with(dir, "max_position_embeddings", 512.5),
            cfg + ": 'max_position_embeddings' must be a positive integer, got 512.5");
  EXPECT_EQ(error_with(dir, "rms_norm_eps", "1e-5"), cfg + ": 'rms_norm_eps' must be a positive number, got \"1e-5\"");
  EXPECT_EQ(error_with(dir, "rope_theta", 0), cfg + ": 'rope_theta' must be a positive number, got 0");
  EXPECT_EQ(error_with(dir, "tie_word_embeddings", "no"), cfg + ": 'tie_word_embeddings' must be true or false, got \"no\"");
  EXPECT_EQ(error_with(dir, "model_type", "<erase>"), cfg + ": 'model_type' is missing");
  EXPECT_EQ(error_with(dir, "rope_scaling", nlohmann::json{{"rope_type", "linear"}, {"factor", "4"}}),
            cfg + ": 'rope_scaling.factor' must be a positive number, got \"4\"");
  EXPECT_EQ(error_with(dir, "rope_scaling", nlohmann::json{{"rope_type", "llama3"}, {"factor", 8},
                                                           {"original_max_position_embeddings", -1}}),
            cfg + ": 'rope_scaling.original_max_position_embeddings' must be a positive integer, got -1");
  // A whole number spelled as a float is still that number.
  EXPECT_EQ(error_with(dir, "hidden_size", 64.0), "");
}

TEST(LoadHfConfig, HeadDimIsNeverTruncated) {
  TempDir tmp;
  const std::string dir = make_hf(tmp);
  nlohmann::json cfg = read_config(dir);
  cfg.erase("head_dim");
  cfg["num_attention_heads"] = 3;
  cfg["num_key_value_heads"] = 3;
  write_config(dir, cfg);
  EXPECT_EQ(test::load_error_of(dir), dir + "/config.json: 'hidden_size' 64 is not a multiple of 'num_attention_heads' 3 and "
                                 "'head_dim' is not given");
}

TEST(LoadHfConfig, CrossFieldProblemsNameTheFile) {
  TempDir tmp;
  const std::string dir = make_hf(tmp);
  EXPECT_EQ(error_with(dir, "num_key_value_heads", 3),
            dir + "/config.json: n_heads (4) is not a multiple of n_kv_heads (3)");
}

// Values that would size allocations are capped before anything is allocated.
TEST(LoadHfConfig, AbsurdSizesAreRefusedBeforeAllocating) {
  TempDir tmp;
  const std::string dir = make_hf(tmp);
  const std::string cfg = dir + "/config.json";
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 1000000000),
            cfg + ": 'num_hidden_layers' must be a positive integer no larger than 4096, got 1000000000");
  EXPECT_EQ(error_with(dir, "vocab_size", 2147483647),
            cfg + ": 'vocab_size' must be a positive integer no larger than 16777216, got 2147483647");
  EXPECT_EQ(error_with(dir, "hidden_size", 4294967296),
            cfg + ": 'hidden_size' must be a positive integer no larger than 1048576, got 4294967296");
  EXPECT_EQ(error_with(dir, "max_position_embeddings", 1e18),
            cfg + ": 'max_position_embeddings' must be a positive integer no larger than 2147483647, got 1e+18");
  // In range but not what the checkpoint holds: named by the tensor, never an allocation failure.
  EXPECT_NE(error_with(dir, "vocab_size", 16777216).find("token embedding"), std::string::npos);
  EXPECT_NE(error_with(dir, "intermediate_size", 4194304).find("ffn_gate"), std::string::npos);
}

TEST(LoadHfConfig, LayerCountMustMatchTheCheckpoint) {
  TempDir tmp;
  const std::string dir = make_hf(tmp, 4);
  const std::string st = dir + "/model.safetensors";
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 2),
            dir + "/config.json says 2 layers but " + st + " holds tensors for 4 (model.layers.0-3)");
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 6),
            dir + "/config.json says 6 layers but " + st + " holds tensors for 4 (model.layers.0-3)");
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 1),
            dir + "/config.json says 1 layer but " + st + " holds tensors for 4 (model.layers.0-3)");
  EXPECT_EQ(test::load_error_of(dir), "");
}

// Rewrites model.safetensors with `extra` f32 [4] tensors added (through a temporary file:
// the open mapping must not change under the reader).
void add_tensors(const std::string& dir, const std::vector<std::string>& extra, const std::string& drop = "") {
  const std::string path = dir + "/model.safetensors";
  {
    auto f = SafetensorsFile::open(path);
    SafetensorsWriter w;
    for (const SafetensorsTensor& t : f->tensors())
      if (t.name != drop) w.add(t.name, t.type, t.shape, t.data, t.nbytes);
    const float four[4] = {1, 2, 3, 4};
    for (const std::string& name : extra) w.add(name, DType::F32, {4}, four, sizeof four);
    w.write(path + ".new");
  }
  fs::rename(path + ".new", path);
}

TEST(LoadHfConfig, UnusedTensorsAreReportedAsWarnings) {
  TempDir tmp;
  const std::string dir = make_hf(tmp);
  const std::string st = dir + "/model.safetensors";
  EXPECT_TRUE(Model::load(dir)->warnings().empty());
  add_tensors(dir, {"model.layers.1.self_attn.rotary_emb.inv_freq"});
  auto one = Model::load(dir);
  ASSERT_EQ(one->warnings().size(), 1u);
  EXPECT_EQ(one->warnings()[0], st + ": 1 tensor not used: model.layers.1.self_attn.rotary_emb.inv_freq");
  add_tensors(dir, {"a.weight", "b.weight", "c.weight", "d.weight", "e.weight", "f.weight"});
  auto many = Model::load(dir);
  ASSERT_EQ(many->warnings().size(), 1u);
  EXPECT_EQ(many->warnings()[0], st + ": 7 tensors not used: a.weight, b.weight, c.weight, d.weight, e.weight and 2 more");
  // A tensor of a layer past the config's count is a layer-count mismatch, not a warning.
  add_tensors(dir, {"model.layers.2.mlp.up_proj.weight"});
  EXPECT_EQ(test::load_error_of(dir), dir + "/config.json says 2 layers but " + st + " holds tensors for 3 (model.layers.0-2)");
}

TEST(LoadHfConfig, LayerGapsAreNamed) {
  TempDir tmp;
  const std::string dir = make_hf(tmp, 3);
  add_tensors(dir, {"model.layers.5.mlp.up_proj.weight"});
  EXPECT_EQ(error_with(dir, "num_hidden_layers", 4),
            dir + "/config.json says 4 layers but " + dir +
                "/model.safetensors holds tensors for 4 (model.layers.0-2, 5); expected model.layers.0-3");
}

TEST(LoadHfConfig, RealDirectoriesLoadWithoutWarnings) {
  const std::string shared = TRIATTN_SHARED_DIR;
  for (const char* dir : {"/models/tinystories-656k", "/models/bytelm-2k"}) {
    auto m = Model::load(shared + dir);
    EXPECT_TRUE(m->warnings().empty()) << dir << ": " << m->warnings().at(0);
  }
}

}  // namespace
}  // namespace triattn
