#include "analyze/band_scatter.h"

#include <algorithm>

namespace triattn {

BandScatter band_scatter(const QkCapture& cap, int layer, int head, int kv_head, int band, double omega,
                         int64_t max_points) {
  BandScatter s;
  s.band = band;
  s.omega = omega;
  const int64_t n = std::min(max_points, cap.tokens());
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = cap.position(t);
    const std::complex<double> rot = std::polar(1.0, omega * static_cast<double>(pos));
    const std::complex<double> q = cap.q_band(layer, t, head, band), k = cap.k_band(layer, t, kv_head, band);
    s.positions.push_back(pos);
    s.q_raw.push_back(q);
    s.k_raw.push_back(k);
    s.q_rope.push_back(q * rot);
    s.k_rope.push_back(k * rot);
  }
  return s;
}

}  // namespace triattn
