// parallel_for_dynamic: every index exactly once, ranges aligned to the grain, thread ids of
// the threads that really ran them, and a slow thread's share taken over by the others.
// Also static and dynamic jobs interleaved, which exercises the worker hand-over between
// job kinds (a worker that missed a dynamic job must not run a stale one).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace triattn {
namespace {

TEST(ThreadPoolDynamic, CoversEveryIndexOnceWithAlignedRanges) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 64, 1000, 4099}) {
      for (int64_t grain : {1, 4, 16}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<bool> bad{false};
        pool.parallel_for_dynamic(
            n,
            [&](int64_t b, int64_t e, int tid) {
              if (tid < 0 || tid >= threads || b % grain != 0 || b >= e || e > n) bad = true;
              for (int64_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " i " << i;
        EXPECT_FALSE(bad.load());
      }
    }
  }
}

TEST(ThreadPoolDynamic, ThreadIdsAreNeverSharedConcurrently) {
  // Per-thread scratch indexed by thread id must never be used by two threads at once.
  ThreadPool pool(3);
  std::vector<std::atomic<int>> in_use(3);
  std::atomic<bool> overlap{false};
  for (int round = 0; round < 200; ++round)
    pool.parallel_for_dynamic(
        256,
        [&](int64_t, int64_t, int tid) {
          if (in_use[tid].fetch_add(1) != 0) overlap = true;
          std::this_thread::yield();
          in_use[tid].fetch_sub(1);
        },
        1);
  EXPECT_FALSE(overlap.load());
}

TEST(ThreadPoolDynamic, OthersTakeOverASlowThreadsShare) {
  // The caller (thread 0) sleeps in its first range; the worker must do the rest, so thread
  // 0 ends up with far fewer items than a static half.
  ThreadPool pool(2);
  std::atomic<int64_t> done_by_caller{0};
  std::atomic<bool> slept{false};
  pool.parallel_for_dynamic(
      800,
      [&](int64_t b, int64_t e, int tid) {
        if (tid == 0) {
          if (!slept.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
          done_by_caller += e - b;
        }
      },
      1);
  EXPECT_LT(done_by_caller.load(), 400);
}

TEST(ThreadPoolDynamic, InterleavesWithStaticJobs) {
  ThreadPool pool(3);
  for (int round = 0; round < 300; ++round) {
    const int64_t n = 50 + round % 7;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    auto count = [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    };
    if (round % 3 == 0)
      pool.parallel_for(n, count, 2);
    else
      pool.parallel_for_dynamic(n, count, 2);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round;
    // Now and then let the workers fall asleep, so jobs also start from sleeping workers.
    if (round % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(ThreadPoolDynamic, NullPoolRunsSerially) {
  int calls = 0;
  parallel_for_dynamic(nullptr, 10, [&](int64_t b, int64_t e, int tid) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
    EXPECT_EQ(tid, 0);
  });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace triattn
