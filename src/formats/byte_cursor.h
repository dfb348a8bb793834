#pragma once
// Bounds-checked little-endian reads from a memory range (a mapped file). Every read checks
// the remaining length first, so a truncated or corrupted file raises Error instead of
// reading past the end. Internal to formats/.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace triattn {

static_assert(std::endian::native == std::endian::little,
              "model file readers assume a little-endian host");

class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, size_t size, std::string what)
      : data_(data), size_(size), what_(std::move(what)) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& what() const { return what_; }

  // Throws unless n more bytes are available; `field` names what was being read.
  void need(uint64_t n, std::string_view field) const {
    if (n > remaining())
      fail(what_, ": truncated: ", field, " needs ", n, " bytes at offset ", pos_, " but only ",
           remaining(), " remain");
  }

  template <class T>
  T read(std::string_view field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_bytes(uint64_t n, std::string_view field) {
    need(n, field);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }

  void skip(uint64_t n, std::string_view field) {
    need(n, field);
    pos_ += static_cast<size_t>(n);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string what_;
};

// a * b, throwing (with `what` in the message) when the product does not fit in uint64.
inline uint64_t checked_mul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(what, ": size overflows 64 bits");
  return r;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(what, ": size overflows 64 bits");
  return r;
}

}  // namespace triattn
