#include "formats/model_limits.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace triattn {

namespace {

// An f16/bf16 bit pattern is Inf or NaN exactly when its exponent bits are all ones.
bool f16_non_finite(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }
bool bf16_non_finite(uint16_t h) { return (h & 0x7f80u) == 0x7f80u; }

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Blocks of `block_bytes` bytes starting with an f16 scale.
std::optional<int64_t> scan_block_scales(const TensorView& t, size_t block_bytes) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  const size_t n = t.nbytes() / block_bytes;
  for (size_t b = 0; b < n; ++b) {
    if (f16_non_finite(load_u16(p + b * block_bytes))) return static_cast<int64_t>(b);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> first_non_finite(const TensorView& t) {
  if (t.empty()) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(t.data);
  const int64_t n = t.numel();
  switch (t.type) {
    case DType::F32:
      for (int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        if (!std::isfinite(v)) return i;
      }
      return std::nullopt;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i)
        if (f16_non_finite(load_u16(p + 2 * i))) return i;
      return std::nullopt;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i)
        if (bf16_non_finite(load_u16(p + 2 * i))) return i;
      return std::nullopt;
    case DType::Q8_0:
      return scan_block_scales(t, 2 + 32);
    case DType::Q4_0:
      return scan_block_scales(t, 2 + 16);
    default:
      return std::nullopt;
  }
}

void require_finite(const TensorView& t, const std::string& file, const std::string& tensor) {
  if (const auto at = first_non_finite(t)) {
    const bool blocks = t.type == DType::Q8_0 || t.type == DType::Q4_0;
    fail(file, ": tensor '", tensor, "' holds a non-finite value (Inf or NaN) ", blocks ? "in the scale of block " : "at element ",
         *at, ": the file is corrupt; download or convert it again");
  }
}

}  // namespace triattn
