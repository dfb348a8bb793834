// The context rule, one for every frontend (Sequence): a policy that does not bound memory
// never passes the context limit (refused before anything is fed; generation stops there
// with "length"); a compressing policy may pass it and says so once; the cache reserves no
// more than the sequence can use.
#include <gtest/gtest.h>

#include "common/sanitizer_size.h"
#include "core/error.h"
#include "engine_test_util.h"
#include "engine/step.h"

namespace triattn {
namespace {

class SequenceContext : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(test::kTinyStories);  // context 512
    pool_ = std::make_unique<ThreadPool>(2);
    stats_ = test::calibrated_stats(*model_);
  }
  static void TearDownTestSuite() {
    model_.reset();
    pool_.reset();
  }
  static KvSettings tri(int64_t budget) {
    KvSettings s;
    s.policy = "triattention";
    s.params.budget = budget;
    s.params.divide_length = 16;
    s.params.window = 8;
    s.params.stats = stats_;
    return s;
  }
  static GenerateResult run(const KvSettings& kv, int64_t prompt_len, int64_t n, std::vector<std::string>* notes) {
    PolicyFactory policies(*model_, kv);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len), 80);
    prompt[0] = 1;
    return test::greedy_run(*model_, policies, prompt, n, pool_.get(),
                            [notes](const std::string& t) { notes->push_back(t); });
  }
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<ThreadPool> pool_;
  static inline std::shared_ptr<const HeadStats> stats_;
};

TEST_F(SequenceContext, FullStopsAtTheContextWithLength) {
  std::vector<std::string> notes;
  const GenerateResult r = run(KvSettings{}, 10, 10000, &notes);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(static_cast<int64_t>(r.tokens.size()), 512 - 10);
  EXPECT_EQ(r.stats.kv_peak_tokens, 511);  // the last token needs no forward step
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("context limit (512 tokens)"), std::string::npos) << notes[0];
}

TEST_F(SequenceContext, FullRefusesBeforeFeedingAnything) {
  KvSettings s;
  s.context_length = 16;
  PolicyFactory policies(*model_, s);
  Sequence seq(*model_, policies);
  Forward fwd(*model_, pool_.get());
  EngineStep step(fwd);
  std::vector<int32_t> prompt(17, 80);
  EXPECT_THROW(feed(step, seq, prompt), Error);
  EXPECT_EQ(seq.cache().n_processed(), 0);
  EXPECT_EQ(seq.room(), 16);
  prompt.resize(16);
  feed(step, seq, prompt);
  EXPECT_EQ(seq.room(), 0);
}

TEST_F(SequenceContext, CompressingPolicyPassesTheContextAndAnnouncesItOnce) {
  std::vector<std::string> notes;
  const GenerateResult r = run(tri(64), 10, 700, &notes);
  EXPECT_EQ(r.tokens.size(), 700u);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_LE(r.stats.kv_peak_tokens, 64 + 16);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("passes 512 tokens"), std::string::npos) << notes[0];
}

// The cache reserves what the generation can reach: a budget far above it reserves only
// prompt + max tokens (B = 1e6 used to preallocate 545 MB for this 656K-parameter model), and
// a long generation only its bound.
TEST_F(SequenceContext, ReservesOnlyWhatTheGenerationCanHold) {
  std::vector<std::string> notes;
  PolicyFactory huge(*model_, tri(1'000'000));
  Sequence a(*model_, huge);
  EXPECT_EQ(a.memory_bound(), 1'000'000 + 16);
  EXPECT_EQ(a.cache().capacity(), 0);
  Forward fwd(*model_, pool_.get());
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp);
  GenerateOptions opt;
  opt.n_predict = 10;
  const std::vector<int32_t> prompt = {1, 80, 147};
  generate(*model_, fwd, a, prompt, opt, sampler);
  EXPECT_EQ(a.cache().capacity(), 13);  // 13 tokens (a fresh cache reserves exactly, kv_cache.h)
  PolicyFactory small(*model_, tri(100));
  Sequence b(*model_, small);
  opt.n_predict = test::sanitizer_size(5000, 400);  // many times the bound either way
  opt.stop_at_eog = false;
  generate(*model_, fwd, b, prompt, opt, sampler);
  EXPECT_EQ(b.cache().capacity(), 116);
  PolicyFactory full(*model_, KvSettings{});
  Sequence c(*model_, full);
  c.reserve_for(100000);
  EXPECT_EQ(c.cache().capacity(), 512);  // full attention: the context
}

// A streamed reply (keep_output off) holds nothing per generated token: its text, offsets and
// log-probabilities go to the callbacks only, so a stream of any length runs in constant memory.
TEST_F(SequenceContext, AGenerationThatKeepsNoOutputHoldsNothingPerToken) {
  PolicyFactory policies(*model_, tri(64));
  Forward fwd(*model_, pool_.get());
  SamplerParams sp;
  sp.temperature = 0;
  GenerateOptions opt;
  opt.n_predict = 300;
  opt.stop_at_eog = false;
  opt.logprobs = 2;
  const std::vector<int32_t> prompt = {1, 80, 147};
  Sequence kept_seq(*model_, policies);
  Sampler kept_sampler(sp);
  const GenerateResult kept = generate(*model_, fwd, kept_seq, prompt, opt, kept_sampler);
  ASSERT_EQ(kept.tokens.size(), 300u);
  ASSERT_EQ(kept.logprobs.size(), 300u);

  opt.keep_output = false;
  Sequence streamed_seq(*model_, policies);
  Sampler streamed_sampler(sp);
  std::string text;
  const GenerateResult streamed = generate(*model_, fwd, streamed_seq, prompt, opt, streamed_sampler,
                                           [&](const std::string& t) { text += t; return true; });
  EXPECT_EQ(text, kept.text);
  EXPECT_TRUE(streamed.tokens.empty());
  EXPECT_TRUE(streamed.text.empty());
  EXPECT_TRUE(streamed.text_offsets.empty());
  EXPECT_TRUE(streamed.logprobs.empty());
  EXPECT_EQ(streamed.stats.generated_tokens, 300);
  EXPECT_EQ(streamed.finish_reason, "length");
}

TEST_F(SequenceContext, ProtectionThatOutgrowsTheBudgetRaisesTheBoundAndSaysSo) {
  KvSettings s = tri(32);
  s.params.protect_prompt = true;
  std::vector<std::string> notes;
  const GenerateResult r = run(s, 100, 100, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the protected prompt (100 tokens) does not fit"), std::string::npos) << notes[0];
  EXPECT_LE(r.stats.kv_peak_tokens, 100 + 8 + 16);
  EXPECT_LE(r.stats.prune_events, 100 / 16 + 1);
}

}  // namespace
}  // namespace triattn
