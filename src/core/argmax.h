#pragma once
// The index of a vector's largest value: greedy decoding, greedy agreement in eval, the
// bench's next token. One loop for all of them.
#include <cstdint>
#include <span>

namespace triattn {

// Index of the largest value; the lowest index among equal ones; NaNs are never chosen.
// -1 when v is empty or holds only NaNs.
int64_t argmax(std::span<const float> v);

}  // namespace triattn
