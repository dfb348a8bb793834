#pragma once
// A fixed pool of worker threads for data-parallel kernels. parallel_for splits [0, n) into
// one contiguous range per thread (the caller's thread takes part), so a pool of T threads
// never runs more than T kernel threads at once: no oversubscription.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace triattn {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end, thread_index) over a partition of [0, n); ranges are multiples of
  // `grain` except the last. Blocks until all ranges are done. Not re-entrant.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

 private:
  void worker(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0, job_grain_ = 1;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Runs fn serially when pool is null.
void parallel_for(ThreadPool* pool, int64_t n,
                  const std::function<void(int64_t, int64_t, int)>& fn, int64_t grain = 1);

}  // namespace triattn
