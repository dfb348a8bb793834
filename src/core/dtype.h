#pragma once
// Element/block types of weights and activations. Quantized types are stored in blocks of
// block_size() elements taking block_bytes() bytes; layouts follow the GGML definitions so
// GGUF tensors are used in place (mmap), without conversion.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace triattn {

enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, I32 };

int64_t block_size(DType t);   // elements per block (1 for plain types, 32 or 256)
size_t block_bytes(DType t);   // bytes per block
// Bytes taken by n elements; n must be a multiple of block_size(t).
size_t row_bytes(DType t, int64_t n);
std::string_view dtype_name(DType t);             // "f32", "q8_0", ...
std::optional<DType> dtype_from_name(std::string_view name);  // case-insensitive
// GGML type ids as used in GGUF tensor infos.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
uint32_t dtype_to_ggml(DType t);

}  // namespace triattn
