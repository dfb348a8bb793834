#include "eval/parallel_runs.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>


namespace triattn::eval {

namespace {
int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}
}  // namespace

void run_parallel(int64_t n_jobs, int threads, const std::function<void(int64_t index)>& job) {
  if (n_jobs <= 0) return;
  const int workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n_jobs, resolve_threads(threads))));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    try {
      for (int64_t i; !failed && (i = next++) < n_jobs;) job(i);
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
