#pragma once
// The element types KV rows come in (F32, F16, Q8_0): the one list that the KV cache, the
// attention and scoring kernels and the --kv-type parser all ask.
#include "core/dtype.h"

namespace triattn {

inline bool is_kv_type(DType type) { return type == DType::F32 || type == DType::F16 || type == DType::Q8_0; }

}  // namespace triattn
