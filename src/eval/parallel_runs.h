#pragma once
// Runs the independent jobs of one evaluation (one per configuration, or per configuration
// × sample) on the machine's threads, all sharing one loaded model: every worker thread has
// its own Forward (scratch buffers) and, when there are more threads than workers, its own
// small ThreadPool for the matrix products. Jobs are claimed in order from a shared counter.
#include <cstdint>
#include <functional>

#include "model/forward.h"
#include "model/model.h"

namespace triattn::eval {

// job(index, forward) for index in [0, n_jobs). model may be null (jobs that talk to a
// server): forward is then null. threads: 0 = all cores. The first exception a job throws
// stops the others from starting new jobs and is rethrown here once all have stopped.
void run_parallel(const Model* model, int64_t n_jobs, int threads,
                  const std::function<void(int64_t index, Forward* forward)>& job);

// The workers run_parallel would start for n_jobs on `threads` (0 = all cores).
int parallel_workers(int64_t n_jobs, int threads);

}  // namespace triattn::eval
