// The hybrid forward pass (Qwen3.5: Gated DeltaNet layers beside gated attention layers) on
// the tiny dense and MoE presets: a prompt fed in chunks of any size (the DeltaNet's chunked
// form inside a chunk, its recurrent state between chunks) gives the logits of feeding it one
// token at a time; sequences batched together keep their states apart; a copied cache carries
// the state (a fork continues exactly), and clear() resets it. The logits themselves are
// checked against an independent reference in tests/reference/test_qwen35_reference.py.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/temp_dir.h"
#include "model/forward.h"
#include "model/forward_test_util.h"
#include "model/kv_shape.h"
#include "model/maker.h"
#include "model/model.h"

namespace triattn {
namespace {

class HybridForward : public ::testing::TestWithParam<const char*> {
 protected:
  static std::shared_ptr<const Model> load(const char* preset) {
    static test::TempDir dir;
    const std::string path = dir.file(std::string(preset) + ".gguf");
    write_random_gguf(model_preset(preset), MakerOptions{DType::F32, 11}, path);
    return Model::load(path);
  }
  void SetUp() override { model_ = load(GetParam()); }

  // 200 token ids (over three of the DeltaNet kernel's 64-token chunks).
  static std::vector<int32_t> tokens(size_t n = 200) {
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(3 + (i * 37) % 500);
    return ids;
  }

  std::shared_ptr<const Model> model_;
};

TEST_P(HybridForward, HasDeltaNetAndAttentionLayersAndKvOnlyInAttention) {
  const ModelConfig& c = model_->config();
  ASSERT_TRUE(c.has_delta_layers());
  EXPECT_EQ(kv_layer_count(c), 2);
  EXPECT_EQ(c.full_attention_layers(), (std::vector<int>{3, 7}));
  Forward fwd(*model_, nullptr);
  KvCache cache(kv_cache_shape(c, DType::F32));
  const std::vector<int32_t> ids = tokens(10);
  ForwardItem item{&cache, ids, ForwardItem::Logits::Last};
  std::vector<std::vector<float>> out;
  fwd.run(std::span<const ForwardItem>(&item, 1), out);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_kv_heads; ++h) EXPECT_EQ(cache.size(l, h), c.is_delta(l) ? 0 : 10) << "layer " << l;
  EXPECT_EQ(cache.state_bytes(), sequence_state_bytes(c));
  EXPECT_EQ(cache.state(3), nullptr);  // attention layers have no state
  ASSERT_NE(cache.state(0), nullptr);
  const int64_t floats = c.delta.conv_state_floats() + c.delta.state_floats();
  int nonzero = 0;
  for (int64_t i = 0; i < floats; ++i) nonzero += cache.state(0)[i] != 0.0f;
  EXPECT_GT(nonzero, floats / 2);  // the prompt wrote the conv and delta states
}

TEST_P(HybridForward, ChunkedPrefillEqualsTokenByTokenDecode) {
  const ModelConfig& c = model_->config();
  Forward fwd(*model_, nullptr);
  const std::vector<int32_t> ids = tokens();
  const std::vector<float> decode = test::run_all(fwd, c, ids, /*one_by_one=*/true);
  const std::vector<float> prefill = test::run_all(fwd, c, ids, /*one_by_one=*/false);
  EXPECT_LT(test::rel_diff(prefill, decode), 1e-5f);
  // Chunks of other sizes, each continuing the state the previous one left.
  for (size_t chunk : {3, 64, 70, 130}) {
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

TEST_P(HybridForward, BatchedSequencesKeepTheirStatesApart) {
  const ModelConfig& c = model_->config();
  ThreadPool pool(3);
  Forward fwd(*model_, &pool);
  const std::vector<int32_t> all = tokens(90);
  const std::vector<std::span<const int32_t>> prompts = {std::span<const int32_t>(all).first(90),
                                                         std::span<const int32_t>(all).subspan(5, 1),
                                                         std::span<const int32_t>(all).subspan(20, 33)};
  std::vector<std::vector<float>> alone;
  for (std::span<const int32_t> p : prompts) {
    KvCache cache(kv_cache_shape(c, DType::F32));
    ForwardItem item{&cache, p, ForwardItem::Logits::Last};
    std::vector<std::vector<float>> out;
    fwd.run(std::span<const ForwardItem>(&item, 1), out);
    alone.push_back(out[0]);
  }
  std::vector<KvCache> caches(prompts.size(), KvCache(kv_cache_shape(c, DType::F32)));
  std::vector<ForwardItem> items;
  for (size_t i = 0; i < prompts.size(); ++i) items.push_back({&caches[i], prompts[i], ForwardItem::Logits::Last});
  std::vector<std::vector<float>> out;
  fwd.run(items, out);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_LT(test::rel_diff(out[i], alone[i]), 1e-5f) << "sequence " << i;
}

TEST_P(HybridForward, ACopiedCacheContinuesExactlyAndClearResetsTheState) {
  const ModelConfig& c = model_->config();
  Forward fwd(*model_, nullptr);
  const std::vector<int32_t> ids = tokens(40);
  const int32_t next[] = {77, 78};
  std::vector<std::vector<float>> out;
  KvCache cache(kv_cache_shape(c, DType::F32));
  ForwardItem prompt{&cache, ids, ForwardItem::Logits::Last};
  fwd.run(std::span<const ForwardItem>(&prompt, 1), out);
  KvCache fork = cache;  // what n > 1 choices and kept conversations do
  ForwardItem a{&cache, next, ForwardItem::Logits::All}, b{&fork, next, ForwardItem::Logits::All};
  fwd.run(std::span<const ForwardItem>(&a, 1), out);
  const std::vector<float> want = out[0];
  fwd.run(std::span<const ForwardItem>(&b, 1), out);
  EXPECT_EQ(out[0], want);
  // A different continuation of the copy changes its state, not the original's.
  const int32_t other = 300;
  ForwardItem c1{&fork, std::span<const int32_t>(&other, 1), ForwardItem::Logits::Last};
  fwd.run(std::span<const ForwardItem>(&c1, 1), out);
  EXPECT_NE(std::vector<float>(fork.state(0), fork.state(0) + 64), std::vector<float>(cache.state(0), cache.state(0) + 64));
  // After clear() the cache is a fresh one: the same prompt gives the same logits again.
  cache.clear();
  KvCache fresh(kv_cache_shape(c, DType::F32));
  ForwardItem p1{&cache, ids, ForwardItem::Logits::Last}, p2{&fresh, ids, ForwardItem::Logits::Last};
  fwd.run(std::span<const ForwardItem>(&p1, 1), out);
  const std::vector<float> after_clear = out[0];
  fwd.run(std::span<const ForwardItem>(&p2, 1), out);
  EXPECT_EQ(after_clear, out[0]);
}

INSTANTIATE_TEST_SUITE_P(Qwen35, HybridForward, ::testing::Values("tiny-qwen35", "tiny-qwen35moe"),
                         [](const auto& info) { return std::string(info.param) == "tiny-qwen35" ? "dense" : "moe"; });

}  // namespace
}  // namespace triattn
