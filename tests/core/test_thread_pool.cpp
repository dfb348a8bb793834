#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

namespace triattn {
namespace {

// Every index is visited exactly once, ranges respect the grain, thread ids are in range.
TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 64, 1000}) {
      for (int64_t grain : {1, 4, 16}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<bool> bad_range{false};
        pool.parallel_for(
            n,
            [&](int64_t b, int64_t e, int tid) {
              if (tid < 0 || tid >= threads || (b % grain) != 0) bad_range = true;
              for (int64_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
        EXPECT_FALSE(bad_range.load());
      }
    }
  }
}

TEST(ThreadPool, UsesSeveralThreadsAndIsReusable) {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    std::mutex mu;
    std::set<int> ids;
    pool.parallel_for(300, [&](int64_t, int64_t, int tid) {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(tid);
    });
    EXPECT_EQ(ids.size(), 3u);
  }
}

TEST(ThreadPool, NullPoolRunsSerially) {
  // Both entry points, static and dynamic: one call over the whole range on this thread.
  for (auto* run : {&parallel_for, &parallel_for_dynamic}) {
    int calls = 0;
    run(nullptr, 10, [&](int64_t b, int64_t e, int tid) {
      ++calls;
      EXPECT_EQ(b, 0);
      EXPECT_EQ(e, 10);
      EXPECT_EQ(tid, 0);
    }, 1);
    EXPECT_EQ(calls, 1);
  }
}

}  // namespace
}  // namespace triattn
