// Model::load over every format: configs read right, layouts fixed, bad inputs named.
#include <gtest/gtest.h>

#include "common/temp_dir.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/forward.h"
#include "model/maker.h"
#include "model/model.h"
#include "model_test_util.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;
const std::string kShared = TRIATTN_SHARED_DIR;


using test::TempDir;

std::vector<float> last_logits(const Model& m, const std::vector<int32_t>& ids) {
  const ModelConfig& c = m.config();
  KvCache cache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, DType::F32});
  Forward fwd(m, nullptr);
  ForwardItem item{&cache, ids, ForwardItem::Logits::Last};
  std::vector<std::vector<float>> out;
  fwd.run(std::span<const ForwardItem>(&item, 1), out);
  return out[0];
}

TEST(ModelLoad, RealModelsHaveTheirDocumentedShapes) {
  auto hf = Model::load(kShared + "/models/tinystories-656k");
  auto gguf = Model::load(kShared + "/models/tinystories-656k/TinyStories-656K-Q8_0.gguf");
  auto l2c = Model::load(kShared + "/models/stories260k/stories260K.bin");
  for (const Model* m : {hf.get(), gguf.get()}) {
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.arch, "llama");
    EXPECT_EQ(c.n_layers, 2);
    EXPECT_EQ(c.n_embd, 128);
    EXPECT_EQ(c.n_heads, 8);
    EXPECT_EQ(c.n_kv_heads, 4);
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.vocab_size, 2048);
    EXPECT_EQ(c.context_length, 512);
    EXPECT_TRUE(c.tied_embeddings);
    EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  }
  EXPECT_EQ(gguf->weight_type_name(), "q8_0");
  EXPECT_EQ(hf->weight_type_name(), "f32");
  EXPECT_EQ(l2c->config().n_layers, 5);
  EXPECT_EQ(l2c->config().head_dim, 8);
  EXPECT_EQ(l2c->config().vocab_size, 512);
  EXPECT_FLOAT_EQ(l2c->config().rms_eps, 1e-5f);
}

// The same random weights as GGUF (llama q/k rows permuted, as llama.cpp's converter writes
// them) and as an HF directory give the same logits once the loader un-permutes.
TEST(ModelLoad, GgufAndHfCopiesOfOneModelAgreeForEveryArchitecture) {
  for (const char* preset : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
    TempDir dir;
    MakerOptions opt;
    opt.weight_type = DType::F32;
    write_random_gguf(model_preset(preset), opt, (dir / "m.gguf").string());
    write_random_hf(model_preset(preset), opt, (dir / "hf").string());
    auto a = Model::load((dir / "m.gguf").string());
    auto b = Model::load((dir / "hf").string());
    EXPECT_EQ(a->config().qkv_bias, std::string(preset) == "tiny-qwen2");
    EXPECT_EQ(a->config().qk_norm, std::string(preset) == "tiny-qwen3");
    EXPECT_EQ(b->config().qkv_bias, a->config().qkv_bias);
    EXPECT_EQ(b->config().qk_norm, a->config().qk_norm);
    const std::vector<int32_t> ids = {1, 40, 41, 300, 7, 99, 12};
    const auto la = last_logits(*a, ids), lb = last_logits(*b, ids);
    ASSERT_EQ(la.size(), lb.size());
    float diff = 0, scale = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      diff = std::max(diff, std::fabs(la[i] - lb[i]));
      scale = std::max(scale, std::fabs(lb[i]));
    }
    EXPECT_LT(diff, 1e-5f * scale + 1e-6f) << preset;
  }
}

TEST(ModelLoad, BadPathsAndFormatsAreNamed) {
  EXPECT_NE(test::load_error_of("/nonexistent/model.gguf").find("no such file"), std::string::npos);
  TempDir dir;
  fs::create_directories(dir / "empty");
  EXPECT_NE(test::load_error_of((dir / "empty").string()).find("config.json"), std::string::npos);
  std::ofstream(dir / "notes.txt") << "hello";
  EXPECT_NE(test::load_error_of((dir / "notes.txt").string()).find("unknown model format"), std::string::npos);
}

TEST(ModelLoad, UnsupportedArchitectureAndMissingTensorsAreNamed) {
  TempDir dir;
  MakerOptions opt;
  opt.weight_type = DType::F32;
  write_random_hf(model_preset("tiny-llama"), opt, (dir / "hf").string());
  // Unsupported model_type.
  {
    std::ifstream in(dir / "hf" / "config.json");
    std::string cfg((std::istreambuf_iterator<char>(in)), {});
    const auto pos = cfg.find("\"llama\"");
    ASSERT_NE(pos, std::string::npos);
    std::string bad = cfg;
    bad.replace(pos, 7, "\"gpt_neox\"");
    std::ofstream(dir / "hf" / "config.json") << bad;
    EXPECT_NE(test::load_error_of((dir / "hf").string()).find("gpt_neox"), std::string::npos);
    std::ofstream(dir / "hf" / "config.json") << cfg;
  }
  // A config that promises more layers than the checkpoint holds names both counts.
  {
    std::ifstream in(dir / "hf" / "config.json");
    std::string cfg((std::istreambuf_iterator<char>(in)), {});
    const auto pos = cfg.find("\"num_hidden_layers\": 2");
    ASSERT_NE(pos, std::string::npos) << cfg;
    cfg.replace(pos, 22, "\"num_hidden_layers\": 3");
    std::ofstream(dir / "hf" / "config.json") << cfg;
    const std::string msg = test::load_error_of((dir / "hf").string());
    EXPECT_NE(msg.find("config.json says 3 layers but "), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.safetensors holds tensors for 2 (model.layers.0-1)"), std::string::npos) << msg;
  }
}

// Greedy continuation of `prompt`, `n` tokens, one forward step per token.
std::vector<int32_t> greedy(const Model& m, std::vector<int32_t> prompt, int n) {
  const ModelConfig& c = m.config();
  KvCache cache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, DType::F32});
  Forward fwd(m, nullptr);
  std::vector<int32_t> out;
  std::vector<int32_t> feed = std::move(prompt);
  for (int i = 0; i < n; ++i) {
    ForwardItem item{&cache, feed, ForwardItem::Logits::Last};
    std::vector<std::vector<float>> logits;
    fwd.run(std::span<const ForwardItem>(&item, 1), logits);
    const auto& l = logits[0];
    const int32_t next = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    out.push_back(next);
    feed = {next};
  }
  return out;
}

// llama2.c's int8 export (version 2, groups of 32) loads, dequantized, as the same model as
// the fp32 export: logits close, greedy text the same for its first 40 tokens.
TEST(ModelLoad, Llama2cQ80ExportMatchesTheFp32One) {
  auto f = Model::load(kShared + "/models/stories260k/stories260K.bin");
  auto q = Model::load(kShared + "/models/stories260k/stories260K_q80.bin");
  EXPECT_EQ(q->config().n_layers, 5);
  EXPECT_EQ(q->config().head_dim, 8);
  EXPECT_EQ(q->config().vocab_size, 512);
  EXPECT_TRUE(q->config().tied_embeddings);
  EXPECT_EQ(q->weight_type_name(), "f32");
  EXPECT_TRUE(q->warnings().empty());
  const std::vector<int32_t> prompt = q->tokenizer().encode("Once upon a time", true);
  ASSERT_EQ(prompt, f->tokenizer().encode("Once upon a time", true));
  for (const std::vector<int32_t>& ids : {std::vector<int32_t>{1}, prompt, std::vector<int32_t>{1, 403, 407, 261, 378}}) {
    const auto lf = last_logits(*f, ids), lq = last_logits(*q, ids);
    ASSERT_EQ(lf.size(), lq.size());
    float diff = 0, scale = 0;
    for (size_t i = 0; i < lf.size(); ++i) {
      diff = std::max(diff, std::fabs(lf[i] - lq[i]));
      scale = std::max(scale, std::fabs(lf[i]));
    }
    // Measured 0.03-0.06 on logits of magnitude ~10-20: int8 weights, not a different model.
    EXPECT_LT(diff, 0.02f * scale) << ids.size() << " tokens";
    EXPECT_EQ(std::max_element(lf.begin(), lf.end()) - lf.begin(), std::max_element(lq.begin(), lq.end()) - lq.begin());
  }
  EXPECT_EQ(greedy(*q, prompt, 40), greedy(*f, prompt, 40));
}

TEST(ModelLoad, RopeScalingChangesFrequenciesAsDefined) {
  ModelConfig c = model_preset("llama-3.2-1b");
  const auto f = c.rope_freqs();
  ASSERT_EQ(f.size(), 32u);
  // llama3 scaling keeps short wavelengths and divides long ones by the factor (32).
  const double base0 = 1.0, last = std::pow(500000.0, -62.0 / 64);
  EXPECT_NEAR(f[0], base0, 1e-6);
  EXPECT_NEAR(f[31], last / 32, last * 1e-4);
  ModelConfig lin = model_preset("tiny-llama");
  lin.rope_scaling.type = RopeScalingType::Linear;
  lin.rope_scaling.factor = 4;
  const auto g = lin.rope_freqs();
  EXPECT_NEAR(g[1], std::pow(lin.rope_theta, -2.0 / lin.head_dim) / 4, 1e-7);
  EXPECT_FLOAT_EQ(lin.rope_attn_factor(), 1.0f);
  ModelConfig yarn = model_preset("tiny-llama");
  yarn.rope_scaling.type = RopeScalingType::Yarn;
  yarn.rope_scaling.factor = 4;
  EXPECT_NEAR(yarn.rope_attn_factor(), 0.1 * std::log(4.0) + 1, 1e-6);
}

}  // namespace
}  // namespace triattn

namespace triattn {
namespace {

// Corrupt files through the whole loader (formats, config, tokenizer, weight checks): every
// case either loads or raises Error; none crashes or throws anything else.
TEST(ModelLoad, CorruptGgufNeverCrashesTheLoader) {
  const std::string src = kShared + "/models/tinystories-656k/TinyStories-656K-Q8_0.gguf";
  std::ifstream in(src, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 50848u);
  TempDir dir;
  const std::string path = (dir / "bad.gguf").string();
  int errors = 0, loaded = 0;
  auto attempt = [&](const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(content.data(), static_cast<std::streamsize>(content.size()));
    try {
      Model::load(path);
      ++loaded;
    } catch (const Error&) {
      ++errors;
    }
  };
  for (size_t cut = 0; cut < bytes.size(); cut += (cut < 51000 ? 997 : 40009)) attempt(bytes.substr(0, cut));
  uint32_t state = 12345;
  for (int i = 0; i < 300; ++i) {
    state = state * 1664525u + 1013904223u;
    std::string b = bytes;
    const size_t at = (state >> 8) % 50848;  // metadata and tensor infos
    b[at] = static_cast<char>(b[at] ^ (1 + (state & 0x7f)));
    attempt(b);
  }
  // Any other exception type propagates and fails the test; a crash kills it.
  EXPECT_GT(errors, 50) << loaded << " corrupt copies loaded";
}

}  // namespace
}  // namespace triattn
