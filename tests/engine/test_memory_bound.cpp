// DESIGN §1/§5 memory bound: KV never exceeds B + β tokens per (layer, KV head), whatever the
// generation length or prompt length, for every pruning mode. Model: a random model with
// Qwen3-0.6B's attention (16 query heads, 8 KV heads, head_dim 128, n_embd 1024, qk-norm,
// theta 1e6) cut to 2 layers, FFN 512 and vocab 512 so 4096-token runs take seconds; the
// bound depends only on the attention geometry and the policy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "common/sanitizer_size.h"
#include "engine_test_util.h"
#include "model/maker.h"

namespace triattn {
namespace {

class MemoryBound : public ::testing::TestWithParam<PruningMode> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("triattn_membound_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ModelConfig cfg = model_preset("qwen3-0.6b");
    cfg.n_layers = 2;
    cfg.n_ff = 512;
    cfg.vocab_size = 512;
    MakerOptions opt;
    opt.weight_type = DType::Q8_0;
    const std::string path = (dir_ / "qwen3-0.6b-attn.gguf").string();
    write_random_gguf(cfg, opt, path);
    model_ = Model::load(path);
    pool_ = std::make_unique<ThreadPool>(2);
    CalibrateOptions copt;
    copt.pool = pool_.get();
    // Statistics from 1024 tokens, 256 in sanitized builds (the bound does not depend on them).
    std::vector<int32_t> calib = random_tokens(test::sanitizer_size(1024, 256), 7);
    stats_ = std::make_shared<HeadStats>(calibrate_tokens(*model_, calib, copt).stats);
  }
  static void TearDownTestSuite() {
    model_.reset();
    pool_.reset();
    std::filesystem::remove_all(dir_);
  }
  static std::vector<int32_t> random_tokens(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& x : t) x = 3 + static_cast<int32_t>(rng() % 500);
    t[0] = 1;  // BOS
    return t;
  }
  KvSettings tri(PruningMode mode) const {
    KvSettings s;
    s.policy = "triattention";
    s.params.budget = 256;
    s.params.divide_length = 128;
    s.params.mode = mode;
    s.params.stats = stats_;
    return s;
  }

  static std::filesystem::path dir_;
  static std::shared_ptr<const Model> model_;
  static std::unique_ptr<ThreadPool> pool_;
  static std::shared_ptr<const HeadStats> stats_;
};
std::filesystem::path MemoryBound::dir_;
std::shared_ptr<const Model> MemoryBound::model_;
std::unique_ptr<ThreadPool> MemoryBound::pool_;
std::shared_ptr<const HeadStats> MemoryBound::stats_;

// Tokens the long generation makes: 4096, or 1024 in sanitized builds, where four modes of
// 4096 steps take a quarter of an hour: a fault in the decode and pruning paths shows in the
// first thousand steps as well as in the fourth (every step runs the same code; 1024 still
// makes six prune events per mode).
constexpr int64_t kLongGenerationTokens = test::sanitizer_size<int64_t>(4096, 1024);

TEST_P(MemoryBound, LongGenerationNeverHoldsMoreThanBPlusBeta) {
  const int64_t n = kLongGenerationTokens;
  const auto r = test::greedy_generate(*model_, tri(GetParam()), {1, 100, 200}, n, pool_.get());
  EXPECT_EQ(static_cast<int64_t>(r.tokens.size()), n);
  EXPECT_LE(r.stats.kv_peak_tokens, 384) << pruning_mode_name(GetParam());
  EXPECT_GE(r.stats.kv_peak_tokens, 384);  // it does fill up to the trigger
  // n + 2 tokens fed (3 prompt, n - 1 generated back): first cut before the 385th, then
  // every 128.
  EXPECT_EQ(r.stats.prune_events, 1 + (n + 2 - 384 - 1) / 128);
  const size_t per_token = 2 /*K+V*/ * 2 /*f16*/ * 128 * 8 /*KV heads*/ * 2 /*layers*/;
  EXPECT_LE(r.stats.kv_peak_bytes, 384 * per_token);
  std::printf("[ bound ] %s: %lld generated, kv_peak_tokens %lld, kv_peak_bytes %zu, %lld prune events, scoring "
              "%.1f ms\n",
              std::string(pruning_mode_name(GetParam())).c_str(), static_cast<long long>(n),
              static_cast<long long>(r.stats.kv_peak_tokens),
              r.stats.kv_peak_bytes, static_cast<long long>(r.stats.prune_events), r.stats.scoring_ms);
}

TEST_P(MemoryBound, PromptLongerThanTheBudgetStaysWithinBound) {
  const std::vector<int32_t> prompt = random_tokens(2000, 11);
  const auto r = test::greedy_generate(*model_, tri(GetParam()), prompt, 16, pool_.get());
  EXPECT_LE(r.stats.kv_peak_tokens, 384) << pruning_mode_name(GetParam());
  EXPECT_GT(r.stats.prune_events, 10);
  EXPECT_EQ(r.stats.prompt_tokens, 2000);
}

INSTANTIATE_TEST_SUITE_P(Modes, MemoryBound,
                         ::testing::Values(PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer,
                                           PruningMode::Global),
                         [](const auto& info) { return std::string(pruning_mode_name(info.param)); });

}  // namespace
}  // namespace triattn
