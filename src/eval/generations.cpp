#include "eval/generations.h"

#include <algorithm>
#include <exception>
#include <memory>

#include "core/error.h"
#include "engine/scheduler.h"

namespace triattn::eval {

int eval_parallel(size_t n_configs, size_t n_jobs) {
  // At least 8 (decode of 8 sequences reads the weights once for 8 tokens), at least one
  // sequence per configuration; never more than there are jobs.
  const size_t want = std::max<size_t>(8, n_configs);
  return static_cast<int>(std::max<size_t>(1, std::min(want, n_jobs)));
}

namespace {

// The scheduler, the jobs and what each conversation's sequence holds so far. At most
// `parallel` jobs are in flight: the next starts as one ends, so a conversation's next turn
// never waits behind every other job while its sequence is kept.
class ConversationRunner {
 public:
  ConversationRunner(const Model& model, Forward& forward, const std::vector<GenerationJob>& jobs, int parallel,
                     const std::function<void(size_t)>& on_done)
      : model_(model), jobs_(jobs), on_done_(on_done), results_(jobs.size()), history_(jobs.size()) {
    SchedulerOptions so;
    so.parallel = std::max(1, parallel);
    so.max_queued = so.parallel;
    int64_t chunk = 1;
    bool turns = false;
    for (const GenerationJob& j : jobs) {
      chunk = std::max(chunk, j.policies->settings().prefill_chunk);
      turns = turns || !j.follow_ups.empty();
    }
    // Room for every running sequence's decode token and two whole prefill chunks: a pruning
    // sequence's chunk waits for a step it fits in whole, and a second sequence's prompt then
    // goes in the same step instead of a sliver of it.
    so.max_batched_tokens = 2 * chunk + so.parallel;
    // A sequence whose job has another turn waits here for it (one per job in flight).
    so.reuse_slots = turns ? so.parallel : 0;
    scheduler_ = std::make_unique<Scheduler>(model, forward, so);
    parallel_ = static_cast<size_t>(so.parallel);
  }

  std::vector<std::vector<GenerateResult>> run() {
    while (next_ < jobs_.size() && next_ < parallel_) submit(next_++, 0);
    scheduler_->run_until_idle();
    if (error_) std::rethrow_exception(error_);
    for (const std::vector<GenerateResult>& turns : results_)
      for (const GenerateResult& g : turns)
        if (g.finish_reason == "error") fail(g.error);
    return std::move(results_);
  }

 private:
  void submit(size_t i, size_t turn) {
    const GenerationJob& job = jobs_[i];
    const bool last = turn == job.follow_ups.size();
    Request r;
    if (turn == 0) {
      r.prompt = job.prompt;
      r.options = job.options;
    } else {
      r.prompt = history_[i];
      const FollowUp& f = job.follow_ups[turn - 1];
      if (f.prompt.empty()) fail("evaluation: job ", i + 1, " turn ", turn + 1, " has an empty prompt");
      r.prompt.insert(r.prompt.end(), f.prompt.begin(), f.prompt.end());
      r.options = f.options;
    }
    if (!last) {  // the next turn continues after the whole reply
      r.options.feed_last = true;
      r.options.keep_output = true;
    }
    r.sampling = job.sampling;
    r.reuse = turn > 0;  // a first turn starts a fresh sequence, whatever is kept
    r.policies = job.policies;
    const size_t continued = turn > 0 ? history_[i].size() : 0;
    const bool eog_ends = r.options.stop_at_eog;
    history_[i] = r.prompt;
    r.on_done = [this, i, turn, last, continued, eog_ends](int, const GenerateResult& g) {
      try {
        ended(i, turn, last, continued, eog_ends, g);
      } catch (...) {
        if (!error_) error_ = std::current_exception();
      }
    };
    const SubmitResult s = scheduler_->submit(std::move(r));
    if (s.status != SubmitResult::Status::Queued) fail("evaluation: job ", i + 1, " was refused: ", s.reason);
  }

  void ended(size_t i, size_t turn, bool last, size_t continued, bool eog_ends, const GenerateResult& g) {
    results_[i].push_back(g);
    const bool failed = g.finish_reason == "error";
    if (!failed && turn > 0 && static_cast<size_t>(g.reused_tokens) != continued)
      fail("evaluation: job ", i + 1, " turn ", turn + 1, " did not continue the sequence of turn ", turn, " (",
           g.reused_tokens, " of its ", continued, " tokens continued)");
    if (!failed && !last) {
      // What the sequence fed: the reply, less an end-of-generation token that ended it.
      std::vector<int32_t> reply = g.tokens;
      if (!reply.empty() && eog_ends && g.finish_reason == "stop" &&
          model_.tokenizer().is_eog(reply.back()))
        reply.pop_back();
      history_[i].insert(history_[i].end(), reply.begin(), reply.end());
      submit(i, turn + 1);
      return;
    }
    if (on_done_) on_done_(i);
    if (next_ < jobs_.size() && !error_) submit(next_++, 0);  // after an error, only what runs finishes
  }

  const Model& model_;
  const std::vector<GenerationJob>& jobs_;
  const std::function<void(size_t)>& on_done_;
  std::unique_ptr<Scheduler> scheduler_;
  size_t parallel_ = 1;
  size_t next_ = 0;  // the next job to start
  std::vector<std::vector<GenerateResult>> results_;
  std::vector<std::vector<int32_t>> history_;  // per job: the tokens its sequence holds (its last prompt)
  std::exception_ptr error_;                   // the first error raised in a callback
};

}  // namespace

std::vector<std::vector<GenerateResult>> run_conversations(const Model& model, Forward& forward,
                                                           const std::vector<GenerationJob>& jobs, int parallel,
                                                           const std::function<void(size_t job)>& on_done) {
  if (jobs.empty()) return {};
  return ConversationRunner(model, forward, jobs, parallel, on_done).run();
}

std::vector<GenerateResult> run_generations(const Model& model, Forward& forward, const std::vector<GenerationJob>& jobs,
                                            int parallel, const std::function<void(size_t job)>& on_done) {
  std::vector<GenerateResult> last;
  last.reserve(jobs.size());
  for (std::vector<GenerateResult>& turns : run_conversations(model, forward, jobs, parallel, on_done))
    last.push_back(std::move(turns.back()));
  return last;
}

}  // namespace triattn::eval
