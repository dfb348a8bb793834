// Conversation reuse (SchedulerOptions::reuse_slots): a request whose prompt starts with a
// kept sequence's whole history continues its cache (compressed or not) instead of
// prefilling it again, and gets what a fresh run of the whole prompt gets under full
// attention; kept sequences give their pool room back to waiting requests.
#include <gtest/gtest.h>

#include "core/error.h"
#include "scheduler_test_fixture.h"

namespace triattn {
namespace {

using SchedulerReuseTest = test::SchedulerTest;

struct Turn {
  GenerateResult result;
  int64_t prefilled = 0;  // prompt tokens the steps fed
};

Turn run(Scheduler& s, Request r) {
  Turn t;
  r.on_done = [&t](int, const GenerateResult& g) { t.result = g; };
  EXPECT_EQ(s.submit(std::move(r)).status, SubmitResult::Status::Queued);
  for (;;) {
    const StepStats st = s.step();
    t.prefilled += st.prefill_tokens;
    if (st.sequences == 0 && s.running() == 0 && s.queued() == 0) break;
  }
  return t;
}

// --stats auto: two requests' settings, made separately as the server makes them, are equal,
// so the next turn continues the kept sequence, and with it the statistics its policy summed
// over every token it fed.
TEST_F(SchedulerReuseTest, StatsAutoSettingsMadeTwiceContinueTheKeptSequence) {
  KvSettings kv;
  kv.policy = "triattention";
  kv.stats_path = std::string(kStatsAuto);
  kv.params.budget = 32;
  kv.params.divide_length = 8;
  kv.params.window = 8;
  const PolicyFactory first(*model_, kv), second(*model_, kv);
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.reuse_slots = 1;
  Scheduler s(*model_, fwd, opt);
  const std::vector<int32_t> p1 = prompt(60, 2);
  const Turn a = run(s, request(p1, 30, first, nullptr));
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), a.result.tokens.begin(), a.result.tokens.end());
  p2.push_back(100);
  const Turn b = run(s, request(p2, 10, second, nullptr));
  EXPECT_EQ(b.result.reused_tokens, static_cast<int64_t>(p1.size() + a.result.tokens.size()) - 1);
  EXPECT_GT(b.result.stats.prune_events, 0);
}

TEST_F(SchedulerReuseTest, TheNextTurnContinuesTheKeptCache) {
  for (const PolicyFactory* f : {full_.get(), tri_.get()}) {
    Forward fwd(*model_, pool_.get());
    SchedulerOptions opt;
    opt.reuse_slots = 2;
    Scheduler s(*model_, fwd, opt);
    const std::vector<int32_t> p1 = prompt(60, 1);
    const Turn a = run(s, request(p1, 30, *f, nullptr));
    EXPECT_EQ(a.result.reused_tokens, 0);
    EXPECT_EQ(s.kept(), 1);
    EXPECT_GT(s.kv_reserved_bytes(), 0u) << "a kept sequence keeps its reservation";
    // The next turn: the first prompt, the reply, and more.
    std::vector<int32_t> p2 = p1;
    p2.insert(p2.end(), a.result.tokens.begin(), a.result.tokens.end());
    for (int i = 0; i < 12; ++i) p2.push_back(100 + i);
    const Turn b = run(s, request(p2, 20, *f, nullptr));
    // The last reply token was sampled but never fed: it is prefilled with the new text.
    const int64_t held = static_cast<int64_t>(p1.size() + a.result.tokens.size()) - 1;
    EXPECT_EQ(b.result.reused_tokens, held) << f->settings().policy;
    EXPECT_EQ(b.prefilled, static_cast<int64_t>(p2.size()) - held);
    if (f == full_.get()) {  // nothing was evicted: exactly a fresh run of the whole prompt
      EXPECT_EQ(b.result.tokens, alone(p2, 20, *f).tokens);
    } else {
      EXPECT_LE(b.result.stats.kv_peak_tokens, s.reservation_bytes(request(p2, 20, *f, nullptr)) /
                                                   (2 * row_bytes(DType::F16, model_->config().head_dim) *
                                                    model_->config().n_layers * model_->config().n_kv_heads));
    }
  }
}

TEST_F(SchedulerReuseTest, OnlyAPromptHoldingTheWholeHistoryWithTheSameSettingsReuses) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.reuse_slots = 4;
  Scheduler s(*model_, fwd, opt);
  const std::vector<int32_t> p1 = prompt(30, 2);
  const Turn a = run(s, request(p1, 10, *full_, nullptr));
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), a.result.tokens.begin(), a.result.tokens.end());
  // Different settings: no reuse.
  EXPECT_EQ(run(s, request(p2, 5, *tri_, nullptr)).result.reused_tokens, 0);
  // A prompt that differs inside the history: no reuse.
  std::vector<int32_t> other = p2;
  other[10] = other[10] + 1;
  EXPECT_EQ(run(s, request(other, 5, *full_, nullptr)).result.reused_tokens, 0);
  // Prompt log-probabilities need every position: no reuse.
  Request lp = request(p2, 5, *full_, nullptr);
  lp.options.prompt_logprobs = 0;
  const Turn l = run(s, std::move(lp));
  EXPECT_EQ(l.result.reused_tokens, 0);
  EXPECT_EQ(l.result.prompt_logprobs.size(), p2.size() - 1);
  // The kept one is still there for the real next turn.
  EXPECT_GT(run(s, request(p2, 5, *full_, nullptr)).result.reused_tokens, 0);
  EXPECT_LE(s.kept(), 4);
}

TEST_F(SchedulerReuseTest, KeptSequencesGiveTheirRoomToWaitingRequests) {
  Forward fwd(*model_, pool_.get());
  Scheduler probe(*model_, fwd, SchedulerOptions{});
  const size_t one = probe.reservation_bytes(request(prompt(20, 0), 20, *full_, nullptr));
  SchedulerOptions opt;
  opt.reuse_slots = 4;
  opt.kv_memory_bytes = one + one / 2;  // room for one request at a time
  Scheduler s(*model_, fwd, opt);
  run(s, request(prompt(20, 1), 20, *full_, nullptr));
  EXPECT_EQ(s.kept(), 1);
  const Turn b = run(s, request(prompt(20, 2), 20, *full_, nullptr));
  EXPECT_EQ(b.result.tokens.size(), 20u) << "admitted by dropping the kept sequence";
  EXPECT_EQ(s.kept(), 1);
  EXPECT_LE(s.kv_reserved_bytes(), opt.kv_memory_bytes);
}

TEST_F(SchedulerReuseTest, CancelledAndFailedSequencesAreNotKept) {
  Forward fwd(*model_, pool_.get());
  SchedulerOptions opt;
  opt.reuse_slots = 2;
  Scheduler s(*model_, fwd, opt);
  GenerateResult got;
  Request r = request(prompt(10, 3), 400, *full_, nullptr);
  r.on_done = [&got](int, const GenerateResult& g) { got = g; };
  const uint64_t id = s.submit(std::move(r)).id;
  for (int i = 0; i < 3; ++i) s.step();
  s.cancel(id);
  s.run_until_idle();
  EXPECT_EQ(got.finish_reason, "cancelled");
  EXPECT_EQ(s.kept(), 0);
  EXPECT_EQ(s.kv_reserved_bytes(), 0u) << "a cancelled request frees its memory at once";
}

}  // namespace
}  // namespace triattn
