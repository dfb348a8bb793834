// Compression on models with sliding-window layers (Gemma 2/3): every KV policy compresses the
// full-attention layers only. A sliding layer's streams are bounded by its window (the forward
// pass trims them) and no policy prunes, scores or shares a keep set over them; the B + β
// trigger counts the full layers only. Models: the tiny Gemma and gpt-oss presets with the window widened
// to 40, so that a sliding stream (up to 39 rows) outgrows B + β = 24 and a policy that treated
// it as a full layer would cut it.
#include <gtest/gtest.h>

#include <filesystem>

#include "calib/stats_file.h"
#include "engine_test_util.h"
#include "model/maker.h"
#include "common/temp_dir.h"
#include "core/error.h"
#include "engine/step.h"

namespace triattn {
namespace {

constexpr int kWindow = 40;
constexpr int64_t kBudget = 16, kBeta = 8;

ModelConfig wide_window(const char* preset) {
  ModelConfig c = model_preset(preset);
  c.sliding_window = kWindow;
  for (int l = 0; l < c.n_layers; ++l)
    if (c.is_sliding(l)) c.layers[static_cast<size_t>(l)].window = kWindow;
  return c;
}

// Feeds `n` greedy tokens one at a time after a 30-token prompt, checking every stream after
// every step; returns the number of pruning events.
int64_t run_and_check(const Model& m, const KvSettings& kv, int64_t n, ThreadPool* pool) {
  const ModelConfig& c = m.config();
  PolicyFactory policies(m, kv);
  Sequence seq(m, policies);
  Forward fwd(m, pool);
  EngineStep step(fwd);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 30; ++i) prompt.push_back(1 + (i * 37) % 500);
  std::vector<float> logits = feed(step, seq, prompt);
  int64_t full_peak = 0, sliding_peak = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = feed(step, seq, std::span<const int32_t>(&next, 1));
    const KvCache& cache = seq.cache();
    for (int l = 0; l < c.n_layers; ++l) {
      EXPECT_EQ(cache.sliding(l), c.is_sliding(l)) << "layer " << l;
      for (int h = 0; h < c.n_kv_heads; ++h) {
        const int64_t size = cache.size(l, h);
        const int32_t* pos = cache.positions(l, h);
        if (c.is_sliding(l)) {
          // Exactly its window: nothing evicted that a query could still see.
          const int64_t processed = cache.n_processed();
          EXPECT_EQ(size, std::min<int64_t>(processed, kWindow - 1)) << kv.policy << " layer " << l << " step " << t;
          EXPECT_EQ(pos[0], processed - size) << kv.policy << " layer " << l;
          sliding_peak = std::max(sliding_peak, size);
        } else {
          EXPECT_LE(size, kBudget + kBeta) << kv.policy << " layer " << l << " step " << t;
          full_peak = std::max(full_peak, size);
        }
      }
    }
  }
  EXPECT_EQ(sliding_peak, kWindow - 1) << kv.policy;
  EXPECT_GT(full_peak, kBudget) << kv.policy;  // it fills up to the trigger
  return seq.stats().prune_events;
}

class SlidingLayers : public ::testing::TestWithParam<const char*> {};

TEST_P(SlidingLayers, EveryPolicyCompressesTheFullLayersOnly) {
  test::TempDir dir;
  const ModelConfig cfg = wide_window(GetParam());
  write_random_gguf(cfg, {DType::F32, 3}, dir.file("m.gguf"));
  const auto m = Model::load(dir.file("m.gguf"));
  ASSERT_TRUE(m->config().has_sliding_layers());
  ASSERT_FALSE(m->config().full_attention_layers().empty());
  ThreadPool pool(2);
  const auto stats = test::calibrated_stats(*m);
  for (const PolicyInfo& p : kv_policy_list()) {
    if (!p.prunes) continue;
    for (PruningMode mode : {PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::Global}) {
      if (!p.mode_applies && mode != PruningMode::PerLayerPerHead) continue;
      SCOPED_TRACE(p.name + " " + std::string(pruning_mode_name(mode)));
      KvSettings kv;
      kv.policy = p.name;
      kv.params.budget = kBudget;
      kv.params.divide_length = kBeta;
      kv.params.window = 4;
      kv.params.mode = mode;
      if (p.needs_stats) kv.params.stats = stats;
      // 90 tokens fed: a cut each time a full layer would pass B + β, about every β tokens
      // after the first B; a trigger that counted the sliding streams would cut at every step.
      const int64_t events = run_and_check(*m, kv, 60, &pool);
      EXPECT_GE(events, (90 - kBudget - kBeta) / kBeta);
      EXPECT_LE(events, 90 / kBeta + 1);
    }
  }
}

// The statistics name the layers they are for; a file for another layer pattern is refused.
TEST_P(SlidingLayers, StatsFilesRecordTheLayersTheyScore) {
  test::TempDir dir;
  const ModelConfig cfg = wide_window(GetParam());
  write_random_gguf(cfg, {DType::F32, 3}, dir.file("m.gguf"));
  const auto m = Model::load(dir.file("m.gguf"));
  CalibrateOptions opt;
  const std::string text = test::read_file(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/calibration_stories.txt");
  CalibrationResult r = calibrate_text(*m, text, opt);
  EXPECT_EQ(r.info.scored_layers, m->config().full_attention_layers());
  write_stats_file(dir.file("s.safetensors"), *std::make_shared<HeadStats>(r.stats), r.info);
  const LoadedStats back = read_stats_any(dir.file("s.safetensors"));
  EXPECT_EQ(back.info.scored_layers, m->config().full_attention_layers());
  EXPECT_NO_THROW(check_stats_match(back, m->config(), "s.safetensors"));

  LoadedStats other = back;
  other.info.scored_layers = {0};
  if (other.info.scored_layers == m->config().full_attention_layers()) other.info.scored_layers = {1};
  try {
    check_stats_match(other, m->config(), "s.safetensors");
    ADD_FAILURE() << "stats for another layer pattern were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scored layers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s.safetensors"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Gemma, SlidingLayers, ::testing::Values("tiny-gemma2", "tiny-gemma3"),
                         [](const auto& info) { return std::string(info.param) == "tiny-gemma2" ? "gemma2" : "gemma3"; });
// gpt-oss: sliding and full layers alternate, every FFN a MoE, attention sinks in both kinds.
INSTANTIATE_TEST_SUITE_P(GptOss, SlidingLayers, ::testing::Values("tiny-gptoss"),
                         [](const auto&) { return std::string("gptoss"); });

}  // namespace
}  // namespace triattn
