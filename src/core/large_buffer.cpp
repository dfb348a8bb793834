#include "core/large_buffer.h"

#include <cstdlib>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace triattn {

namespace {
constexpr size_t kHugePage = kHugePageBytes;
constexpr size_t kSmallAlign = 64;  // a cache line: any vector load is aligned enough
}  // namespace

void* allocate_large(size_t bytes) {
  const size_t align = bytes >= kHugePage ? kHugePage : kSmallAlign;
  void* p = nullptr;
  // posix_memalign, unlike aligned_alloc, takes any size: a KV stream of 136-byte Q8_0 rows
  // is not rounded up to the next 2 MiB.
  if (::posix_memalign(&p, align, bytes ? bytes : 1) != 0) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  // Only advice: where huge pages are off or unavailable the memory keeps 4 KiB pages.
  if (align == kHugePage) ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_large(void* p) noexcept { std::free(p); }

void release_pages(void* p, size_t bytes) noexcept {
#if defined(MADV_DONTNEED)
  static const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
#else
  (void)p;
  (void)bytes;
#endif
}

LargeBuffer::LargeBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Rounded up to whole huge pages so that the tail is in one too (weights are read whole).
  const size_t rounded = bytes >= kHugePage ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  data_ = static_cast<uint8_t*>(allocate_large(rounded));
}

LargeBuffer::~LargeBuffer() { free_large(data_); }

LargeBuffer::LargeBuffer(LargeBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& o) noexcept {
  if (this != &o) {
    free_large(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace triattn
