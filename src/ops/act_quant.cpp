#include "ops/act_quant.h"

#include <algorithm>
#include <cmath>

namespace triattn::ops {

namespace {
// Quantizes n values with one scale; returns the scale and the sum of the quants.
float quantize_group(const float* x, int8_t* q, int n) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d > 0 ? 1.0f / d : 0.0f;
  // nearbyint (ties to even) vectorises, unlike lround; either keeps error <= d/2.
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
  return d;
}
}  // namespace

void quantize_act_q8(const float* x, ActQ8* out, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    ActQ8& a = out[b];
    a.d = quantize_group(x + b * kQK, a.qs, kQK);
    int32_t s = 0;
    for (int i = 0; i < kQK; ++i) s += a.qs[i];
    a.sum = s;
  }
}

void quantize_act_q8k(const float* x, ActQ8K* out, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    ActQ8K& a = out[b];
    a.d = quantize_group(x + b * kQKK, a.qs, kQKK);
    for (int k = 0; k < kQKK / 16; ++k) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += a.qs[16 * k + i];
      a.bsums[k] = static_cast<int16_t>(s);
    }
  }
}

}  // namespace triattn::ops
