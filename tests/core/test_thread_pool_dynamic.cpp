// parallel_for_dynamic: every index exactly once, ranges aligned to the grain, thread ids of
// the threads that really ran them, and a slow thread's share taken over by the others.
// Also static and dynamic jobs interleaved, which exercises the worker hand-over between
// job kinds (a worker that missed a dynamic job must not run a stale one).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
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

TEST(ThreadPoolDynamic, RangesShrinkToOneGrainAtTheEnd) {
  // Guided scheduling: in order of position the ranges never grow, the first is at most
  // n/(2·threads) rounded up to the grain, and the last full one is a single grain, so a
  // thread finishing early waits for at most one grain of the others' work.
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    const int64_t n = 100000, grain = 16;
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    pool.parallel_for_dynamic(
        n,
        [&](int64_t b, int64_t e, int) {
          std::lock_guard<std::mutex> lock(mu);
          ranges.emplace_back(b, e);
        },
        grain);
    std::sort(ranges.begin(), ranges.end());
    ASSERT_GT(ranges.size(), 2u);
    EXPECT_LE(ranges.front().second - ranges.front().first, n / (2 * threads) + grain);
    for (size_t i = 1; i + 1 < ranges.size(); ++i)
      EXPECT_LE(ranges[i].second - ranges[i].first, ranges[i - 1].second - ranges[i - 1].first)
          << "range " << i;
    const auto& last_full = ranges[ranges.size() - 2];
    EXPECT_EQ(last_full.second - last_full.first, grain);
    // Few claims: logarithmic in n / grain, not n / grain.
    EXPECT_LT(ranges.size(), 200u);
  }
}

}  // namespace
}  // namespace triattn
