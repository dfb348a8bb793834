#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/cpu_dispatch.h"
#include "ops/kv_rows.h"
#include "ops/ops.h"

namespace triattn {

namespace attention_detail {

// The same block-wise online softmax as the AVX2 kernel, one key at a time; each row is
// read as floats by ops::dequantize_row (the format's own definition).
void attend_scalar(const float* const* q, const int32_t* q_pos, int n_q,
                   const AttentionStream& s, float scale, float* const* out, float* weights,
                   float* state) {
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
  float sc[kMaxBlock];
  const int block = block_keys(row);
  for (int64_t i0 = 0; i0 < s.n; i0 += block) {
    const int nb = static_cast<int>(std::min<int64_t>(block, s.n - i0));
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
    if (state) state[2 * j] = m[j], state[2 * j + 1] = l[j];
    const float inv = l[j] > 0 ? 1.0f / l[j] : 0.0f;
    for (int e = 0; e < d; ++e) out[j][e] *= inv;
    if (weights) {
      float* w = weights + j * s.n;
      for (int64_t i = 0; i < s.n; ++i) w[i] = l[j] > 0 ? std::exp(w[i] - m[j]) * inv : 0.0f;
    }
  }
}

}  // namespace attention_detail

namespace {

using Kernel = ops::AttendFn;

// The kernel for this stream from the active kernel table (the ISA choice of every other
// kernel, so forcing an ISA covers attention too), after checking what every kernel assumes.
Kernel attend_kernel_for(const AttentionStream& s) {
  if (!is_kv_type(s.type))
    fail("attention: KV type ", dtype_name(s.type), " is not supported (F32, F16 or Q8_0)");
  if (s.head_dim % block_size(s.type) != 0)
    fail("attention: head_dim ", s.head_dim, " is not a whole number of ", dtype_name(s.type), " blocks");
  for (const ops::AttendKernel& k : ops::active_kernels().attend)
    if (k.fn && s.head_dim % k.head_dim_multiple == 0) return k.fn;
  return attention_detail::attend_scalar;
}

// Keys [c kChunkKeys, ...) of s; the sinks go with chunk 0.
AttentionStream chunk_of(const AttentionStream& s, int64_t c) {
  const int64_t i0 = c * kChunkKeys;
  const size_t row = row_bytes(s.type, s.head_dim);
  AttentionStream sub = s;
  sub.keys = static_cast<const uint8_t*>(s.keys) + static_cast<size_t>(i0) * row;
  sub.values = static_cast<const uint8_t*>(s.values) + static_cast<size_t>(i0) * row;
  sub.pos = s.pos + i0;
  sub.n = std::min<int64_t>(kChunkKeys, s.n - i0);
  if (c > 0) sub.sinks = nullptr;
  return sub;
}

// True when no query of the call may see any key of the chunk (prefill: keys of the
// run's own later tokens). Positions need not be in order along a stream here, but they are
// in practice, so the first key answers for the usual chunk (one a query sees) without a
// pass over the chunk's positions.
bool all_after(const AttentionStream& sub, const int32_t* q_pos, int n_q) {
  if (sub.sinks) return false;  // a gpt-oss sink counts in chunk 0 whatever its keys
  if (sub.n == 0) return true;
  const int32_t newest = *std::max_element(q_pos, q_pos + n_q);
  if (sub.max_pos <= newest) return false;  // decode: the newest query sees every key
  return sub.pos[0] > newest && *std::min_element(sub.pos, sub.pos + sub.n) > newest;
}

}  // namespace

int64_t attention_chunks(int64_t n) { return n <= kChunkKeys ? 1 : (n + kChunkKeys - 1) / kChunkKeys; }

size_t attention_partial_floats(int n_q, int head_dim) {
  return static_cast<size_t>(n_q) * static_cast<size_t>(head_dim + 2);
}

namespace {
// Chunk c of s through `kernel` into partial (attention_partial_floats); chunk_weights: null,
// or n_q rows of the chunk's length receiving its weights, normalised over the chunk.
void run_chunk(Kernel kernel, const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
               int64_t c, float scale, float* partial, float* chunk_weights) {
  const AttentionStream sub = chunk_of(s, c);
  const int d = s.head_dim;
  float* state = partial + static_cast<size_t>(n_q) * d;
  if (all_after(sub, q_pos, n_q)) {  // what the kernel would find, without reading the rows
    std::fill(partial, partial + static_cast<size_t>(n_q) * d, 0.0f);
    for (int j = 0; j < n_q; ++j) state[2 * j] = -std::numeric_limits<float>::infinity(), state[2 * j + 1] = 0;
    if (chunk_weights) std::fill(chunk_weights, chunk_weights + n_q * sub.n, 0.0f);
    return;
  }
  thread_local std::vector<float*> outs;
  outs.resize(static_cast<size_t>(n_q));
  for (int j = 0; j < n_q; ++j) outs[j] = partial + static_cast<size_t>(j) * d;
  kernel(q, q_pos, n_q, sub, scale, outs.data(), chunk_weights, state);
}
}  // namespace

void attend_chunk(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s, int64_t c,
                  float scale, float* partial) {
  const Kernel kernel = attend_kernel_for(s);
  if (n_q <= 0) return;
  if (c < 0 || c >= attention_chunks(s.n)) fail("attention: chunk ", c, " of a stream of ", s.n, " keys");
  run_chunk(kernel, q, q_pos, n_q, s, c, scale, partial, nullptr);
}

void merge_attention_chunks(int n_q, int head_dim, int64_t n_chunks, const float* partials, float* const* out,
                            float* factors) {
  const int d = head_dim;
  const size_t stride = attention_partial_floats(n_q, d);
  if (n_chunks == 1) {  // as the kernel wrote it: one chunk merges to itself exactly
    for (int j = 0; j < n_q; ++j) std::copy(partials + static_cast<size_t>(j) * d, partials + static_cast<size_t>(j + 1) * d, out[j]);
    if (factors)
      for (int j = 0; j < n_q; ++j) factors[j] = 1.0f;
    return;
  }
  for (int j = 0; j < n_q; ++j) {
    auto state = [&](int64_t c) { return partials + c * stride + static_cast<size_t>(n_q) * d + 2 * j; };
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n_chunks; ++c)
      if (state(c)[1] > 0) mx = std::max(mx, state(c)[0]);
    float total = 0;
    std::fill(out[j], out[j] + d, 0.0f);
    for (int64_t c = 0; c < n_chunks; ++c) {
      const float w = state(c)[1] > 0 ? state(c)[1] * std::exp(state(c)[0] - mx) : 0.0f;
      if (factors) factors[c * n_q + j] = w;  // normalised below
      if (w == 0) continue;
      const float* oc = partials + c * stride + static_cast<size_t>(j) * d;
      for (int e = 0; e < d; ++e) out[j][e] += w * oc[e];
      total += w;
    }
    const float inv = total > 0 ? 1.0f / total : 0.0f;
    for (int e = 0; e < d; ++e) out[j][e] *= inv;
    if (factors)
      for (int64_t c = 0; c < n_chunks; ++c) factors[c * n_q + j] *= inv;
  }
}

void attend(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
            float scale, float* const* out, float* weights) {
  const Kernel kernel = attend_kernel_for(s);
  if (n_q <= 0) return;
  const int64_t chunks = attention_chunks(s.n);
  if (chunks == 1) {
    kernel(q, q_pos, n_q, s, scale, out, weights, nullptr);
    return;
  }
  // The chunks one after another on this thread, as the forward pass runs them on several.
  const int d = s.head_dim;
  const size_t stride = attention_partial_floats(n_q, d);
  thread_local std::vector<float> partials, factors, chunk_weights;
  partials.resize(static_cast<size_t>(chunks) * stride);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunkKeys, nc = std::min(s.n - i0, kChunkKeys);
    if (weights) chunk_weights.resize(static_cast<size_t>(n_q * nc));
    run_chunk(kernel, q, q_pos, n_q, s, c, scale, partials.data() + c * stride, weights ? chunk_weights.data() : nullptr);
    if (weights)  // in place; rescaled below once every chunk's share is known
      for (int j = 0; j < n_q; ++j)
        std::copy(chunk_weights.begin() + j * nc, chunk_weights.begin() + (j + 1) * nc, weights + j * s.n + i0);
  }
  factors.resize(static_cast<size_t>(chunks) * n_q);
  merge_attention_chunks(n_q, d, chunks, partials.data(), out, weights ? factors.data() : nullptr);
  if (!weights) return;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t i0 = c * kChunkKeys, i1 = std::min(s.n, i0 + kChunkKeys);
    for (int j = 0; j < n_q; ++j) {
      const float f = factors[c * n_q + j];
      for (float* w = weights + j * s.n + i0; w < weights + j * s.n + i1; ++w) *w *= f;
    }
  }
}

void attend_one_head(const float* q, const AttentionStream& s, int32_t query_pos, float scale,
                     float* scores, float* out) {
  attend(&q, &query_pos, 1, s, scale, &out, scores);
}

}  // namespace triattn
