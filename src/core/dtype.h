#pragma once
// Element/block types of weights and activations. Quantized types are stored in blocks of
// block_size() elements taking block_bytes() bytes; layouts follow the GGML definitions so
// GGUF tensors are used in place (mmap), without conversion.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace triattn {

// MXFP4: OCP microscaling FP4 as GGML stores it (gpt-oss experts). U8: raw bytes, only for
// the safetensors tensors that hold HF's MXFP4 blocks and scales before the loader repacks them.
enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, I32, MXFP4, U8, Q8_0x4, Q4_Kx8, Q4_0x8, Q8_0x16 };

// Q8_0x4 is an internal layout made at load time, never read from or written to a file: Q8_0
// rows interleaved in groups of 4 so the decode kernel reads four rows' blocks and scales
// with whole vectors (ops/quant_blocks.h, BlockQ8_0x4). Its rows are not contiguous, so
// TensorView::row() means nothing for it; read a row with ops::dequantize_matrix_row.
// Q4_Kx8 likewise from Q4_K: rows interleaved in groups of 8, each block's scales and mins
// unpacked to bytes (ops/quant_blocks.h, BlockQ4_Kx8), so a row takes 148 bytes per block
// instead of 144. Q8_0x16 likewise from Q8_0, rows in groups of 16, one row per 32-bit lane
// (BlockQ8_0x16): the layout of the kernels with 512-bit byte dot products.
// Rows per interleaved group: 4 for Q8_0x4, 8 for Q4_Kx8, 16 for Q8_0x16, 1 for every file type.
int interleaved_rows(DType t);
// The file type an internal layout was made from (Q8_0 for Q8_0x4, Q4_K for Q4_Kx8); t
// itself otherwise.
DType file_dtype(DType t);

int64_t block_size(DType t);   // elements per block (1 for plain types, 32 or 256)
size_t block_bytes(DType t);   // bytes per block
// Bytes taken by n elements; n must be a multiple of block_size(t).
size_t row_bytes(DType t, int64_t n);
std::string_view dtype_name(DType t);             // "f32", "q8_0", ..., "q8_0x4"
// File types only, case-insensitive ("q8_0x4" is not a name users can ask for).
std::optional<DType> dtype_from_name(std::string_view name);
// GGML type ids as used in GGUF tensor infos (file types only).
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
uint32_t dtype_to_ggml(DType t);

}  // namespace triattn
