#include "core/large_buffer.h"

#include <cstdlib>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace triattn {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kSmallAlign = 64;  // a cache line: any vector load is aligned enough
}  // namespace

LargeBuffer::LargeBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const size_t align = bytes >= kHugePage ? kHugePage : kSmallAlign;
  const size_t rounded = (bytes + align - 1) / align * align;  // aligned_alloc wants a multiple
  data_ = static_cast<uint8_t*>(std::aligned_alloc(align, rounded));
  if (!data_) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  // Only advice: where huge pages are off or unavailable the buffer simply keeps 4 KiB pages.
  if (align == kHugePage) ::madvise(data_, rounded, MADV_HUGEPAGE);
#endif
}

LargeBuffer::~LargeBuffer() { std::free(data_); }

LargeBuffer::LargeBuffer(LargeBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace triattn
