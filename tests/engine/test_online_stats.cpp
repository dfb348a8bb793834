// --stats auto: triattention measures its query statistics from the sequence's own pre-RoPE
// queries. They are calibration's numbers for the same tokens; until --auto-stats-min tokens
// were seen a pruning keeps the most recent keys, after it the policy ranks exactly as one
// given those statistics from a file; a fork continues with its own copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/temp_dir.h"
#include "core/error.h"
#include "engine/calibrate.h"
#include "engine/kv_setup.h"
#include "engine/online_stats.h"
#include "engine/sequence.h"
#include "engine/step.h"
#include "kv/keep_set.h"
#include "kv/online_stats.h"
#include "model/maker.h"
#include "model/model.h"

namespace triattn {
namespace {

// Token ids 1.. of a random model (vocabulary 512), varied so the queries differ.
std::vector<int32_t> online_tokens(int n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = 1 + (i * 37 + salt * 101) % 500;
  return t;
}

KvSettings online_settings(int64_t budget, int64_t divide, int64_t window, int64_t min_tokens) {
  KvSettings kv;
  kv.policy = "triattention";
  kv.stats_path = std::string(kStatsAuto);
  kv.cache_type = DType::F32;
  kv.params.budget = budget;
  kv.params.divide_length = divide;
  kv.params.window = window;
  kv.params.auto_stats_min = min_tokens;
  return kv;
}

// tolerance 0: bit for bit; else relative to the largest magnitude of the array.
void expect_same_stats(const HeadStats& a, const HeadStats& b, double tolerance = 0) {
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.rotary_dim, b.rotary_dim);
  for (auto m : {&HeadStats::q_mean_real, &HeadStats::q_mean_imag, &HeadStats::q_abs_mean, &HeadStats::k_mean_real,
                 &HeadStats::k_mean_imag, &HeadStats::k_abs_mean, &HeadStats::q_pass_mean,
                 &HeadStats::q_pass_abs_mean}) {
    ASSERT_EQ((a.*m).size(), (b.*m).size());
    double scale = 0;
    for (float x : b.*m) scale = std::max(scale, std::abs(static_cast<double>(x)));
    for (size_t i = 0; i < (a.*m).size(); ++i) {
      if (tolerance == 0)
        ASSERT_EQ((a.*m)[i], (b.*m)[i]) << "element " << i;
      else
        ASSERT_NEAR((a.*m)[i], (b.*m)[i], tolerance * scale) << "element " << i;
    }
  }
}

// A model preset, and how close online and offline statistics must be: bit for bit where the
// forward pass gives the same queries however the tokens are chunked; a hybrid model's DeltaNet
// layers round differently by chunk size, and the attention layers after them see that.
struct OnlineStatsCase {
  const char* preset;
  double tolerance;
};

class OnlineStatsTest : public ::testing::TestWithParam<OnlineStatsCase> {
 protected:
  void SetUp() override {
    write_random_hf(model_preset(GetParam().preset), {DType::F32, 3}, dir_.file("m"));
    model_ = Model::load(dir_.file("m"));
  }
  test::TempDir dir_;
  std::shared_ptr<const Model> model_;
};

// The sequence's statistics are calibration's over the same tokens, bit for bit: the same
// accumulator, fed every prompt chunk and every decoded token once. Nothing is evicted (B
// above the length) and the cache is f32 as calibration's, so the queries are the same.
TEST_P(OnlineStatsTest, EqualTheCalibrationOfTheSameTokens) {
  const std::vector<int32_t> tokens = online_tokens(150, 1);
  KvSettings kv = online_settings(1024, 128, 0, 0);
  kv.prefill_chunk = 40;
  const PolicyFactory f(*model_, kv);
  ASSERT_EQ(f.settings().params.online_stats, &make_online_stats);
  Sequence seq(*model_, f);
  Forward fwd(*model_, nullptr);
  EngineStep step(fwd);
  feed(step, seq, std::span(tokens).first(100));  // a prompt in chunks
  for (size_t i = 100; i < tokens.size(); ++i) feed(step, seq, std::span(tokens).subspan(i, 1));  // decoding
  const OnlineStats* online = seq.policy().online_stats();
  ASSERT_NE(online, nullptr);
  EXPECT_EQ(online->tokens(), 150);
  CalibrateOptions opt;
  opt.chunk = 64;
  expect_same_stats(online->result(), calibrate_tokens(*model_, tokens, opt).stats, GetParam().tolerance);
}

INSTANTIATE_TEST_SUITE_P(Models, OnlineStatsTest,
                         ::testing::Values(OnlineStatsCase{"tiny-llama", 0}, OnlineStatsCase{"tiny-qwen35", 1e-5}));

class OnlineStatsPolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    write_random_hf(model_preset("tiny-llama"), {DType::F32, 5}, dir_->file("m"));
    model_ = Model::load(dir_->file("m"));
  }
  static void TearDownTestSuite() {
    model_.reset();
    delete dir_;
  }
  static inline test::TempDir* dir_ = nullptr;
  static inline std::shared_ptr<const Model> model_;
};

// n_new such that the next append prunes (the largest stream would pass B + β).
int64_t online_prune_trigger(const KvCache& cache, const PolicyParams& p) {
  int64_t most = 0;
  for (int l = 0; l < cache.shape().n_layers; ++l)
    for (int h = 0; h < cache.shape().n_kv_heads; ++h) most = std::max(most, cache.size(l, h));
  return p.budget + p.divide_length - most + 1;
}

TEST_F(OnlineStatsPolicyTest, BeforeTheThresholdAPruningKeepsTheMostRecentKeys) {
  const KvSettings kv = online_settings(16, 8, 0, 60);  // no window: the policy decides every slot
  const PolicyFactory f(*model_, kv);
  Sequence seq(*model_, f);
  Forward fwd(*model_, nullptr);
  EngineStep step(fwd);
  const std::vector<int32_t> tokens = online_tokens(59, 2);
  for (size_t i = 0; i < tokens.size(); ++i) feed(step, seq, std::span(tokens).subspan(i, 1));
  const KvCache& cache = seq.cache();
  ASSERT_GT(cache.prune_events(), 0);
  for (int l = 0; l < cache.shape().n_layers; ++l)
    for (int h = 0; h < cache.shape().n_kv_heads; ++h) {
      const std::span<const int32_t> pos = stream_positions(cache, l, h);
      std::vector<int32_t> recent(pos.size());
      std::iota(recent.begin(), recent.end(), static_cast<int32_t>(59 - pos.size()));
      EXPECT_EQ(std::vector<int32_t>(pos.begin(), pos.end()), recent) << "layer " << l << " head " << h;
    }
  // At the threshold the statistics score: the plan is no longer the most recent keys alone
  // but the one a policy given the same statistics from a file makes.
  PolicyParams with_file = f.settings().params;
  with_file.online_stats = nullptr;
  with_file.auto_stats_min = PolicyParams{}.auto_stats_min;
  feed(step, seq, std::span(tokens).subspan(0, 1));  // the 60th token
  with_file.stats = std::make_shared<const HeadStats>(seq.policy().online_stats()->result());
  auto calibrated = make_kv_policy("triattention", with_file, attention_geometry(model_->config()));
  const int64_t n_new = online_prune_trigger(seq.cache(), with_file);
  const auto online_plan = seq.policy().plan_before_append(seq.cache(), n_new, {}, nullptr);
  const auto file_plan = calibrated->plan_before_append(seq.cache(), n_new, {}, nullptr);
  ASSERT_TRUE(online_plan && file_plan);
  EXPECT_EQ(online_plan->keep, file_plan->keep);
  const KeepRules rules = keep_rules(f.settings().params, {});
  bool all_recent = true;
  for (int l = 0; l < cache.shape().n_layers; ++l)
    for (int h = 0; h < cache.shape().n_kv_heads; ++h)
      all_recent = all_recent && online_plan->keep[cache.stream_index(l, h)] ==
                                     keep_most_recent(split_stream(stream_positions(cache, l, h), rules), rules.budget);
  EXPECT_FALSE(all_recent) << "the statistics should rank some older key above a recent one";
}

TEST_F(OnlineStatsPolicyTest, AForkContinuesWithItsOwnCopyOfTheStatistics) {
  const PolicyFactory f(*model_, online_settings(16, 8, 4, 0));
  Sequence seq(*model_, f);
  Forward fwd(*model_, nullptr);
  EngineStep step(fwd);
  const std::vector<int32_t> tokens = online_tokens(40, 3);
  feed(step, seq, tokens);
  const auto forked = seq.fork(f);
  ASSERT_NE(forked->policy().online_stats(), nullptr);
  EXPECT_EQ(forked->policy().online_stats()->tokens(), 40);
  expect_same_stats(forked->policy().online_stats()->result(), seq.policy().online_stats()->result());
  feed(step, *forked, std::span(tokens).first(5));
  EXPECT_EQ(forked->policy().online_stats()->tokens(), 45);
  EXPECT_EQ(seq.policy().online_stats()->tokens(), 40) << "the fork fed its own copy";
}

TEST_F(OnlineStatsPolicyTest, AStatisticsFileTakesNoAutoKnob) {
  KvSettings kv = online_settings(16, 8, 4, 0);
  kv.stats_path.clear();
  kv.params.stats = std::make_shared<const HeadStats>(calibrate_tokens(*model_, online_tokens(50, 4), {}).stats);
  kv.params.auto_stats_min = PolicyParams{}.auto_stats_min + 1;
  try {
    PolicyFactory f(*model_, kv);
    FAIL() << "--auto-stats-min with a statistics file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--auto-stats-min (triattention) applies to --stats auto only"),
              std::string::npos)
        << e.what();
  }
  // The statistics the sequence measured replace a file's when both are set by --stats auto.
  kv.stats_path = std::string(kStatsAuto);
  const PolicyFactory f(*model_, kv);
  EXPECT_EQ(f.settings().params.stats, nullptr);
  EXPECT_NE(f.make()->online_stats(), nullptr);
}

}  // namespace
}  // namespace triattn
