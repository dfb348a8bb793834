#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

// Memory order: every atomic below is sequentially consistent. The sleep/wake handshakes
// are Dekker-style (each side stores its flag, then loads the other's), which needs the store
// ordered before the load. Seq_cst operations alone promise that, but each handshake also has
// an explicit seq_cst fence (`store_load_fence`) between its store and its load: qemu-user
// (7.2, aarch64 guest on an x86 host: the CI's aarch64 stage) translates STLR then LDAR without
// a barrier between them, so the x86 store buffer let both sides miss each other (a litmus
// test of this exact pattern: 90,037 forbidden outcomes in 200,000 without the fence, none
// with it), a worker slept through a job and the caller waited for it for ever (test_model_load
// hung under qemu in one CI run and in one of two 25-pass repeats, both threads asleep on the
// pool's two condition variables). A DMB is what qemu orders by; on hardware the fences cost
// one or two barriers per parallel call on the caller's side (x86's seq_cst store is a locked
// XCHG already).
namespace triattn {

namespace {

// How long a thread spins before sleeping: longer than the gaps between the parallel calls
// of one decode step (a few microseconds of serial work), short enough that an idle pool
// stops using CPU almost at once; longer spins take CPU from whichever thread the scheduler
// would run next (docs/benchmarks.md, "Thread pool").
constexpr auto kSpin = std::chrono::microseconds(50);

// Generations step by 2; the low bit says the job is dynamic, so a worker knows how to
// join a job from its generation alone, before it may read the job's fields.
constexpr uint64_t kDynamicBit = 1;

// (Not under ThreadSanitizer, which does not model fences and g++ warns of them (-Wtsan); its
// builds run natively on x86, where the seq_cst operations order themselves.)
#if defined(__SANITIZE_THREAD__)
inline void store_load_fence() {}
#else
inline void store_load_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
}

// Range of part `i` of `parts` over n items, aligned to grain.
void split_job(int64_t n, int64_t grain, int parts, int i, int64_t* b, int64_t* e) {
  const int64_t blocks = (n + grain - 1) / grain;
  const int64_t per = blocks / parts, extra = blocks % parts;
  const int64_t start = i * per + std::min<int64_t>(i, extra);
  const int64_t count = per + (i < extra ? 1 : 0);
  *b = std::min(n, start * grain);
  *e = std::min(n, (start + count) * grain);
}

}  // namespace

int ThreadPool::max_threads() { return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void ThreadPool::check_thread_count(int64_t n, const char* what) {
  if (n < 0 || n > max_threads())
    fail(what, " ", n, " is not a thread count: give 0 (all ", std::max(1u, std::thread::hardware_concurrency()),
         " hardware threads) or 1 to ", max_threads(), " (4 per hardware thread)");
}

ThreadPool::ThreadPool(int n_threads) {
  check_thread_count(n_threads, "thread pool:");
  if (n_threads == 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(int index) {
  if (!job_dynamic_) {
    int64_t b, e;
    split_job(job_n_, job_grain_, n_threads_, index, &b, &e);
    if (b < e) (*job_)(b, e, index);
    return;
  }
  // Guided self-scheduling: each claim takes 1/threads of what is left, at most
  // 1/(2·threads) of the whole (so a thread descheduled right after a claim holds up at most
  // that much), rounded down to the grain; ranges start large and shrink to one grain at the
  // end, where a thread that finishes early would otherwise wait for a large last range.
  // Few claims matter: each restarts the decode kernels' prefetched weight streams
  // (docs/benchmarks.md, "Thread pool").
  const int64_t threads = n_threads_, cap = std::max<int64_t>(1, job_n_ / (2 * threads));
  int64_t b = next_.load();
  for (;;) {
    if (b >= job_n_) return;
    const int64_t want = std::min((job_n_ - b) / threads, cap);
    const int64_t take = std::max<int64_t>(1, want / job_grain_) * job_grain_;
    if (!next_.compare_exchange_weak(b, b + take)) continue;  // b now holds the new value
    (*job_)(b, std::min(job_n_, b + take), index);
    b = next_.load();
  }
}

void ThreadPool::finish_one(std::atomic<int>& counter) {
  const bool last = counter.fetch_sub(1) == 1;
  store_load_fence();
  if (last && caller_waiting_.load()) {
    // The caller may be between its check and its wait: taking the mutex orders us after.
    { std::lock_guard<std::mutex> lock(mu_); }
    done_cv_.notify_one();
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto has_news = [&] { return stop_.load() || generation_.load() != seen; };
    if (!spin_until(has_news)) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleepers_;
      store_load_fence();
      start_cv_.wait(lock, has_news);
      --sleepers_;
    }
    if (stop_.load()) return;
    seen = generation_.load();
    if (seen & kDynamicBit) {
      // Join only while the caller still holds the job open; once it closed it, the job's
      // fields may already belong to the next one.
      active_.fetch_add(1);
      store_load_fence();  // against the caller's close below (run)
      if (open_.load() == seen) work(index);
      finish_one(active_);
    } else {
      // The caller waits for every worker on a static job, so its fields are stable.
      work(index);
      finish_one(pending_);
    }
  }
}

void ThreadPool::wait_zero(const std::atomic<int>& counter) {
  if (spin_until([&] { return counter.load() == 0; })) return;
  caller_waiting_.store(true);
  store_load_fence();
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return counter.load() == 0; });
  }
  caller_waiting_.store(false);
}

void ThreadPool::run(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                     int64_t grain, bool dynamic) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_dynamic_ = dynamic;
  next_.store(0);
  const uint64_t gen = (generation_.load() | kDynamicBit) + 1 + (dynamic ? kDynamicBit : 0);
  if (dynamic)
    open_.store(gen);
  else
    pending_.store(n_threads_ - 1);
  generation_.store(gen);
  store_load_fence();
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    start_cv_.notify_all();
  }
  work(0);
  if (dynamic) {
    // Every item is claimed: close the job, then wait only for workers inside it.
    open_.store(0);
    store_load_fence();
    wait_zero(active_);
  } else {
    wait_zero(pending_);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  run(n, fn, grain, false);
}

void ThreadPool::parallel_for_dynamic(int64_t n,
                                      const std::function<void(int64_t, int64_t, int)>& fn,
                                      int64_t grain) {
  run(n, fn, grain, true);
}

void parallel_for(ThreadPool* pool, int64_t n,
                  const std::function<void(int64_t, int64_t, int)>& fn, int64_t grain) {
  if (pool) {
    pool->parallel_for(n, fn, grain);
  } else if (n > 0) {
    fn(0, n, 0);
  }
}

void parallel_for_dynamic(ThreadPool* pool, int64_t n,
                          const std::function<void(int64_t, int64_t, int)>& fn, int64_t grain) {
  if (pool) {
    pool->parallel_for_dynamic(n, fn, grain);
  } else if (n > 0) {
    fn(0, n, 0);
  }
}

}  // namespace triattn
