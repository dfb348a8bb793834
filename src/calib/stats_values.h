#pragma once
// The value rules of the stats file's tensors, in one place for every way statistics enter
// or leave the program (the safetensors reader, the official .pt reader, the writer):
//   every value finite; *_abs_mean and *_mrl non-negative; rope_freqs positive.
// One NaN in q_mean_real makes every score of that head NaN, and the top-k then keeps
// whatever NaN comparisons happen to pick: pruning changes silently. So a bad value stops
// the load, and the message says where it is (tensor, layer, head, band).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/policy.h"

namespace triattn {

struct StatsTensorValues {
  std::string name;            // as in the file: "q_mean_real", "rope_freqs", ...
  std::vector<int64_t> shape;  // [n_layers, n_heads, bands], [bands] or [n]
  std::span<const float> values;
};

// The tensors a HeadStats holds (k_* only when present, q_pass_* under partial RoPE), plus rope_freqs and the weights
// fingerprint when non-empty, named and shaped as in the stats file.
std::vector<StatsTensorValues> stats_tensor_values(const HeadStats& s, std::span<const float> rope_freqs,
                                                   std::span<const float> fingerprint);

// R_f = |mean| / abs_mean per band (0 where abs_mean is 0): the derived *_mrl tensors that
// every format stores beside the means.
std::vector<float> mean_resultant_length(std::span<const float> re, std::span<const float> im,
                                         std::span<const float> abs);

// "" when every value obeys its tensor's rule; otherwise the first bad value, e.g.
// "tensor 'q_mean_imag' holds nan at layer 1, head 3, band 2 (values must be finite)".
std::string first_invalid_stats_value(std::span<const StatsTensorValues> tensors);

}  // namespace triattn
