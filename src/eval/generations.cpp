#include "eval/generations.h"

#include <algorithm>

#include "core/error.h"
#include "engine/scheduler.h"

namespace triattn::eval {

int eval_parallel(size_t n_configs, size_t n_jobs) {
  // At least 8 (decode of 8 sequences reads the weights once for 8 tokens), at least one
  // sequence per configuration; never more than there are jobs.
  const size_t want = std::max<size_t>(8, n_configs);
  return static_cast<int>(std::max<size_t>(1, std::min(want, n_jobs)));
}

std::vector<GenerateResult> run_generations(const Model& model, Forward& forward, const std::vector<GenerationJob>& jobs,
                                            int parallel, const std::function<void(size_t job)>& on_done) {
  std::vector<GenerateResult> results(jobs.size());
  if (jobs.empty()) return results;
  SchedulerOptions so;
  so.parallel = std::max(1, parallel);
  so.max_queued = static_cast<int>(jobs.size());
  int64_t chunk = 1;
  for (const GenerationJob& j : jobs) chunk = std::max(chunk, j.policies->settings().prefill_chunk);
  // Room for every running sequence's decode token and two whole prefill chunks: a pruning
  // sequence's chunk waits for a step it fits in whole, and a second sequence's prompt then
  // goes in the same step instead of a sliver of it.
  so.max_batched_tokens = 2 * chunk + so.parallel;
  Scheduler scheduler(model, forward, so);
  for (size_t i = 0; i < jobs.size(); ++i) {
    Request r;
    r.prompt = jobs[i].prompt;
    r.options = jobs[i].options;
    r.sampling = jobs[i].sampling;
    r.reuse = false;
    r.policies = jobs[i].policies;
    r.on_done = [&results, &on_done, i](int, const GenerateResult& g) {
      results[i] = g;
      if (on_done) on_done(i);
    };
    const SubmitResult s = scheduler.submit(std::move(r));
    if (s.status != SubmitResult::Status::Queued) fail("evaluation: job ", i + 1, " was refused: ", s.reason);
  }
  scheduler.run_until_idle();
  for (const GenerateResult& g : results)
    if (g.finish_reason == "error") fail(g.error);
  return results;
}

}  // namespace triattn::eval
