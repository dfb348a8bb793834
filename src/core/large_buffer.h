#pragma once
// Owned, uninitialised memory for tensors written at load time (repacked or reordered weights)
// and other large buffers read at memory speed. From 2 MiB up it is 2 MiB aligned and, on
// Linux, asks for transparent huge pages: decode streams the weights through several
// prefetching streams per thread, and with 4 KiB pages every stream crosses a page (a TLB
// miss, and a software prefetch that may be dropped) every 4 KiB. Measured on the 2-core EPYC
// VM, Qwen3-0.6B Q8_0 repacked weights, decode at depth 0: 49-61 tok/s in 4 KiB pages,
// 82-84 tok/s in huge pages (three alternating runs each, same binary).
#include <cstddef>
#include <cstdint>

namespace triattn {

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
