// Gemma 4 on the tiny preset (8 layers, 5 and 7 full): the sliding and full layers keep KV
// streams of their own shapes (sliding 2 heads of 16, full 1 head of 32 with V = K), a
// prompt fed in chunks of any size gives the logits of feeding it one token at a time (the
// sliding layers' caches trimmed to their window between calls), and the GGUF and HF copies
// load to the same configuration. The logits themselves are checked against an independent
// reference in tests/reference/test_gemma4_reference.py.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/temp_dir.h"
#include "core/error.h"
#include "model/forward.h"
#include "model/forward_test_util.h"
#include "model/kv_shape.h"
#include "model/maker.h"
#include "model/model.h"

namespace triattn {
namespace {

std::shared_ptr<const Model> gemma4_load(const std::string& format) {
  static test::TempDir dir;
  const std::string path = dir.file(format == "gguf" ? "tiny-gemma4.gguf" : "tiny-gemma4-hf");
  if (format == "gguf")
    write_random_gguf(model_preset("tiny-gemma4"), MakerOptions{DType::F32, 7}, path);
  else
    write_random_hf(model_preset("tiny-gemma4"), MakerOptions{DType::F32, 7}, path);
  return Model::load(path);
}

std::vector<int32_t> gemma4_tokens(size_t n) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(3 + (i * 37) % 500);
  return ids;
}

TEST(Gemma4Forward, LayerShapesFromBothFormats) {
  for (const char* format : {"gguf", "hf"}) {
    const std::shared_ptr<const Model> model = gemma4_load(format);
    const ModelConfig& c = model->config();
    SCOPED_TRACE(format);
    EXPECT_EQ(c.full_attention_layers(), (std::vector<int>{5, 7}));
    EXPECT_EQ(c.layer_head_dim(0), 16);
    EXPECT_EQ(c.layer_kv_heads(0), 2);
    EXPECT_EQ(c.layer_head_dim(5), 32);
    EXPECT_EQ(c.layer_kv_heads(5), 1);
    EXPECT_TRUE(c.v_from_k(5));
    EXPECT_FALSE(c.v_from_k(0));
    EXPECT_TRUE(c.v_norm);
    EXPECT_TRUE(c.layer_scale);
    EXPECT_EQ(c.query_scale, 1.0f);
    // Proportional RoPE: a quarter of the full layers' 16 pairs rotate, the rest stand still.
    const std::vector<float> f = c.rope_freqs(5);
    ASSERT_EQ(f.size(), 16u);
    EXPECT_EQ(f[0], 1.0f);
    EXPECT_GT(f[3], 0.0f);
    EXPECT_LT(f[4], 1e-20f);
    EXPECT_EQ(c.rope_freqs(0).size(), 8u);  // sliding: all of its 16 coordinates
  }
}

TEST(Gemma4Forward, CacheStreamsHaveEachLayersShape) {
  const std::shared_ptr<const Model> model = gemma4_load("gguf");
  const ModelConfig& c = model->config();
  Forward fwd(*model, nullptr);
  KvCache cache(kv_cache_shape(c, DType::F16));
  ASSERT_EQ(cache.shape().n_kv_heads, 2);
  const std::vector<int32_t> ids = gemma4_tokens(20);
  ForwardItem item{&cache, ids, ForwardItem::Logits::Last};
  std::vector<std::vector<float>> out;
  fwd.run(std::span<const ForwardItem>(&item, 1), out);
  for (int l = 0; l < c.n_layers; ++l) {
    SCOPED_TRACE(l);
    EXPECT_EQ(cache.row_bytes(l), static_cast<size_t>(2 * c.layer_head_dim(l)));
    // Sliding layers keep their window (8) less one: the next query sees 8 keys with itself.
    const int64_t kept = c.is_sliding(l) ? 7 : 20;
    EXPECT_EQ(cache.size(l, 0), kept);
    EXPECT_EQ(cache.size(l, 1), c.is_sliding(l) ? kept : 0);  // a full layer has one KV head
  }
  EXPECT_EQ(cache.bytes_in_use(), static_cast<size_t>(2 * (6 * 7 * 2 * 32 + 2 * 20 * 1 * 64)));
  // The reservation lays out each stream with its own rows.
  KvCache reserved(kv_cache_shape(c, DType::F16), 32);
  ForwardItem again{&reserved, ids, ForwardItem::Logits::Last};
  std::vector<std::vector<float>> out2;
  fwd.run(std::span<const ForwardItem>(&again, 1), out2);
  EXPECT_EQ(out2[0], out[0]);
}

TEST(Gemma4Forward, ChunkedPrefillEqualsTokenByTokenDecode) {
  for (const char* format : {"gguf", "hf"}) {
    SCOPED_TRACE(format);
    const std::shared_ptr<const Model> model = gemma4_load(format);
    const ModelConfig& c = model->config();
    Forward fwd(*model, nullptr);
    const std::vector<int32_t> ids = gemma4_tokens(40);  // five windows of the sliding layers
    const std::vector<float> decode = test::run_all(fwd, c, ids, /*one_by_one=*/true);
    const std::vector<float> prefill = test::run_all(fwd, c, ids, /*one_by_one=*/false);
    EXPECT_LT(test::rel_diff(prefill, decode), 1e-5f);
    for (size_t chunk : {3, 8, 13}) {
      KvCache cache(kv_cache_shape(c, DType::F32));
      std::vector<float> all;
      std::vector<std::vector<float>> out;
      for (size_t s = 0; s < ids.size(); s += chunk) {
        ForwardItem item{&cache, std::span<const int32_t>(ids).subspan(s, std::min(chunk, ids.size() - s)),
                         ForwardItem::Logits::All};
        fwd.run(std::span<const ForwardItem>(&item, 1), out);
        all.insert(all.end(), out[0].begin(), out[0].end());
      }
      EXPECT_LT(test::rel_diff(all, decode), 1e-5f) << "chunks of " << chunk;
    }
  }
}

// The published 31B shape: the sliding and full layers' KV streams differ in heads and size.
TEST(Gemma4Forward, Preset31bShape) {
  const ModelConfig c = model_preset("gemma-4-31b");
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.full_attention_layers().size(), 10u);
  EXPECT_EQ(c.max_head_dim(), 512);
  EXPECT_EQ(c.max_kv_heads(), 16);
  const KvCacheShape s = kv_cache_shape(c, DType::F16);
  EXPECT_EQ(s.n_kv_heads, 16);
  EXPECT_EQ(s.head_dim, 512);
  EXPECT_EQ(s.kv_heads(0), 16);
  EXPECT_EQ(s.dim(0), 256);
  EXPECT_EQ(s.kv_heads(5), 4);
  EXPECT_EQ(s.dim(5), 512);
  EXPECT_EQ(c.rope_freqs(5).size(), 256u);
  EXPECT_EQ(c.rope_freqs(5)[63] > 0, true);
  EXPECT_EQ(c.rope_freqs(5)[64], 0.0f);  // 64 of the 256 pairs rotate
}

// The variants not run yet are refused by name, not loaded as a dense model.
TEST(Gemma4Forward, RefusesWhatItDoesNotRun) {
  test::TempDir dir;
  const std::string path = dir.file("hf");
  write_random_hf(model_preset("tiny-gemma4"), MakerOptions{DType::F32, 7}, path);
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* says;
  };
  const Case cases[] = {{"num_kv_shared_layers", 2, "KV sharing"},
                        {"hidden_size_per_layer_input", 16, "per-layer embeddings"},
                        {"enable_moe_block", true, "enable_moe_block"}};
  for (const auto& [key, value, says] : cases) {
    std::ifstream in(path + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    cfg["text_config"][key] = value;
    std::ofstream(path + "/config.json") << cfg.dump();
    try {
      Model::load(path);
      ADD_FAILURE() << key << " was not refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    cfg["text_config"].erase(key);
    std::ofstream(path + "/config.json") << cfg.dump();
  }
  EXPECT_NO_THROW(Model::load(path));
}

}  // namespace
}  // namespace triattn
