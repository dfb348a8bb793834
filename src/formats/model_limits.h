#pragma once
// Checks on what a model file holds that the format readers cannot make alone
// (docs/reliability.md): non-finite values in weights. A flipped exponent bit makes a weight
// Inf or NaN; nothing fails until NaN logits reach the sampler ("every logit is NaN"), far from
// the file. A loader calls require_finite on the tensors it keeps, so the file and the tensor
// are named. F32, F16 and BF16 values are scanned, and the f16 block scales of Q8_0 and Q4_0 (a
// non-finite scale poisons its whole block); other quantized types are left alone. One pass
// over the bytes: about the cost of reading the tensor once.
#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"

namespace triattn {

// Index (in elements, or in blocks for Q8_0/Q4_0 scales) of the first non-finite value of
// `t`, or none.
std::optional<int64_t> first_non_finite(const TensorView& t);

// Throws Error "<file>: tensor '<tensor>' holds a non-finite value (Inf or NaN) at element N:
// the file is corrupt; download or convert it again" when there is one.
void require_finite(const TensorView& t, const std::string& file, const std::string& tensor);

}  // namespace triattn
