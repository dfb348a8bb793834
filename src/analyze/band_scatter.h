#pragma once
// The pre-RoPE vectors of one band as points in the complex plane (the paper's Figure 2 A):
// raw, queries and keys cluster around their centres when the head is concentrated; after
// RoPE (rotated by ω_f times their position) the same points spread around a circle, which is
// why post-RoPE statistics would show no structure.
#include <complex>
#include <cstdint>
#include <vector>

#include "analyze/qk_capture.h"

namespace triattn {

struct BandScatter {
  int band = 0;
  double omega = 0;
  std::vector<int64_t> positions;  // of the points, inside their windows
  std::vector<std::complex<double>> q_raw, k_raw, q_rope, k_rope;
};

// The first min(max_points, tokens) tokens of the capture, in order.
BandScatter band_scatter(const QkCapture& cap, int layer, int head, int kv_head, int band, double omega,
                         int64_t max_points);

}  // namespace triattn
