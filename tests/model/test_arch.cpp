// The architecture table (model/arch.h) and what it drives: names in both formats, the
// per-layer attention pattern, presets written and read back with the same config, and the
// sliding-window layers of a forward pass (prefill at once = token by token; their KV
// streams never hold more than the window after a step).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/temp_dir.h"
#include "core/error.h"
#include "model/arch.h"
#include "model/forward.h"
#include "model/maker.h"
#include "model/model.h"

namespace triattn {
namespace {

TEST(ArchTable, NamesAreUniqueAndFoundInBothFormats) {
  std::set<std::string> names, hf_types;
  for (const ArchInfo& a : architectures()) {
    EXPECT_TRUE(names.insert(std::string(a.name)).second) << a.name;
    EXPECT_EQ(find_arch(a.name), &a);
    ASSERT_FALSE(a.hf_types.empty()) << a.name;
    for (std::string_view t : a.hf_types) {
      EXPECT_TRUE(hf_types.insert(std::string(t)).second) << t;
      EXPECT_EQ(find_arch_hf(t), &a);
    }
    std::set<std::string> gguf_tensors, hf_tensors;
    for (const ArchTensor& t : a.tensors) {
      const bool per_layer = role_is_per_layer(t.role);
      EXPECT_EQ(std::string(t.gguf).find("{}") != std::string::npos, per_layer) << t.gguf;
      EXPECT_EQ(std::string(t.hf).find("{}") != std::string::npos, per_layer) << t.hf;
      EXPECT_TRUE(gguf_tensors.insert(t.gguf).second) << t.gguf;
      // gpt-oss's HF checkpoint fuses gate and up (and their biases) into one tensor: the up
      // roles repeat the gate's name, nothing else may.
      const bool fused_up = a.traits.hf_fused_experts && (t.role == TensorRole::UpExps || t.role == TensorRole::UpExpsBias);
      EXPECT_NE(hf_tensors.insert(t.hf).second, fused_up) << t.hf;
    }
  }
  EXPECT_EQ(find_arch("gpt2"), nullptr);
  EXPECT_EQ(find_arch_hf("mistral"), find_arch("llama"));
  EXPECT_THROW(arch_info("gpt2"), Error);
  const ArchInfo& g = arch_info("gemma2");
  EXPECT_EQ(tensor_name(g.tensors[1], TensorFormat::Gguf, 3), "blk.3.attn_norm.weight");
  EXPECT_EQ(tensor_name(g.tensors[1], TensorFormat::Hf, 3), "model.layers.3.input_layernorm.weight");
}

std::vector<int> sliding_layers(const ModelConfig& c) {
  std::vector<int> out;
  for (int l = 0; l < c.n_layers; ++l)
    if (c.is_sliding(l)) out.push_back(l);
  return out;
}

TEST(ArchTable, LayerPatterns) {
  EXPECT_TRUE(sliding_layers(model_preset("tiny-llama")).empty());
  EXPECT_TRUE(model_preset("qwen3-8b").layers.empty());
  const ModelConfig g2 = model_preset("gemma-2-2b");
  EXPECT_EQ(sliding_layers(g2).size(), 13u);
  EXPECT_TRUE(g2.is_sliding(0) && !g2.is_sliding(1) && g2.is_sliding(24) && !g2.is_sliding(25));
  EXPECT_EQ(g2.layer(0).window, 4096);
  const ModelConfig g3 = model_preset("gemma-3-4b");
  EXPECT_EQ(g3.full_attention_layers(), (std::vector<int>{5, 11, 17, 23, 29}));
  EXPECT_EQ(g3.layer(0).window, 1024);
  // Local layers: base 10000 unscaled; global: 1e6 with linear x8.
  const std::vector<float> local = g3.rope_freqs(0), global = g3.rope_freqs(5);
  EXPECT_FLOAT_EQ(local[1], static_cast<float>(std::pow(10000.0, -2.0 / 256)));
  EXPECT_FLOAT_EQ(global[1], static_cast<float>(std::pow(1e6, -2.0 / 256) / 8));
  ModelConfig cut = model_preset("gemma-3-4b");
  set_layer_count(cut, 2);
  EXPECT_EQ(cut.layers.size(), 2u);
  EXPECT_TRUE(cut.full_attention_layers().empty());
  set_layer_count(cut, 7);
  EXPECT_EQ(cut.full_attention_layers(), std::vector<int>{5});
}

void expect_same_config(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.sliding_window, b.sliding_window);
  EXPECT_EQ(sliding_layers(a), sliding_layers(b));
  EXPECT_FLOAT_EQ(a.query_scale, b.query_scale);
  EXPECT_FLOAT_EQ(a.attn_softcap, b.attn_softcap);
  EXPECT_FLOAT_EQ(a.final_softcap, b.final_softcap);
  EXPECT_FLOAT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_FLOAT_EQ(a.rope_theta_local, b.rope_theta_local);
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.post_norms, b.post_norms);
  EXPECT_EQ(a.embed_scale, b.embed_scale);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
}

TEST(ArchTable, GemmaPresetsReadBackInBothFormats) {
  for (const char* preset : {"tiny-gemma2", "tiny-gemma3"}) {
    SCOPED_TRACE(preset);
    test::TempDir dir;
    const ModelConfig cfg = model_preset(preset);
    write_random_gguf(cfg, {DType::F32, 3}, dir.file("m.gguf"));
    write_random_hf(cfg, {DType::F32, 3}, dir.file("hf"));
    const auto g = Model::load(dir.file("m.gguf"));
    const auto h = Model::load(dir.file("hf"));
    expect_same_config(cfg, g->config());
    expect_same_config(cfg, h->config());
    EXPECT_TRUE(g->warnings().empty()) << g->warnings().front();
    EXPECT_TRUE(h->warnings().empty()) << h->warnings().front();
    // GGUF stores Gemma norms as 1 + w; HF's w is loaded as 1 + w: the same f32 vector.
    const auto* gn = static_cast<const float*>(g->weights().layers[0].post_attn_norm.data);
    const auto* hn = static_cast<const float*>(h->weights().layers[0].post_attn_norm.data);
    for (int i = 0; i < cfg.n_embd; ++i) ASSERT_EQ(gn[i], hn[i]) << i;
    EXPECT_GT(gn[0], 1.5f);  // 1 + (1 + k/128): the maker's HF norm values are near 1
  }
}

// config.json's layer_types, where given, decides the pattern; without it the architecture's
// pattern applies (published Gemma 2 configs have no layer_types).
TEST(ArchTable, HfLayerTypes) {
  test::TempDir dir;
  const std::string hf = dir.file("hf");
  write_random_hf(model_preset("tiny-gemma2"), {DType::F32, 3}, hf);
  const std::string cfg_path = hf + "/config.json";
  nlohmann::json cfg;
  std::ifstream(cfg_path) >> cfg;
  auto load_with = [&](const nlohmann::json& j) {
    std::ofstream(cfg_path, std::ios::trunc) << j.dump(1);
    return Model::load(hf);
  };
  nlohmann::json j = cfg;
  j["layer_types"] = {"full_attention", "sliding_attention"};
  EXPECT_EQ(sliding_layers(load_with(j)->config()), std::vector<int>{1});
  j.erase("layer_types");
  EXPECT_EQ(sliding_layers(load_with(j)->config()), std::vector<int>{0});
  j["layer_types"] = {"full_attention"};
  EXPECT_THROW(load_with(j), Error);
  j["layer_types"] = {"full_attention", "chunked_attention"};
  EXPECT_THROW(load_with(j), Error);
  j = cfg;
  j["sliding_window"] = 0;
  EXPECT_THROW(load_with(j), Error);
  j = cfg;
  j["hidden_act"] = "silu";  // Gemma's FFN is GeGLU
  EXPECT_THROW(load_with(j), Error);
}

TEST(ArchTable, SlidingLayersPrefillEqualsDecodeAndKeepTheirWindow) {
  for (const char* preset : {"tiny-gemma2", "tiny-gemma3"}) {
    SCOPED_TRACE(preset);
    test::TempDir dir;
    const ModelConfig cfg = model_preset(preset);
    write_random_gguf(cfg, {DType::F32, 9}, dir.file("m.gguf"));
    const auto m = Model::load(dir.file("m.gguf"));
    const ModelConfig& c = m->config();
    ThreadPool pool(2);
    Forward fwd(*m, &pool);
    std::vector<int32_t> ids;
    for (int i = 0; i < 15; ++i) ids.push_back(1 + (i * 37) % 500);
    const KvCacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim, DType::F32};

    KvCache all(shape);
    std::vector<std::vector<float>> out;
    ForwardItem item{&all, ids, ForwardItem::Logits::All};
    fwd.run(std::span<const ForwardItem>(&item, 1), out);
    const std::vector<float> prefill = out[0];

    KvCache step(shape);
    std::vector<float> decoded;
    for (size_t t = 0; t < ids.size(); ++t) {
      ForwardItem one{&step, std::span<const int32_t>(&ids[t], 1), ForwardItem::Logits::Last};
      fwd.run(std::span<const ForwardItem>(&one, 1), out);
      decoded.insert(decoded.end(), out[0].begin(), out[0].end());
      for (int l = 0; l < c.n_layers; ++l)
        for (int h = 0; h < c.n_kv_heads; ++h) {
          const int64_t n = step.size(l, h);
          if (c.is_sliding(l))
            ASSERT_LE(n, c.layer(l).window - 1) << "layer " << l << " after token " << t;
          else
            ASSERT_EQ(n, static_cast<int64_t>(t) + 1) << "layer " << l;
        }
    }
    ASSERT_EQ(decoded.size(), prefill.size());
    float worst = 0, scale = 0;
    for (size_t i = 0; i < prefill.size(); ++i) {
      worst = std::max(worst, std::fabs(decoded[i] - prefill[i]));
      scale = std::max(scale, std::fabs(prefill[i]));
    }
    EXPECT_LT(worst, 1e-4f * scale);
    // The prefill cache was trimmed the same way at its end.
    for (int l = 0; l < c.n_layers; ++l)
      EXPECT_EQ(all.size(l, 0), c.is_sliding(l) ? c.layer(l).window - 1 : static_cast<int64_t>(ids.size()));
  }
}

}  // namespace
}  // namespace triattn
