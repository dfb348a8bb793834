#pragma once
// The index of a vector's largest value: greedy decoding (engine/sampler.cpp) and the
// bench's next token (cli/bench_measure.cpp). One loop for both.
#include <cstdint>
#include <span>

namespace triattn {

// Index of the largest value; the lowest index among equal ones; NaNs are never chosen.
// -1 when v is empty or holds only NaNs.
int64_t argmax(std::span<const float> v);

}  // namespace triattn
