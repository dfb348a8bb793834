#pragma once
// A non-owning view of a tensor in any DType. shape is outermost-first (numpy order): a
// weight matrix is {rows = out_features, cols = in_features}, each row stored contiguously
// in row_bytes(type, cols) bytes. GGUF's ne[] order is reversed into this at load time.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace triattn {

// "[2048, 1024]": a shape as error messages print it.
inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

struct TensorView {
  DType type = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;

  bool empty() const { return data == nullptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.size() < 2 ? 1 : numel() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  size_t row_stride() const { return row_bytes(type, cols()); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_stride(); }
  size_t nbytes() const { return row_stride() * static_cast<size_t>(rows()); }
};

}  // namespace triattn
