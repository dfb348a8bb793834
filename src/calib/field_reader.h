#pragma once
// Reading little-endian fields of the statistics formats one after another, each bounds-checked
// (formats/byte_cursor.h is the model files' reader; this one names the format in its errors):
// a short file is an Error naming the file, its format and the field that ran past the end.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace triattn {

class FieldReader {
 public:
  FieldReader(const uint8_t* data, size_t size, std::string path, std::string format)
      : p_(data), size_(size), path_(std::move(path)), format_(std::move(format)) {}
  size_t offset() const { return at_; }
  size_t left() const { return size_ - at_; }
  const uint8_t* take(size_t n, const std::string& field) {
    if (n > left())
      fail(path_, ": truncated ", format_, ": field '", field, "' at byte ", at_, " needs ", n, " bytes, the file has ",
           left(), " left");
    const uint8_t* q = p_ + at_;
    at_ += n;
    return q;
  }
  uint32_t u32(const std::string& field) { return get<uint32_t>(field); }
  float f32(const std::string& field) { return get<float>(field); }
  double f64(const std::string& field) { return get<double>(field); }
  std::vector<float> floats(size_t n, const std::string& field) {
    if (n > left() / sizeof(float))
      fail(path_, ": truncated ", format_, ": field '", field, "' at byte ", at_, " needs ", n, " floats, the file has ",
           left(), " bytes left");
    std::vector<float> v(n);
    std::memcpy(v.data(), take(n * sizeof(float), field), n * sizeof(float));
    return v;
  }

 private:
  template <class T>
  T get(const std::string& field) {
    T v;
    std::memcpy(&v, take(sizeof v, field), sizeof v);  // the formats are little-endian, as is every supported host
    return v;
  }
  const uint8_t* p_;
  size_t size_, at_ = 0;
  std::string path_, format_;
};

// Appends little-endian fields to a byte buffer (the writers' side).
struct ByteSink {
  std::vector<uint8_t> bytes;
  template <class T>
  void put(T v) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), b, b + sizeof v);
  }
  void put_floats(const float* v, size_t n) {
    const auto* b = reinterpret_cast<const uint8_t*>(v);
    bytes.insert(bytes.end(), b, b + n * sizeof(float));
  }
  void put_bytes(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
};

}  // namespace triattn
