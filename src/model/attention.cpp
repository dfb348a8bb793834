#include "model/attention.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace triattn {

namespace attention_detail {
// Implemented in attention_avx2.cpp; only called when the CPU has AVX2+FMA+F16C.
float dot_f16_avx2(const float* q, const uint16_t* k, int d);
void axpy_f16_avx2(float a, const uint16_t* v, float* out, int d);
float dot_f32_avx2(const float* q, const float* k, int d);
void axpy_f32_avx2(float a, const float* v, float* out, int d);
}  // namespace attention_detail

namespace {

bool has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok;
}

float dot_row(DType t, const float* q, const void* row, int d) {
  if (t == DType::F16) {
    const auto* k = static_cast<const uint16_t*>(row);
    if (has_avx2()) return attention_detail::dot_f16_avx2(q, k, d);
    float s = 0;
    for (int i = 0; i < d; ++i) s += q[i] * f16_to_f32(k[i]);
    return s;
  }
  const auto* k = static_cast<const float*>(row);
  if (has_avx2()) return attention_detail::dot_f32_avx2(q, k, d);
  float s = 0;
  for (int i = 0; i < d; ++i) s += q[i] * k[i];
  return s;
}

void axpy_row(DType t, float a, const void* row, float* out, int d) {
  if (t == DType::F16) {
    const auto* v = static_cast<const uint16_t*>(row);
    if (has_avx2()) return attention_detail::axpy_f16_avx2(a, v, out, d);
    for (int i = 0; i < d; ++i) out[i] += a * f16_to_f32(v[i]);
    return;
  }
  const auto* v = static_cast<const float*>(row);
  if (has_avx2()) return attention_detail::axpy_f32_avx2(a, v, out, d);
  for (int i = 0; i < d; ++i) out[i] += a * v[i];
}

}  // namespace

void attend_one_head(const float* q, const AttentionStream& s, int32_t query_pos, float scale, float* scores,
                     float* out) {
  const size_t row = (s.type == DType::F16 ? 2 : 4) * static_cast<size_t>(s.head_dim);
  const auto* keys = static_cast<const uint8_t*>(s.keys);
  const auto* values = static_cast<const uint8_t*>(s.values);
  float max_score = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < s.n; ++i) {
    if (s.pos[i] > query_pos) {
      scores[i] = -std::numeric_limits<float>::infinity();
      continue;
    }
    scores[i] = scale * dot_row(s.type, q, keys + i * row, s.head_dim);
    if (scores[i] > max_score) max_score = scores[i];
  }
  double sum = 0;
  for (int64_t i = 0; i < s.n; ++i) {
    scores[i] = s.pos[i] > query_pos ? 0.0f : std::exp(scores[i] - max_score);
    sum += scores[i];
  }
  std::memset(out, 0, sizeof(float) * static_cast<size_t>(s.head_dim));
  if (sum <= 0) return;
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < s.n; ++i) {
    scores[i] *= inv;
    if (scores[i] != 0.0f) axpy_row(s.type, scores[i], values + i * row, out, s.head_dim);
  }
}

}  // namespace triattn
