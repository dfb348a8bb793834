// Planted bugs that prove the sanitizer builds are live (scripts/sanitize.sh, docs/reliability.md).
// Each runs only when TRIATTN_SANITIZER_CANARY names it; otherwise every test here passes
// without doing anything, so the normal suite is unaffected. Under the sanitizers, the
// planted bug must make the binary fail with the sanitizer's report:
//   oob       one-past-the-end heap read           (AddressSanitizer: heap-buffer-overflow)
//   overflow  signed integer overflow              (UBSan: runtime error: signed integer overflow)
//   race      two threads write one int unlocked   (ThreadSanitizer: data race)
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

namespace {

bool planted(const char* name) {
  const char* v = std::getenv("TRIATTN_SANITIZER_CANARY");
  return v && std::strcmp(v, name) == 0;
}

int sum_with_one_past_the_end(const std::vector<int>& v) {
  int s = 0;
  for (size_t i = 0; i <= v.size(); ++i) s += v.data()[i];  // the bug: <= reads v[size()]
  return s;
}

}  // namespace

TEST(SanitizerCanary, OnePastTheEndRead) {
  if (!planted("oob")) return;
  std::vector<int> v(7, 1);
  volatile int s = sum_with_one_past_the_end(v);
  (void)s;
}

TEST(SanitizerCanary, SignedOverflow) {
  if (!planted("overflow")) return;
  volatile int big = std::numeric_limits<int>::max();
  volatile int one = 1;
  volatile int r = big + one;  // the bug
  (void)r;
}

TEST(SanitizerCanary, DataRace) {
  if (!planted("race")) return;
  int shared = 0;
  std::thread a([&] { for (int i = 0; i < 1000; ++i) shared = shared + 1; });
  std::thread b([&] { for (int i = 0; i < 1000; ++i) shared = shared + 1; });
  a.join();
  b.join();
  volatile int r = shared;
  (void)r;
}
