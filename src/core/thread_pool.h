#pragma once
// A fixed pool of worker threads for data-parallel kernels. parallel_for splits [0, n) into
// one contiguous range per thread (the caller's thread takes part), so a pool of T threads
// never runs more than T kernel threads at once: no oversubscription.
//
// Decode issues hundreds of small parallel calls per token (~8 per layer), each tens of
// microseconds long, so waking a sleeping thread through the kernel for every call would
// cost as much as the work. Workers therefore spin for a short while after each call
// (kSpin below) and only then sleep on a condition variable; the caller likewise spins
// briefly before sleeping while it waits for the last range.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace triattn {

class ThreadPool {
 public:
  // n_threads 0: hardware concurrency. Negative counts and counts above max_threads() throw
  // Error: workers spin between calls, so a pool far larger than the machine only burns it
  // (and -t 100000 used to spawn threads until the process limit).
  explicit ThreadPool(int n_threads);
  // 4 threads per hardware thread (at least 4): oversubscribing beyond that never helps.
  static int max_threads();
  // Throws Error unless 0 <= n <= max_threads(); `what` names the setting (e.g. "-t").
  static void check_thread_count(int64_t n, const char* what);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end, thread_index) over a partition of [0, n); ranges are multiples of
  // `grain` except the last. Blocks until all ranges are done. Not re-entrant.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

  // Like parallel_for, but threads claim ranges as they become free, so one thread that is
  // descheduled or slow (a shared machine) does not hold the others up: the rest take over
  // its share. Ranges are multiples of `grain` (except the last) of 1/threads of what is
  // left, at most n/(2·threads), shrinking to one grain towards the end. A thread may get no
  // range at all; fn may be called several times per thread; thread_index is the calling
  // thread's.
  void parallel_for_dynamic(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                            int64_t grain = 1);

 private:
  void run(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn, int64_t grain,
           bool dynamic);
  void work(int index);  // this thread's share of the current job
  void worker(int index);
  void finish_one(std::atomic<int>& counter);  // a worker leaves the job; wakes the caller
  void wait_zero(const std::atomic<int>& counter);  // the caller waits for the workers

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;

  // The fields below sit on cache lines by who writes them: a line moving between cores costs
  // hundreds of nanoseconds (docs/benchmarks.md, "Thread pool"), and a parallel call is a chain
  // of such moves, so each move should bring everything the next step needs and nothing another
  // thread is about to write.
  //
  // Written by the caller once per job: the job, then generation_ (release); read by workers
  // after they see the new generation (acquire). One line: the worker's spin on generation_
  // fetches the job with it.
  alignas(64) std::atomic<uint64_t> generation_{0};
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0, job_grain_ = 1;
  bool job_dynamic_ = false;
  std::atomic<uint64_t> open_{0};  // generation of the dynamic job workers may still join
  std::atomic<bool> caller_waiting_{false};  // the caller sleeps on done_cv_
  // Dynamic jobs: first item not yet claimed (every claim writes it).
  alignas(64) std::atomic<int64_t> next_{0};
  // Written by workers as they leave a job; the caller spins on them.
  alignas(64) std::atomic<int> pending_{0};  // static jobs: workers that have not finished their range
  std::atomic<int> active_{0};               // dynamic jobs: workers inside the job
  // Rarely written (a worker going to sleep, shutdown), read on every job: a line of its own
  // stays in every core's cache.
  alignas(64) std::atomic<int> sleepers_{0};  // workers asleep on start_cv_
  std::atomic<bool> stop_{false};
};

// Run fn serially when pool is null.
void parallel_for(ThreadPool* pool, int64_t n,
                  const std::function<void(int64_t, int64_t, int)>& fn, int64_t grain = 1);
void parallel_for_dynamic(ThreadPool* pool, int64_t n,
                          const std::function<void(int64_t, int64_t, int)>& fn,
                          int64_t grain = 1);

}  // namespace triattn
