#include "eval/parallel_runs.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace triattn::eval {

namespace {
int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}
}  // namespace

int parallel_workers(int64_t n_jobs, int threads) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n_jobs, resolve_threads(threads))));
}

void run_parallel(const Model* model, int64_t n_jobs, int threads,
                  const std::function<void(int64_t index, Forward* forward)>& job) {
  if (n_jobs <= 0) return;
  const int total = resolve_threads(threads);
  const int workers = parallel_workers(n_jobs, threads);
  // Threads left over when there are fewer jobs than threads go to the workers' matmuls.
  const int per_worker = std::max(1, total / workers);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    try {
      std::unique_ptr<ThreadPool> pool;
      std::unique_ptr<Forward> forward;
      if (model) {
        if (per_worker > 1) pool = std::make_unique<ThreadPool>(per_worker);
        forward = std::make_unique<Forward>(*model, pool.get());
      }
      for (int64_t i; !failed && (i = next++) < n_jobs;) job(i, forward.get());
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work);
  work();  // the calling thread is a worker too
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace triattn::eval
