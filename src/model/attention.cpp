#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "ops/ops.h"

namespace triattn {

namespace attention_detail {

// The same block-wise online softmax as the AVX2 kernel, one key at a time; each row is
// read as floats by ops::dequantize_row (the format's own definition).
void attend_scalar(const float* const* q, const int32_t* q_pos, int n_q,
                   const AttentionStream& s, float scale, float* const* out, float* weights) {
  const int d = s.head_dim;
  const size_t row = row_bytes(s.type, d);
  const auto* keys = static_cast<const uint8_t*>(s.keys);
  const auto* values = static_cast<const uint8_t*>(s.values);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float> m(static_cast<size_t>(n_q), kNegInf), l(static_cast<size_t>(n_q), 0.0f);
  std::vector<float> kv(static_cast<size_t>(d));
  for (int j = 0; j < n_q; ++j) std::fill(out[j], out[j] + d, 0.0f);
  if (s.sinks)  // the sink as a key of value 0 seen first: max = sink, sum = exp(0)
    for (int j = 0; j < n_q; ++j) m[j] = s.sinks[j], l[j] = 1.0f;
  float sc[kBlock];
  for (int64_t i0 = 0; i0 < s.n; i0 += kBlock) {
    const int nb = static_cast<int>(std::min<int64_t>(kBlock, s.n - i0));
    for (int j = 0; j < n_q; ++j) {
      float bmax = kNegInf;
      for (int k = 0; k < nb; ++k) {
        const int64_t i = i0 + k;
        if (s.pos[i] > q_pos[j] || (s.window > 0 && q_pos[j] - s.pos[i] >= s.window)) {
          sc[k] = kNegInf;
          continue;
        }
        ops::dequantize_row(s.type, keys + i * row, kv.data(), d);
        float dot = 0;
        for (int e = 0; e < d; ++e) dot += q[j][e] * kv[e];
        sc[k] = scale * dot;
        if (s.softcap > 0) sc[k] = s.softcap * std::tanh(sc[k] / s.softcap);
        bmax = std::max(bmax, sc[k]);
      }
      if (weights) std::copy(sc, sc + nb, weights + j * s.n + i0);
      if (bmax == kNegInf) continue;  // every key of the block is masked for this query
      const float m_new = std::max(m[j], bmax);
      const float corr = std::exp(m[j] - m_new);
      m[j] = m_new;
      l[j] *= corr;
      for (int e = 0; e < d; ++e) out[j][e] *= corr;
      for (int k = 0; k < nb; ++k) {
        const float p = std::exp(sc[k] - m_new);
        if (p == 0.0f) continue;
        l[j] += p;
        ops::dequantize_row(s.type, values + (i0 + k) * row, kv.data(), d);
        for (int e = 0; e < d; ++e) out[j][e] += p * kv[e];
      }
    }
  }
  for (int j = 0; j < n_q; ++j) {
    const float inv = l[j] > 0 ? 1.0f / l[j] : 0.0f;
    for (int e = 0; e < d; ++e) out[j][e] *= inv;
    if (weights) {
      float* w = weights + j * s.n;
      for (int64_t i = 0; i < s.n; ++i) w[i] = l[j] > 0 ? std::exp(w[i] - m[j]) * inv : 0.0f;
    }
  }
}

}  // namespace attention_detail

void attend(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
            float scale, float* const* out, float* weights) {
  if (!is_kv_type(s.type))
    fail("attention: KV type ", dtype_name(s.type), " is not supported (F32, F16 or Q8_0)");
  if (s.head_dim % block_size(s.type) != 0)
    fail("attention: head_dim ", s.head_dim, " is not a whole number of ", dtype_name(s.type), " blocks");
  if (n_q <= 0) return;
#if defined(__x86_64__)
  // Follows the ops ISA choice, so forcing an ISA in a test covers this too.
  const ops::Isa isa = ops::active_isa();
  if (isa == ops::Isa::Avx512 && s.head_dim % 16 == 0) {
    attention_detail::attend_avx512(q, q_pos, n_q, s, scale, out, weights);
    return;
  }
  if (isa != ops::Isa::Scalar && s.head_dim % 8 == 0) {
    attention_detail::attend_avx2(q, q_pos, n_q, s, scale, out, weights);
    return;
  }
#elif defined(__aarch64__)
  if (ops::active_isa() != ops::Isa::Scalar && s.head_dim % 4 == 0) {
    attention_detail::attend_neon(q, q_pos, n_q, s, scale, out, weights);
    return;
  }
#endif
  attention_detail::attend_scalar(q, q_pos, n_q, s, scale, out, weights);
}

void attend_one_head(const float* q, const AttentionStream& s, int32_t query_pos, float scale,
                     float* scores, float* out) {
  attend(&q, &query_pos, 1, s, scale, &out, scores);
}

}  // namespace triattn
