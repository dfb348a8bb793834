// The memory bound (docs/design.md, The algorithm): KV never exceeds B + β tokens per (layer,
// KV head), whatever the generation length or prompt length, for every pruning mode. Model: a
// random model with Qwen3-0.6B's attention (16 query heads, 8 KV heads, head_dim 128, n_embd
// 1024, qk-norm, theta 1e6) cut to 2 layers, FFN 512 and vocab 512 so 4096-token runs take
// seconds; the bound depends only on the attention geometry and the policy.
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
    s.params.budget = kBudget;
    s.params.divide_length = kDivide;
    s.params.mode = mode;
    s.params.stats = stats_;
    return s;
  }

  // B and β: 256 and 128, halved in sanitized builds (fewer tokens reach as many prune events).
  static constexpr int64_t kBudget = test::sanitizer_size<int64_t>(256, 128);
  static constexpr int64_t kDivide = test::sanitizer_size<int64_t>(128, 64);
  static constexpr int64_t kBound = kBudget + kDivide;
  static std::filesystem::path dir_;
  static std::shared_ptr<const Model> model_;
  static std::unique_ptr<ThreadPool> pool_;
  static std::shared_ptr<const HeadStats> stats_;
};
std::filesystem::path MemoryBound::dir_;
std::shared_ptr<const Model> MemoryBound::model_;
std::unique_ptr<ThreadPool> MemoryBound::pool_;
std::shared_ptr<const HeadStats> MemoryBound::stats_;

// Tokens the long generation makes: 4096, or 640 in sanitized builds, where four modes of
// 4096 steps take a quarter of an hour: a fault in the decode and pruning paths shows in the
// first few hundred steps as well as in the fourth thousand (every step runs the same code;
// 640 still makes eight prune events per mode at the sanitized B and β).
constexpr int64_t kLongGenerationTokens = test::sanitizer_size<int64_t>(4096, 640);
// The prompt longer than the budget: 2000 tokens, 1000 in sanitized builds.
constexpr int kLongPromptTokens = test::sanitizer_size(2000, 1000);

TEST_P(MemoryBound, LongGenerationNeverHoldsMoreThanBPlusBeta) {
  const int64_t n = kLongGenerationTokens;
  const auto r = test::greedy_generate(*model_, tri(GetParam()), {1, 100, 200}, n, pool_.get());
  EXPECT_EQ(static_cast<int64_t>(r.tokens.size()), n);
  EXPECT_LE(r.stats.kv_peak_tokens, kBound) << pruning_mode_name(GetParam());
  EXPECT_GE(r.stats.kv_peak_tokens, kBound);  // it does fill up to the trigger
  // n + 2 tokens fed (3 prompt, n - 1 generated back): first cut before the (B + β + 1)th,
  // then every β.
  EXPECT_EQ(r.stats.prune_events, 1 + (n + 2 - kBound - 1) / kDivide);
  const size_t per_token = 2 /*K+V*/ * 2 /*f16*/ * 128 * 8 /*KV heads*/ * 2 /*layers*/;
  EXPECT_LE(r.stats.kv_peak_bytes, static_cast<size_t>(kBound) * per_token);
  std::printf("[ bound ] %s: %lld generated, kv_peak_tokens %lld, kv_peak_bytes %zu, %lld prune events, scoring "
              "%.1f ms\n",
              std::string(pruning_mode_name(GetParam())).c_str(), static_cast<long long>(n),
              static_cast<long long>(r.stats.kv_peak_tokens),
              r.stats.kv_peak_bytes, static_cast<long long>(r.stats.prune_events), r.stats.scoring_ms);
}

TEST_P(MemoryBound, PromptLongerThanTheBudgetStaysWithinBound) {
  const std::vector<int32_t> prompt = random_tokens(kLongPromptTokens, 11);
  const auto r = test::greedy_generate(*model_, tri(GetParam()), prompt, 16, pool_.get());
  EXPECT_LE(r.stats.kv_peak_tokens, kBound) << pruning_mode_name(GetParam());
  // Each cut makes room for β more tokens at most, so the prompt alone needs this many.
  EXPECT_GE(r.stats.prune_events, (kLongPromptTokens - kBound) / kDivide);
  EXPECT_EQ(r.stats.prompt_tokens, kLongPromptTokens);
}

INSTANTIATE_TEST_SUITE_P(Modes, MemoryBound,
                         ::testing::Values(PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer,
                                           PruningMode::Global),
                         [](const auto& info) { return std::string(pruning_mode_name(info.param)); });

}  // namespace
}  // namespace triattn
