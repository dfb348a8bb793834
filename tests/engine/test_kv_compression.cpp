// TriAttention through the real engine path (Sequence + generate) on TinyStories-656K:
// equivalence with full attention when nothing needs evicting, the exact pruning schedule,
// and the quality figure reported in docs/results.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "engine_test_util.h"

namespace triattn {
namespace {

using test::greedy_generate;

class KvCompression : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(test::kTinyStories);
    stats_ = test::calibrated_stats(*model_);
  }
  static void TearDownTestSuite() {
    model_.reset();
    stats_.reset();
  }
  KvSettings tri(int64_t budget, PruningMode mode = PruningMode::PerHead) const {
    KvSettings s;
    s.policy = "triattention";
    s.params.budget = budget;
    s.params.mode = mode;
    s.params.stats = stats_;
    return s;
  }
  std::vector<int32_t> prompt() const { return model_->tokenizer().encode("Once upon a time,", true); }

  static std::shared_ptr<const Model> model_;
  static std::shared_ptr<const HeadStats> stats_;
};
std::shared_ptr<const Model> KvCompression::model_;
std::shared_ptr<const HeadStats> KvCompression::stats_;

// A KV type the model cannot hold is refused when the settings are made (what serve, generate
// and eval all build first), not when the first sequence allocates its cache: head_dim 16 is
// not whole q8_0 blocks.
TEST_F(KvCompression, SettingsRefuseAKvTypeTheModelCannotHold) {
  KvSettings s;
  s.cache_type = DType::Q8_0;
  try {
    PolicyFactory f(*model_, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0 holds rows in blocks of 32 elements, but this model's head_dim is 16"),
              std::string::npos)
        << e.what();
  }
  s.cache_type = DType::F16;
  EXPECT_NO_THROW(PolicyFactory(*model_, s));
}

// With a budget at least the sequence length, compressed generation is identical to full
// attention, for every pruning mode (docs/design.md, Contracts).
TEST_F(KvCompression, BudgetCoveringTheSequenceIsIdenticalToFull) {
  ThreadPool pool(2);
  const auto full = greedy_generate(*model_, KvSettings{}, prompt(), 240, &pool);
  for (PruningMode mode : {PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer,
                           PruningMode::Global}) {
    const auto compressed = greedy_generate(*model_, tri(247, mode), prompt(), 240, &pool);
    EXPECT_EQ(compressed.tokens, full.tokens) << pruning_mode_name(mode);
    EXPECT_EQ(compressed.stats.prune_events, 0);
    EXPECT_EQ(compressed.stats.kv_peak_tokens, full.stats.kv_peak_tokens);
  }
}

// B = 128, β = 128: the cache fills to 256 tokens, then is cut to 128 before every append
// that would pass 256. Tokens sampled before the first cut equal full attention's.
TEST_F(KvCompression, PrunesOnScheduleAndStaysWithinBound) {
  ThreadPool pool(2);
  const int64_t n = 400;
  const auto full = greedy_generate(*model_, KvSettings{}, prompt(), n, &pool);
  const auto tri128 = greedy_generate(*model_, tri(128), prompt(), n, &pool);
  const int64_t fed = static_cast<int64_t>(prompt().size()) + n - 1;  // the last token is not fed
  // Every append of one token past 256 triggers a cut to 128: 256, then every 128 more.
  const int64_t expected_events = fed > 256 ? 1 + (fed - 256 - 1) / 128 : 0;
  EXPECT_EQ(tri128.stats.prune_events, expected_events);
  EXPECT_LE(tri128.stats.kv_peak_tokens, 256);
  EXPECT_EQ(tri128.stats.kv_peak_tokens, 256);
  // g_i is sampled after feeding position 6 + i; the first cut happens before feeding position
  // 256, so g_0 .. g_249 are computed on the full cache.
  const size_t before_first_cut = 256 - prompt().size() + 1;
  EXPECT_GE(test::common_prefix(full.tokens, tri128.tokens), before_first_cut);
  std::printf("[ agreement ] TinyStories-656K, %lld greedy tokens, B=128 beta=128 W=128 per_head: %.1f%% identical to "
              "full, first divergence at token %zu\n",
              static_cast<long long>(n), 100 * test::agreement(full.tokens, tri128.tokens),
              test::common_prefix(full.tokens, tri128.tokens));
  const std::string text = model_->tokenizer().decode(tri128.tokens);
  std::printf("[ text ] %s\n", text.c_str());
}

// Scoring is recorded, and full attention spends no time on it.
TEST_F(KvCompression, StatsReportPruningAndScoring) {
  const auto r = greedy_generate(*model_, tri(64), prompt(), 300, nullptr);
  EXPECT_GT(r.stats.prune_events, 0);
  EXPECT_GT(r.stats.scoring_ms, 0.0);
  const size_t row = 2 * 16;  // f16 head_dim 16
  EXPECT_EQ(r.stats.kv_peak_bytes,
            static_cast<size_t>(64 + 128) * 2 /*K+V*/ * row * model_->config().n_layers * model_->config().n_kv_heads);
}

}  // namespace
}  // namespace triattn
