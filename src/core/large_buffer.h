#pragma once
// Owned, uninitialised memory for tensors written at load time (repacked or reordered weights)
// and other large buffers read at memory speed. From 2 MiB up it is 2 MiB aligned and, on
// Linux, asks for transparent huge pages: decode streams the weights through several
// prefetching streams per thread, and with 4 KiB pages every stream crosses a page (a TLB
// miss, and a software prefetch that may be dropped) every 4 KiB (docs/benchmarks.md,
// "Weights in huge pages").
#include <cstddef>
#include <cstdint>

namespace triattn {

// A transparent huge page on x86-64 and on AArch64 with 4 KiB base pages.
inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// The allocation behind LargeBuffer and LargeAllocator: from 2 MiB up, 2 MiB aligned and
// advised for huge pages (the whole 2 MiB pages inside it; a tail shorter than one keeps
// 4 KiB pages); below, cache-line aligned. Throws std::bad_alloc; free_large(nullptr) is a
// no-op.
void* allocate_large(size_t bytes);
void free_large(void* p) noexcept;
// Hands the whole pages inside [p, p + bytes) back to the system while the range stays
// allocated (they read as zeros if touched again): a part of a large buffer that is no
// longer used stops counting as memory before the buffer is freed. Nothing where the system
// has no such call.
void release_pages(void* p, size_t bytes) noexcept;

// For containers that grow and are streamed at memory speed: the KV cache's K and V rows
// (kv/kv_cache.h). Stateless, so any two compare equal.
template <class T>
struct LargeAllocator {
  using value_type = T;
  LargeAllocator() = default;
  template <class U>
  LargeAllocator(const LargeAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_large(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { free_large(p); }
  friend bool operator==(const LargeAllocator&, const LargeAllocator&) { return true; }
};

class LargeBuffer {
 public:
  LargeBuffer() = default;
  explicit LargeBuffer(size_t bytes);
  ~LargeBuffer();
  LargeBuffer(LargeBuffer&& o) noexcept;
  LargeBuffer& operator=(LargeBuffer&& o) noexcept;
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace triattn
