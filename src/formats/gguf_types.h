#pragma once
// Internal helpers shared by the GGUF reader and writer: type names, element sizes and a
// structural check of values (used by the writer before it serialises anything).
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/gguf.h"

namespace triattn::gguf_detail {

// Nested arrays deeper than this are refused: no real file nests more than two levels, and
// a bound keeps a corrupted file from driving unbounded recursion.
constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr uint64_t kDefaultAlignment = 32;

bool is_valid_type(uint32_t t);
std::string_view type_name(GgufType t);
bool is_signed_int(GgufType t);
bool is_unsigned_int(GgufType t);
bool is_float(GgufType t);
// Smallest encoding of one value of this type (for "count fits in the file" checks).
uint64_t min_encoded_size(GgufType t);
// Fixed byte width of a scalar type (0 for STRING/ARRAY).
uint64_t scalar_size(GgufType t);
// Throws Error (prefixed with `where`) when v's variant does not hold what v.type says, an
// integer is out of its type's range, or arrays hold mixed / too deeply nested items.
void check_value(const GgufValue& v, const std::string& where, int depth = 0);

}  // namespace triattn::gguf_detail
