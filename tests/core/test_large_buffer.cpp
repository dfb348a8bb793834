// LargeBuffer and LargeAllocator: the alignment their users rely on (2 MiB for huge pages
// from 2 MiB up, a cache line below) and ownership moving without copies.
#include "core/large_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace triattn {
namespace {

TEST(LargeBuffer, AlignsForHugePagesFromTwoMebibytes) {
  const size_t mib2 = size_t(2) << 20;
  LargeBuffer big(mib2 + 12345);
  ASSERT_NE(big.data(), nullptr);
  EXPECT_EQ(big.size(), mib2 + 12345);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % mib2, 0u);
  std::memset(big.data(), 0x5A, big.size());  // all of it is writable
  EXPECT_EQ(big.data()[big.size() - 1], 0x5A);

  LargeBuffer small(100);
  ASSERT_NE(small.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);

  LargeBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(LargeAllocator, GrowingVectorKeepsItsContentsAndHugePageAlignment) {
  const size_t mib2 = size_t(2) << 20;
  std::vector<uint8_t, LargeAllocator<uint8_t>> v(1000, 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u);
  // Not a multiple of 2 MiB: the size is not rounded up, the start is still aligned.
  v.resize(mib2 + 136 * 77, 9);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % mib2, 0u);
  EXPECT_EQ(v[999], 3);
  EXPECT_EQ(v[1000], 9);
  EXPECT_EQ(v.back(), 9);
  std::vector<int32_t, LargeAllocator<int32_t>> w(mib2 / 4);  // element size above one byte
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % mib2, 0u);
  EXPECT_TRUE(LargeAllocator<uint8_t>() == LargeAllocator<uint8_t>());
  void* p = allocate_large(0);  // a valid, freeable pointer
  EXPECT_NE(p, nullptr);
  free_large(p);
  free_large(nullptr);
}

TEST(LargeBuffer, ReleasedPagesReadAsZerosAndTheRestIsKept) {
  const size_t n = size_t(64) << 10;
  LargeBuffer buf(n);
  uint8_t* p = buf.data();
  std::memset(p, 0x5A, n);
  const size_t from = 100, len = 40000;
  release_pages(p + from, len);
  // Only the whole pages inside [from, from + len) go: the partial ones at its ends, and
  // everything outside it, keep their bytes.
  size_t page = 4096;
#if defined(__linux__)
  page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
#endif
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const size_t b = ((at + from + page - 1) / page * page) - at, e = ((at + from + len) / page * page) - at;
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i >= b && i < e) {
      zeros += p[i] == 0;
      continue;
    }
    ASSERT_EQ(p[i], 0x5A) << i;
  }
#if defined(__linux__)
  EXPECT_GT(e, b);
  EXPECT_EQ(zeros, e - b);  // released pages read as zeros
#endif
  release_pages(p + 10, 20);  // no whole page inside: nothing happens
  EXPECT_EQ(p[10], 0x5A);
}

TEST(LargeBuffer, MovesOwnership) {
  LargeBuffer a(4096);
  a.data()[0] = 7;
  uint8_t* p = a.data();
  LargeBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 4096u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(a.size(), 0u);
  LargeBuffer c(16);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[0], 7);
  c = LargeBuffer();  // frees
  EXPECT_EQ(c.data(), nullptr);
}

}  // namespace
}  // namespace triattn
