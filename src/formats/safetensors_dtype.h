#pragma once
// The safetensors dtype strings this project reads and writes. Internal to formats/.
#include <optional>
#include <string>

#include "core/dtype.h"

namespace triattn {

inline std::optional<DType> safetensors_dtype(const std::string& s) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I32") return DType::I32;
  if (s == "U8") return DType::U8;  // gpt-oss's MXFP4 expert blocks and scales
  return std::nullopt;
}

inline const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::U8: return "U8";
    default: return nullptr;  // quantized types have no safetensors spelling
  }
}

}  // namespace triattn
