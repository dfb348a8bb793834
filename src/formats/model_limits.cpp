#include "formats/model_limits.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace triattn {

namespace {

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// A value is Inf or NaN exactly when its exponent bits are all ones: `mask` selects them in
// the word type W (f32: uint32_t; f16, bf16: uint16_t). The scan ORs a flag over chunks, a
// loop compilers vectorize (the cost at load is a pass over the bytes, see
// docs/reliability.md), and looks for the element only in a chunk that has one.
template <class W>
std::optional<int64_t> scan_words(const uint8_t* p, int64_t n, W mask) {
  constexpr int64_t kChunk = 2048;  // a constant trip count: vectorized at -O2 too
  auto bad = [mask](W w) { return (w & mask) == mask; };
  auto word = [p](int64_t i) {
    W w;
    std::memcpy(&w, p + i * static_cast<int64_t>(sizeof(W)), sizeof(W));
    return w;
  };
  int64_t base = 0;
  for (; base + kChunk <= n; base += kChunk) {
    unsigned any = 0;
    for (int64_t i = 0; i < kChunk; ++i) any |= bad(word(base + i));
    if (any) break;
  }
  for (int64_t i = base; i < n; ++i)
    if (bad(word(i))) return i;
  return std::nullopt;
}

// Blocks of `block_bytes` bytes starting with an f16 scale.
std::optional<int64_t> scan_block_scales(const TensorView& t, size_t block_bytes) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  const size_t n = t.nbytes() / block_bytes;
  for (size_t b = 0; b < n; ++b) {
    if ((load_u16(p + b * block_bytes) & 0x7c00u) == 0x7c00u) return static_cast<int64_t>(b);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> first_non_finite(const TensorView& t) {
  if (t.empty()) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(t.data);
  const int64_t n = t.numel();
  switch (t.type) {
    case DType::F32: return scan_words<uint32_t>(p, n, 0x7f800000u);
    case DType::F16: return scan_words<uint16_t>(p, n, 0x7c00u);
    case DType::BF16: return scan_words<uint16_t>(p, n, 0x7f80u);
    case DType::Q8_0: return scan_block_scales(t, 2 + 32);
    case DType::Q4_0: return scan_block_scales(t, 2 + 16);
    default: return std::nullopt;
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
