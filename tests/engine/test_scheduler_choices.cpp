// A request's n choices share one prefill (the sequence forked when its prompt is in) and each
// equals the same request run alone with seed + choice; prompt log-probabilities equal the
// log-softmax of a full forward pass's logits.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "engine/logprobs.h"
#include "scheduler_test_fixture.h"

namespace triattn {
namespace {

using SchedulerChoicesTest = test::SchedulerTest;

// Sampled (not greedy) so that the choices differ; each must be exactly what a request with
// seed + i gives alone: the fork copies the prompt's cache and sampler state faithfully.
GenerateResult sampled_alone(const Model& m, const PolicyFactory& f, const std::vector<int32_t>& prompt, int64_t n,
                             uint64_t seed, ThreadPool* pool) {
  Forward fwd(m, pool);
  SamplerParams sp;
  sp.temperature = 1.0f;
  sp.seed = seed;
  return generate_fresh(m, fwd, f, prompt, n, sp);
}

TEST_F(SchedulerChoicesTest, ChoicesSharePrefillAndEachEqualsItsSeedAlone) {
  for (const PolicyFactory* f : {full_.get(), tri_.get()}) {
    Forward fwd(*model_, pool_.get());
    SchedulerOptions opt;
    opt.parallel = 4;
    Scheduler s(*model_, fwd, opt);
    const std::vector<int32_t> p = prompt(70, 5);
    std::map<int, GenerateResult> got;
    Request r = request(p, 40, *f, nullptr);
    r.n = 3;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 1234;
    r.on_done = [&got](int c, const GenerateResult& g) { got[c] = g; };
    const SubmitResult sub = s.submit(std::move(r));
    ASSERT_EQ(sub.status, SubmitResult::Status::Queued);
    EXPECT_EQ(sub.kv_bytes, 3 * s.reservation_bytes(request(p, 40, *f, nullptr)));
    int64_t prefill = 0, max_running = 0;
    for (;;) {
      const StepStats st = s.step();
      prefill += st.prefill_tokens;
      max_running = std::max<int64_t>(max_running, s.running());
      if (st.sequences == 0 && s.running() == 0) break;
    }
    EXPECT_EQ(prefill, static_cast<int64_t>(p.size())) << "the prompt is prefilled once for all choices";
    EXPECT_EQ(max_running, 3);
    ASSERT_EQ(got.size(), 3u);
    for (int c = 0; c < 3; ++c) {
      const GenerateResult alone = sampled_alone(*model_, *f, p, 40, 1234 + c, pool_.get());
      EXPECT_EQ(got[c].tokens, alone.tokens) << f->settings().policy << " choice " << c;
      EXPECT_EQ(got[c].text, alone.text);
    }
    EXPECT_NE(got[0].tokens, got[1].tokens) << "choices sample apart";
    EXPECT_EQ(s.kv_reserved_bytes(), 0u);
  }
}

// Every policy forks with its observations (H2O's sums, SnapKV's recent queries, the random
// baseline's draw): greedy choices that prune after the fork each equal the request alone.
TEST_F(SchedulerChoicesTest, EveryPolicyForksWithItsState) {
  const std::vector<int32_t> p = prompt(50, 7);
  for (const PolicyInfo& info : kv_policy_list()) {
    KvSettings kv;
    kv.policy = info.name;
    kv.params.budget = 24;
    kv.params.divide_length = 8;
    kv.params.window = 4;
    kv.params.stats = stats_;
    const PolicyFactory f(*model_, kv);
    Forward fwd(*model_, pool_.get());
    Scheduler s(*model_, fwd, SchedulerOptions{});
    std::map<int, GenerateResult> got;
    Request r = request(p, 30, f, nullptr);
    r.n = 2;
    r.on_done = [&got](int c, const GenerateResult& g) { got[c] = g; };
    s.submit(std::move(r));
    s.run_until_idle();
    const GenerateResult one = alone(p, 30, f);
    ASSERT_EQ(got.size(), 2u) << info.name;
    EXPECT_EQ(got[0].tokens, one.tokens) << info.name;
    EXPECT_EQ(got[1].tokens, one.tokens) << info.name;
    if (info.prunes) {
      EXPECT_GT(got[1].stats.prune_events, 1) << info.name << " prunes after the fork too";
    }
  }
}

TEST_F(SchedulerChoicesTest, MoreChoicesThanParallelAreRefused) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.parallel = 2;
  Scheduler s(*model_, fwd, opt);
  Request r = request(prompt(5, 0), 5, *full_, nullptr);
  r.n = 3;
  EXPECT_THROW(s.submit(std::move(r)), Error);
  Request z = request(prompt(5, 0), 5, *full_, nullptr);
  z.n = 0;
  EXPECT_THROW(s.submit(std::move(z)), Error);
}

TEST_F(SchedulerChoicesTest, CancellingARequestEndsAllItsChoices) {
  Forward fwd(*model_, pool_.get());
  Scheduler s(*model_, fwd, SchedulerOptions{});
  std::map<int, GenerateResult> got;
  Request r = request(prompt(8, 1), 400, *full_, nullptr);
  r.n = 2;
  r.on_done = [&got](int c, const GenerateResult& g) { got[c] = g; };
  const uint64_t id = s.submit(std::move(r)).id;
  for (int i = 0; i < 4; ++i) s.step();
  EXPECT_EQ(s.running(), 2);
  s.cancel(id);
  s.step();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].finish_reason, "cancelled");
  EXPECT_EQ(got[1].finish_reason, "cancelled");
  EXPECT_EQ(s.running(), 0);
  EXPECT_EQ(s.kv_reserved_bytes(), 0u);
}

// A request cancelled while it prefills ends its unforked choices too, and frees all of it.
TEST_F(SchedulerChoicesTest, ChoicesNotYetForkedEndWithTheirRequest) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.max_batched_tokens = 16;
  Scheduler s(*model_, fwd, opt);
  std::map<int, GenerateResult> got;
  Request r = request(prompt(200, 2), 10, *full_, nullptr);
  r.n = 3;
  r.on_done = [&got](int c, const GenerateResult& g) { got[c] = g; };
  const uint64_t id = s.submit(std::move(r)).id;
  s.step();
  EXPECT_EQ(s.running(), 3) << "every choice holds its slot from admission";
  s.cancel(id);
  s.step();
  ASSERT_EQ(got.size(), 3u);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(got[c].finish_reason, "cancelled");
  EXPECT_EQ(s.running(), 0);
  EXPECT_EQ(s.kv_reserved_bytes(), 0u);
}

TEST_F(SchedulerChoicesTest, PromptLogprobsAreTheLogSoftmaxOfEveryPosition) {
  const std::vector<int32_t> p = prompt(40, 3);
  // The reference: one forward call over the prompt on a fresh cache, every position's logits.
  KvCache cache(KvCacheShape{model_->config().n_layers, model_->config().n_kv_heads, model_->config().head_dim,
                             DType::F16});
  Forward ref_fwd(*model_, pool_.get());
  ForwardItem item;
  item.cache = &cache;
  item.tokens = p;
  item.logits = ForwardItem::Logits::All;
  std::vector<std::vector<float>> logits;
  ref_fwd.run(std::span<const ForwardItem>(&item, 1), logits);
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);

  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.max_batched_tokens = 16;  // the prompt in chunks: the positions must line up across them
  Scheduler s(*model_, fwd, opt);
  GenerateResult got;
  Request r = request(p, 3, *full_, nullptr);
  r.options.prompt_logprobs = 2;
  r.options.logprobs = 1;
  r.on_done = [&got](int, const GenerateResult& g) { got = g; };
  s.submit(std::move(r));
  s.run_until_idle();
  ASSERT_EQ(got.prompt_logprobs.size(), p.size() - 1);
  for (size_t t = 0; t + 1 < p.size(); ++t) {
    const std::span<const float> row(logits[0].data() + t * vocab, vocab);
    double max = -1e30, sum = 0;
    for (float x : row) max = std::max<double>(max, x);
    for (float x : row) sum += std::exp(x - max);
    const double want = row[static_cast<size_t>(p[t + 1])] - max - std::log(sum);
    EXPECT_NEAR(got.prompt_logprobs[t].logprob, want, 2e-3) << "position " << t;
    EXPECT_EQ(got.prompt_logprobs[t].id, p[t + 1]);
    ASSERT_EQ(got.prompt_logprobs[t].top.size(), 2u);
    EXPECT_GE(got.prompt_logprobs[t].top[0].second, got.prompt_logprobs[t].top[1].second);
  }
  // The first generated token is greedy: its log-probability is the best one.
  ASSERT_EQ(got.logprobs.size(), 3u);
  EXPECT_EQ(got.logprobs[0].top[0].first, got.tokens[0]);
  EXPECT_FLOAT_EQ(got.logprobs[0].top[0].second, got.logprobs[0].logprob);
}

}  // namespace
}  // namespace triattn
