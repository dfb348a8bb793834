// Repacking Q8_0 weights into the interleaved Q8_0x4 or Q8_0x16 layout, Q4_K weights into
// Q4_Kx8 and Q4_0 weights into Q4_0x8 (ops/quant_blocks.h) at load time, and reading single
// rows back out of them (token embeddings tied to the output matrix).
#include <cstring>

#include "core/error.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

namespace {

// Groups [g0, g1) of kRows rows of w (blocks In) into dst (one Out per group and block
// column, in block order): put(out, row r's block, r) for every row, the loop the three
// layouts share.
template <int kRows, class In, class Out, class Put>
void interleave_groups(const TensorView& w, void* dst, int64_t g0, int64_t g1, Put put) {
  const int64_t nb = w.cols() / block_size(w.type);
  auto* out = static_cast<Out*>(dst);
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b)
      for (int r = 0; r < kRows; ++r) put(out[g * nb + b], reinterpret_cast<const In*>(w.row(kRows * g + r))[b], r);
}

void interleave_q8_0(const TensorView& w, void* dst, int64_t g0, int64_t g1) {
  interleave_groups<4, BlockQ8_0, BlockQ8_0x4>(w, dst, g0, g1, [](BlockQ8_0x4& o, const BlockQ8_0& in, int r) {
    o.d[r] = in.d;
    for (int c = 0; c < 4; ++c) std::memcpy(o.qs + 32 * c + 8 * r, in.qs + 8 * c, 8);
  });
}

void interleave_q8_0x16(const TensorView& w, void* dst, int64_t g0, int64_t g1) {
  interleave_groups<16, BlockQ8_0, BlockQ8_0x16>(w, dst, g0, g1, [](BlockQ8_0x16& o, const BlockQ8_0& in, int r) {
    o.d[r] = in.d;
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i) o.qs[64 * c + 4 * r + i] = static_cast<uint8_t>(in.qs[4 * c + i] + 128);
  });
}

// Quant e (0..31) of a Q4_0 block: elements 0..15 in the low nibbles, 16..31 in the high.
inline uint8_t q4_0_quant(const BlockQ4_0& b, int e) {
  return e < 16 ? b.qs[e] & 0xF : b.qs[e - 16] >> 4;
}

void interleave_q4_0(const TensorView& w, void* dst, int64_t g0, int64_t g1) {
  interleave_groups<8, BlockQ4_0, BlockQ4_0x8>(w, dst, g0, g1, [](BlockQ4_0x8& o, const BlockQ4_0& in, int r) {
    o.d[r] = in.d;
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 4; ++i)
        o.qs[32 * k + 4 * r + i] = static_cast<uint8_t>(q4_0_quant(in, 8 * k + i) | q4_0_quant(in, 8 * k + 4 + i) << 4);
  });
}

// Row `lane` of one Q4_0x8 block column back in Q4_0 form (the file's bytes exactly).
BlockQ4_0 q4_0_row_block(const BlockQ4_0x8& x, int lane) {
  BlockQ4_0 b{};
  b.d = x.d[lane];
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) {
        const int e = 8 * k + 4 * h + i;
        const uint8_t byte = x.qs[32 * k + 4 * lane + i];
        const uint8_t q = h ? byte >> 4 : byte & 0xF;
        b.qs[e % 16] |= static_cast<uint8_t>(e < 16 ? q : q << 4);
      }
  return b;
}

// Quant e (0..255) of a Q4_K block: chunk e/64, low nibbles for its first 32 elements.
inline uint8_t q4_k_quant(const BlockQ4_K& b, int e) {
  const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
  return e % 64 < 32 ? byte & 0xF : byte >> 4;
}

void interleave_q4_k(const TensorView& w, void* dst, int64_t g0, int64_t g1) {
  interleave_groups<8, BlockQ4_K, BlockQ4_Kx8>(w, dst, g0, g1, [](BlockQ4_Kx8& o, const BlockQ4_K& in, int r) {
    o.d[r] = in.d;
    o.dmin[r] = in.dmin;
    for (int j = 0; j < 8; ++j) unpack_scale_min_k4(j, in.scales, &o.scales[8 * j + r], &o.mins[8 * j + r]);
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 4; ++i) {
          const int e = 32 * j + 8 * k + i;
          o.qs[128 * j + 32 * k + 4 * r + i] = static_cast<uint8_t>(q4_k_quant(in, e) | q4_k_quant(in, e + 4) << 4);
        }
  });
}

// Row `lane` of one Q4_Kx8 block column back in Q4_K form. The 6-bit scales and mins are
// repacked by the inverse of unpack_scale_min_k4, so the row is the file's bytes exactly.
BlockQ4_K q4_k_row_block(const BlockQ4_Kx8& x, int lane) {
  BlockQ4_K b{};
  b.d = x.d[lane];
  b.dmin = x.dmin[lane];
  for (int j = 0; j < 8; ++j) {
    const uint8_t sc = x.scales[8 * j + lane], m = x.mins[8 * j + lane];
    if (j < 4) {
      b.scales[j] = static_cast<uint8_t>((b.scales[j] & 0xC0) | sc);
      b.scales[j + 4] = static_cast<uint8_t>((b.scales[j + 4] & 0xC0) | m);
    } else {
      b.scales[j + 4] = static_cast<uint8_t>((sc & 0xF) | (m & 0xF) << 4);
      b.scales[j - 4] = static_cast<uint8_t>((b.scales[j - 4] & 0x3F) | (sc >> 4) << 6);
      b.scales[j] = static_cast<uint8_t>((b.scales[j] & 0x3F) | (m >> 4) << 6);
    }
  }
  for (int j = 0; j < 8; ++j)
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 4; ++i) {
        const uint8_t byte = x.qs[128 * j + 32 * k + 4 * lane + i];
        for (int h = 0; h < 2; ++h) {
          const int e = 32 * j + 8 * k + 4 * h + i;
          const uint8_t q = h ? byte >> 4 : byte & 0xF;
          uint8_t& dst = b.qs[32 * (e / 64) + e % 32];
          dst = static_cast<uint8_t>(e % 64 < 32 ? (dst & 0xF0) | q : (dst & 0x0F) | q << 4);
        }
      }
  return b;
}

}  // namespace

std::optional<DType> interleaved_type(const TensorView& w) {
  if (w.shape.size() != 2 || w.empty()) return std::nullopt;
  DType to;
  const std::optional<DType> chosen = active_kernels().layout[static_cast<int>(w.type)];
  if (chosen && (*chosen == w.type || (w.shape[0] % interleaved_rows(*chosen) == 0 && w.shape[1] % block_size(*chosen) == 0)))
    return *chosen == w.type ? std::nullopt : chosen;  // measured (kernel_variants.h)
  if (w.type == DType::Q8_0)
    to = w.shape[0] % 16 == 0 ? active_kernels().q8_0_layout : DType::Q8_0x4;
  else if (w.type == DType::Q4_K)
    to = DType::Q4_Kx8;
  else if (w.type == DType::Q4_0)
    to = DType::Q4_0x8;
  else
    return std::nullopt;
  if (w.shape[0] % interleaved_rows(to) != 0 || w.shape[1] % block_size(to) != 0) return std::nullopt;
  return to;
}

void interleave(const TensorView& w, void* dst, int64_t r0, int64_t r1) {
  const std::optional<DType> to = interleaved_type(w);
  if (!to)
    fail("interleave: a ", dtype_name(w.type), " tensor of ", w.shape.size(),
         " dims cannot be interleaved (needs 2-D q8_0 with rows a multiple of 4, or q4_k or q4_0 with "
         "rows a multiple of 8)");
  interleave(w, *to, dst, r0, r1);
}

void interleave(const TensorView& w, DType to, void* dst, int64_t r0, int64_t r1) {
  const int group = interleaved_rows(to);
  if (w.shape.size() != 2 || w.empty() || group == 1 || file_dtype(to) != w.type || w.rows() % group != 0 ||
      w.cols() % block_size(to) != 0)
    fail("interleave: a ", dtype_name(w.type), " tensor of ", w.shape.size() == 2 ? w.rows() : 0,
         " rows cannot be stored as ", dtype_name(to));
  if (r1 < 0) r1 = w.rows();
  if (r0 < 0 || r0 > r1 || r1 > w.rows() || r0 % group != 0 || r1 % group != 0)
    fail("interleave: rows [", r0, ", ", r1, ") are not whole groups of ", group, " within ", w.rows());
  if (to == DType::Q8_0x4)
    interleave_q8_0(w, dst, r0 / group, r1 / group);
  else if (to == DType::Q8_0x16)
    interleave_q8_0x16(w, dst, r0 / group, r1 / group);
  else if (to == DType::Q4_0x8)
    interleave_q4_0(w, dst, r0 / group, r1 / group);
  else
    interleave_q4_k(w, dst, r0 / group, r1 / group);
}

void dequantize_matrix_row(const TensorView& w, int64_t r, float* dst) {
  if (w.shape.size() != 2 || r < 0 || r >= w.shape[0])
    fail("dequantize_matrix_row: row ", r, " outside a tensor of ", w.shape.size() == 2 ? w.shape[0] : 0,
         " rows");
  const int group = interleaved_rows(w.type);
  if (group == 1) return dequantize_row(w.type, w.row(r), dst, w.cols());
  // Gather the row's blocks out of its group into the file type's form, then dequantize as
  // usual.
  const int lane = static_cast<int>(r % group);
  const void* group_data = static_cast<const uint8_t*>(w.data) + (r - lane) * w.row_stride();
  if (w.type == DType::Q8_0x4) {
    const auto* blocks = static_cast<const BlockQ8_0x4*>(group_data);
    BlockQ8_0 block;
    for (int64_t b = 0; b < w.cols() / kQK; ++b) {
      block.d = blocks[b].d[lane];
      for (int c = 0; c < 4; ++c) std::memcpy(block.qs + 8 * c, blocks[b].qs + 32 * c + 8 * lane, 8);
      dequantize_row(DType::Q8_0, &block, dst + b * kQK, kQK);
    }
    return;
  }
  if (w.type == DType::Q8_0x16) {
    const auto* blocks = static_cast<const BlockQ8_0x16*>(group_data);
    BlockQ8_0 block;
    for (int64_t b = 0; b < w.cols() / kQK; ++b) {
      block.d = blocks[b].d[lane];
      for (int c = 0; c < 8; ++c)
        for (int i = 0; i < 4; ++i) block.qs[4 * c + i] = static_cast<int8_t>(blocks[b].qs[64 * c + 4 * lane + i] - 128);
      dequantize_row(DType::Q8_0, &block, dst + b * kQK, kQK);
    }
    return;
  }
  if (w.type == DType::Q4_0x8) {
    const auto* blocks = static_cast<const BlockQ4_0x8*>(group_data);
    for (int64_t b = 0; b < w.cols() / kQK; ++b) {
      const BlockQ4_0 block = q4_0_row_block(blocks[b], lane);
      dequantize_row(DType::Q4_0, &block, dst + b * kQK, kQK);
    }
    return;
  }
  const auto* blocks = static_cast<const BlockQ4_Kx8*>(group_data);
  for (int64_t b = 0; b < w.cols() / kQKK; ++b) {
    const BlockQ4_K block = q4_k_row_block(blocks[b], lane);
    dequantize_row(DType::Q4_K, &block, dst + b * kQKK, kQKK);
  }
}

}  // namespace triattn::ops
