// Repacking Q8_0 weights into the interleaved Q8_0x4 layout (ops/quant_blocks.h) at load
// time, and reading single rows back out of it (token embeddings tied to the output matrix).
#include <cstring>

#include "core/error.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

std::optional<DType> interleaved_type(const TensorView& w) {
  if (w.type != DType::Q8_0 || w.shape.size() != 2 || w.empty()) return std::nullopt;
  if (w.shape[0] % interleaved_rows(DType::Q8_0x4) != 0 || w.shape[1] % kQK != 0) return std::nullopt;
  return DType::Q8_0x4;
}

void interleave(const TensorView& w, void* dst, int64_t r0, int64_t r1) {
  if (!interleaved_type(w))
    fail("interleave: a ", dtype_name(w.type), " tensor of ", w.shape.size(),
         " dims cannot be interleaved (needs 2-D q8_0 with rows a multiple of 4)");
  if (r1 < 0) r1 = w.rows();
  if (r0 < 0 || r0 > r1 || r1 > w.rows() || r0 % 4 != 0 || r1 % 4 != 0)
    fail("interleave: rows [", r0, ", ", r1, ") are not whole groups of 4 within ", w.rows());
  const int64_t nb = w.cols() / kQK;
  auto* out = static_cast<BlockQ8_0x4*>(dst);
  for (int64_t g = r0 / 4; g < r1 / 4; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0x4& o = out[g * nb + b];
      for (int r = 0; r < 4; ++r) {
        const BlockQ8_0& in = reinterpret_cast<const BlockQ8_0*>(w.row(4 * g + r))[b];
        o.d[r] = in.d;
        for (int c = 0; c < 4; ++c) std::memcpy(o.qs + 32 * c + 8 * r, in.qs + 8 * c, 8);
      }
    }
}

void dequantize_matrix_row(const TensorView& w, int64_t r, float* dst) {
  if (w.shape.size() != 2 || r < 0 || r >= w.shape[0])
    fail("dequantize_matrix_row: row ", r, " outside a tensor of ", w.shape.size() == 2 ? w.shape[0] : 0,
         " rows");
  if (w.type != DType::Q8_0x4) return dequantize_row(w.type, w.row(r), dst, w.cols());
  // Gather the row's blocks out of its group into Q8_0 form, then dequantize as usual.
  const int64_t nb = w.cols() / kQK;
  const auto* group = reinterpret_cast<const BlockQ8_0x4*>(w.row(r - r % 4));
  const int lane = static_cast<int>(r % 4);
  BlockQ8_0 block;
  for (int64_t b = 0; b < nb; ++b) {
    block.d = group[b].d[lane];
    for (int c = 0; c < 4; ++c) std::memcpy(block.qs + 8 * c, group[b].qs + 32 * c + 8 * lane, 8);
    dequantize_row(DType::Q8_0, &block, dst + b * kQK, kQK);
  }
}

}  // namespace triattn::ops
