// The engine step over many sequences (engine/scheduler.h): batched greedy output equals
// each request run alone, every step's tokens stay within the budget with decode tokens
// first, at most `parallel` sequences run, the KV pool is never over-reserved and admits
// more compressed requests than full ones, and cancellation frees a sequence at once.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "scheduler_test_fixture.h"

namespace triattn {
namespace {

using SchedulerTest = test::SchedulerTest;

// Prompts longer than the step budget are prefilled in chunks while the others decode; full
// and compressed requests share steps; each gets exactly the tokens it gets alone.
TEST_F(SchedulerTest, BatchedGreedyTokensEqualRunningAlone) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.max_batched_tokens = 16;
  opt.parallel = 6;
  Scheduler s(*model_, fwd, opt);
  struct Case {
    int prompt_len;
    int64_t n;
    const PolicyFactory* f;
  };
  const std::vector<Case> cases = {{7, 40, full_.get()}, {50, 30, full_.get()}, {3, 60, tri_.get()},
                                   {90, 50, tri_.get()}, {12, 1, full_.get()},  {33, 25, tri_.get()}};
  std::map<int, GenerateResult> got;
  for (size_t i = 0; i < cases.size(); ++i) {
    Request r = request(prompt(cases[i].prompt_len, static_cast<int>(i)), cases[i].n, *cases[i].f, nullptr);
    r.on_done = [&got, i](int, const GenerateResult& g) { got[static_cast<int>(i)] = g; };
    ASSERT_EQ(s.submit(std::move(r)).status, SubmitResult::Status::Queued);
  }
  int steps = 0;
  for (;;) {
    const StepStats st = s.step();
    if (st.sequences == 0) break;
    EXPECT_LE(st.decode_tokens + st.prefill_tokens, 16);
    ++steps;
  }
  ASSERT_EQ(got.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const GenerateResult a = alone(prompt(cases[i].prompt_len, static_cast<int>(i)), cases[i].n, *cases[i].f);
    EXPECT_EQ(got[static_cast<int>(i)].tokens, a.tokens) << "request " << i;
    EXPECT_EQ(got[static_cast<int>(i)].finish_reason, "length");
    EXPECT_EQ(got[static_cast<int>(i)].stats.kv_peak_tokens, a.stats.kv_peak_tokens) << "request " << i;
  }
  EXPECT_LT(steps, 60 + 40);  // sequences shared steps (alone: 255 forward calls)
  EXPECT_EQ(s.kv_reserved_bytes(), 0u);
}

// Decoding sequences get their token in every step; a long prompt arriving meanwhile fills
// only what is left of the budget.
TEST_F(SchedulerTest, DecodeTokensComeFirstAndPrefillFillsTheRest) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.max_batched_tokens = 10;
  Scheduler s(*model_, fwd, opt);
  std::map<uint64_t, GenerateResult> done;
  for (int i = 0; i < 3; ++i) s.submit(request(prompt(4, i), 80, *full_, &done));
  while (s.step().prefill_tokens > 0) {
  }
  s.submit(request(prompt(200, 9), 5, *full_, &done));
  int64_t prefilled = 0;
  for (int k = 0; k < 40 && prefilled < 200; ++k) {
    const StepStats st = s.step();
    EXPECT_EQ(st.decode_tokens, 3) << "step " << k;
    EXPECT_LE(st.prefill_tokens, 7);
    prefilled += st.prefill_tokens;
  }
  EXPECT_EQ(prefilled, 200);  // 7 per step: the whole prompt within 29 steps
  s.run_until_idle();
  EXPECT_EQ(done.size(), 4u);
}

TEST_F(SchedulerTest, AtMostParallelSequencesRun) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.parallel = 2;
  Scheduler s(*model_, fwd, opt);
  std::map<uint64_t, GenerateResult> done;
  for (int i = 0; i < 5; ++i) s.submit(request(prompt(5, i), 10, *full_, &done));
  while (s.running() + s.queued() > 0) {
    const StepStats st = s.step();
    EXPECT_LE(st.sequences, 2);
    EXPECT_LE(s.running(), 2);
  }
  EXPECT_EQ(done.size(), 5u);
}

// The pool holds two full-attention reservations (prompt + max tokens); the same pool holds
// many more TriAttention ones (B + β per stream), and reservations never exceed it.
TEST_F(SchedulerTest, KvPoolAdmitsByReservationAndCompressionFitsMore) {
  Forward fwd(*model_, pool_.get());
  std::map<uint64_t, GenerateResult> done;
  SchedulerOptions probe_opt;
  Scheduler probe(*model_, fwd, probe_opt);
  const size_t full_bytes = probe.reservation_bytes(request(prompt(10, 0), 300, *full_, &done));
  const size_t tri_bytes = probe.reservation_bytes(request(prompt(10, 0), 300, *tri_, &done));
  const ModelConfig& c = model_->config();
  EXPECT_EQ(full_bytes, size_t{310} * c.n_layers * c.n_kv_heads * 16 * 2 * 2);  // f16 rows of 16
  EXPECT_EQ(tri_bytes, size_t{32 + 8} * c.n_layers * c.n_kv_heads * 16 * 2 * 2);

  for (const PolicyFactory* f : {full_.get(), tri_.get()}) {
    SchedulerOptions opt;
    opt.parallel = 16;
    opt.kv_memory_bytes = 2 * full_bytes;
    Scheduler s(*model_, fwd, opt);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(s.submit(request(prompt(10, i), 300, *f, &done)).status,
                                           SubmitResult::Status::Queued);
    int most = 0;
    while (s.running() + s.queued() > 0) {
      s.step();
      most = std::max(most, s.running());
      EXPECT_LE(s.kv_reserved_bytes(), opt.kv_memory_bytes);
      EXPECT_LE(s.kv_bytes_in_use(), opt.kv_memory_bytes);
    }
    if (f == full_.get()) EXPECT_EQ(most, 2);
    else EXPECT_EQ(most, 10);  // 10 x 40 rows fit where 2 x 310 do
  }
  // A request that can never fit the pool is refused at once, naming the sizes.
  SchedulerOptions tiny;
  tiny.kv_memory_bytes = full_bytes - 1;
  Scheduler s(*model_, fwd, tiny);
  const SubmitResult r = s.submit(request(prompt(10, 0), 300, *full_, &done));
  EXPECT_EQ(r.status, SubmitResult::Status::TooLarge);
  EXPECT_NE(r.reason.find("more than the whole pool"), std::string::npos) << r.reason;
}

TEST_F(SchedulerTest, CancelFreesTheSequenceAtTheNextStep) {
  Forward fwd(*model_, pool_.get());
  Scheduler s(*model_, fwd, SchedulerOptions{});
  std::map<uint64_t, GenerateResult> done;
  uint64_t a = 0, b = 0;
  a = s.submit(request(prompt(5, 1), 400, *full_, &done, &a)).id;
  b = s.submit(request(prompt(5, 2), 20, *full_, &done, &b)).id;
  for (int i = 0; i < 5; ++i) s.step();
  const size_t both = s.kv_reserved_bytes();
  s.cancel(a);
  s.step();
  ASSERT_TRUE(done.count(a));
  EXPECT_EQ(done[a].finish_reason, "cancelled");
  EXPECT_LT(done[a].tokens.size(), 10u);
  EXPECT_LT(s.kv_reserved_bytes(), both);
  EXPECT_EQ(s.running(), 1);
  s.run_until_idle();
  EXPECT_EQ(done[b].tokens.size(), 20u);  // the other went on
  EXPECT_EQ(s.kv_reserved_bytes(), 0u);
  // A queued request cancelled before it starts never runs.
  uint64_t c = 0;
  c = s.submit(request(prompt(5, 3), 20, *full_, &done, &c)).id;
  s.cancel(c);
  s.run_until_idle();
  EXPECT_EQ(done[c].finish_reason, "cancelled");
  EXPECT_TRUE(done[c].tokens.empty());
}

TEST_F(SchedulerTest, BadRequestsAreRefusedAtSubmitAndAFullQueueSaysSo) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.max_queued = 1;
  Scheduler s(*model_, fwd, opt);
  std::map<uint64_t, GenerateResult> done;
  Request bad = request(prompt(5, 0), 5, *full_, &done);
  bad.sampling.top_p = 2;
  EXPECT_THROW(s.submit(std::move(bad)), Error);
  EXPECT_THROW(s.submit(request(prompt(600, 0), 5, *full_, &done)), Error);  // past the 512 context
  Request oov = request(prompt(5, 0), 5, *full_, &done);
  oov.prompt.push_back(99999);
  EXPECT_THROW(s.submit(std::move(oov)), Error);
  EXPECT_EQ(s.submit(request(prompt(5, 0), 5, *full_, &done)).status, SubmitResult::Status::Queued);
  EXPECT_EQ(s.submit(request(prompt(5, 1), 5, *full_, &done)).status, SubmitResult::Status::QueueFull);
  s.run_until_idle();
  EXPECT_EQ(done.size(), 1u);
}

}  // namespace
}  // namespace triattn
