#include "core/dtype.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/error.h"

namespace triattn {

namespace {
struct Info {
  DType type;
  std::string_view name;
  int64_t block;
  size_t bytes;
  uint32_t ggml;
  DType file_type;  // itself, or the file type an internal layout is made from
  int group_rows;   // rows interleaved together (1: rows stored one after another)
};
constexpr uint32_t kNoGgml = 0xFFFFFFFFu;
// GGML ids: F32=0 F16=1 Q4_0=2 Q8_0=8 Q4_K=12 Q5_K=13 Q6_K=14 I32=26 BF16=30 MXFP4=39.
// U8 has no GGML id (ggml has signed I8 only); it is a safetensors type here.
// Q8_0x4: per row the same bytes as Q8_0 (a 4-row group of blocks is 4 x 34 bytes).
// Q4_Kx8: an 8-row group of blocks is 8 x 148 bytes (Q4_K's 144 plus 4 for unpacked scales).
// Q4_0x8: per row the same bytes as Q4_0 (an 8-row group of blocks is 8 x 18 bytes).
// Q8_0x16: per row the same bytes as Q8_0 (a 16-row group of blocks is 16 x 34 bytes).
constexpr Info kInfo[] = {
    {DType::F32, "f32", 1, 4, 0, DType::F32, 1},
    {DType::F16, "f16", 1, 2, 1, DType::F16, 1},
    {DType::BF16, "bf16", 1, 2, 30, DType::BF16, 1},
    {DType::Q8_0, "q8_0", 32, 34, 8, DType::Q8_0, 1},
    {DType::Q4_0, "q4_0", 32, 18, 2, DType::Q4_0, 1},
    {DType::Q4_K, "q4_k", 256, 144, 12, DType::Q4_K, 1},
    {DType::Q5_K, "q5_k", 256, 176, 13, DType::Q5_K, 1},
    {DType::Q6_K, "q6_k", 256, 210, 14, DType::Q6_K, 1},
    {DType::I32, "i32", 1, 4, 26, DType::I32, 1},
    {DType::MXFP4, "mxfp4", 32, 17, 39, DType::MXFP4, 1},
    {DType::U8, "u8", 1, 1, kNoGgml, DType::U8, 1},
    {DType::Q8_0x4, "q8_0x4", 32, 34, kNoGgml, DType::Q8_0, 4},
    {DType::Q4_Kx8, "q4_kx8", 256, 148, kNoGgml, DType::Q4_K, 8},
    {DType::Q4_0x8, "q4_0x8", 32, 18, kNoGgml, DType::Q4_0, 8},
    {DType::Q8_0x16, "q8_0x16", 32, 34, kNoGgml, DType::Q8_0, 16},
};
const Info& info(DType t) { return kInfo[static_cast<int>(t)]; }
bool internal(const Info& i) { return i.file_type != i.type; }
}  // namespace

int64_t block_size(DType t) { return info(t).block; }
size_t block_bytes(DType t) { return info(t).bytes; }

size_t row_bytes(DType t, int64_t n) {
  const Info& i = info(t);
  if (n < 0 || n % i.block != 0)
    fail("row of ", n, " elements is not a whole number of ", i.name, " blocks (", i.block, ")");
  return static_cast<size_t>(n / i.block) * i.bytes;
}

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const Info& i : kInfo)
    if (i.name == lower && !internal(i)) return i.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (const Info& i : kInfo)
    if (i.ggml == ggml_type && i.ggml != kNoGgml && !internal(i)) return i.type;
  return std::nullopt;
}

uint32_t dtype_to_ggml(DType t) {
  if (internal(info(t))) fail("internal layout ", info(t).name, " has no GGML type id");
  if (info(t).ggml == kNoGgml) fail("type ", info(t).name, " has no GGML type id");
  return info(t).ggml;
}

int interleaved_rows(DType t) { return info(t).group_rows; }
DType file_dtype(DType t) { return info(t).file_type; }

}  // namespace triattn
