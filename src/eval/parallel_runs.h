#pragma once
// Requests to a remote server kept in flight together (the engine's own runs batch on one
// scheduler instead, eval/generations.h). Jobs are claimed in order from a shared counter.
#include <cstdint>
#include <functional>

namespace triattn::eval {

// job(index) for index in [0, n_jobs) on `threads` threads (0 = all cores). The first
// exception a job throws stops the others from starting new jobs and is rethrown here once
// all have stopped.
void run_parallel(int64_t n_jobs, int threads, const std::function<void(int64_t index)>& job);

}  // namespace triattn::eval
