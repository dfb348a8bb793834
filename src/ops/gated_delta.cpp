// Gated DeltaNet kernels: the conv and the norm here, the delta rule's bodies in
// gated_delta_kernels.inl (this file compiles the baseline one and dispatches by ISA).
#include "ops/gated_delta.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "ops/gated_delta_kernels.h"
#include "ops/ops.h"

#define TRIATTN_GDN_NS gdn_base
#define TRIATTN_GDN_VEC_BYTES 16
#include "ops/gated_delta_kernels.inl"
#undef TRIATTN_GDN_NS
#undef TRIATTN_GDN_VEC_BYTES

namespace triattn::ops {
namespace {

float silu_f32(float x) { return x / (1.0f + std::exp(-x)); }

// Input row r of the conv: a state row for r < 0, else a row of x.
const float* conv_input_row(int64_t r, int K, int C, const float* x, int64_t x_stride,
                            const float* state) {
  return r < 0 ? state + (r + K - 1) * C : x + r * x_stride;
}

// y[c] = sum_j w[c][j] * in[j][c]: the taps of one output row, channel by channel (w's rows are
// contiguous that way, so decode reads the weights once in order).
void conv_taps(int C, int K, const float* const* in, const float* w, float* y) {
  int c = 0;
  if (K == 4) {  // the models' width: blocks of fixed length, which the compiler vectorises
    const float* __restrict x0 = in[0];
    const float* __restrict x1 = in[1];
    const float* __restrict x2 = in[2];
    const float* __restrict x3 = in[3];
    const float* __restrict wr = w;
    float* __restrict yr = y;
    for (; c + 8 <= C; c += 8) {
      const float* wb = wr + 4 * static_cast<int64_t>(c);
      for (int l = 0; l < 8; ++l)
        yr[c + l] = wb[4 * l] * x0[c + l] + wb[4 * l + 1] * x1[c + l] +
                    wb[4 * l + 2] * x2[c + l] + wb[4 * l + 3] * x3[c + l];
    }
  }
  for (; c < C; ++c) {
    const float* wc = w + static_cast<int64_t>(c) * K;
    float acc = 0.0f;
    for (int j = 0; j < K; ++j) acc += wc[j] * in[j][c];
    y[c] = acc;
  }
}

// The state after T more rows: the last K-1 rows of (old state, x).
void conv_roll_state(int64_t T, int C, int K, const float* x, int64_t x_stride, float* state) {
  const int64_t keep = K - 1;
  const int64_t old = std::max<int64_t>(0, keep - T);  // old rows still in the window
  if (old > 0) std::memmove(state, state + (keep - old) * C, sizeof(float) * old * C);
  for (int64_t r = old; r < keep; ++r)
    std::memcpy(state + r * C, x + (T - keep + r) * x_stride, sizeof(float) * C);
}

void check_delta_call(const DeltaShape& s, int64_t T, int h0, int h1) {
  if (s.n_k_heads <= 0 || s.n_v_heads <= 0 || s.head_k_dim <= 0 || s.head_v_dim <= 0 ||
      s.n_v_heads % s.n_k_heads != 0)
    fail("gated_delta_rule: bad shape ", s.n_k_heads, " key heads, ", s.n_v_heads,
         " value heads, dims ", s.head_k_dim, "/", s.head_v_dim);
  if (T < 0 || h0 < 0 || h1 > s.n_v_heads || h0 > h1)
    fail("gated_delta_rule: ", T, " tokens, heads [", h0, ", ", h1, ") of ", s.n_v_heads);
}

using DeltaFn = void (*)(const DeltaCall&);

// Calls of fewer tokens run the one-step form: measured per token on the Qwen3.5-9B shape, the
// chunked one lost at T = 2 and 4 (its products and scratch are too small to pay) and won from
// T = 8 (~75 against ~115 us/token).
constexpr int64_t kChunkedMinTokens = 8;

// The AVX2 bodies on AVX2 and AVX-512 machines, the baseline ones elsewhere. 512-bit vectors
// ran 15-25% slower on the Xeon we measured (decode and one-step; the chunked form no faster),
// and 256-bit ones built for AVX-512 the same as AVX2, so there is no AVX-512 build.
bool delta_use_avx2() {
#if defined(__x86_64__)
  return active_isa() == Isa::Avx2 || active_isa() == Isa::Avx512;
#else
  return false;
#endif
}

DeltaFn delta_recurrent_fn() {
  return delta_use_avx2() ? gdn_avx2::recurrent : gdn_base::recurrent;
}

DeltaFn delta_chunked_fn() { return delta_use_avx2() ? gdn_avx2::chunked : gdn_base::chunked; }

DeltaCall make_delta_call(const DeltaShape& s, int64_t T, const float* qkv, int64_t qkv_stride,
                          const float* g, const float* beta, int64_t gb_stride, float* state,
                          float* out, int64_t out_stride, int h0, int h1) {
  check_delta_call(s, T, h0, h1);
  return DeltaCall{s, T, qkv, qkv_stride, g, beta, gb_stride, state, out, out_stride, h0, h1};
}

}  // namespace

void causal_conv1d_silu(int64_t T, int C, int K, const float* x, int64_t x_stride,
                        const float* w, float* state, float* y, int64_t y_stride) {
  if (T < 0 || C <= 0 || K <= 0) fail("causal_conv1d_silu: T ", T, ", C ", C, ", K ", K);
  // SiLU through swiglu(sum, 1): the ISA kernels' vector exp, where a scalar exp per channel
  // cost more than the taps.
  const std::vector<float> ones(static_cast<size_t>(C), 1.0f);
  std::vector<const float*> in(static_cast<size_t>(K));
  for (int64_t t = 0; t < T; ++t) {
    for (int j = 0; j < K; ++j) in[j] = conv_input_row(t - (K - 1) + j, K, C, x, x_stride, state);
    float* yt = y + t * y_stride;
    conv_taps(C, K, in.data(), w, yt);
    swiglu(yt, ones.data(), yt, C);
  }
  if (K > 1) conv_roll_state(T, C, K, x, x_stride, state);
}

void gated_delta_rule(const DeltaShape& s, int64_t T, const float* qkv, int64_t qkv_stride,
                      const float* g, const float* beta, int64_t gb_stride, float* state,
                      float* out, int64_t out_stride, int v_head_begin, int v_head_end) {
  const DeltaCall c = make_delta_call(s, T, qkv, qkv_stride, g, beta, gb_stride, state, out,
                                      out_stride, v_head_begin, v_head_end);
  (T < kChunkedMinTokens ? delta_recurrent_fn() : delta_chunked_fn())(c);
}

void gated_delta_rule_recurrent(const DeltaShape& s, int64_t T, const float* qkv,
                                int64_t qkv_stride, const float* g, const float* beta,
                                int64_t gb_stride, float* state, float* out, int64_t out_stride,
                                int v_head_begin, int v_head_end) {
  delta_recurrent_fn()(make_delta_call(s, T, qkv, qkv_stride, g, beta, gb_stride, state, out,
                                       out_stride, v_head_begin, v_head_end));
}

void gated_delta_rule_chunked(const DeltaShape& s, int64_t T, const float* qkv,
                              int64_t qkv_stride, const float* g, const float* beta,
                              int64_t gb_stride, float* state, float* out, int64_t out_stride,
                              int v_head_begin, int v_head_end) {
  delta_chunked_fn()(make_delta_call(s, T, qkv, qkv_stride, g, beta, gb_stride, state, out,
                                     out_stride, v_head_begin, v_head_end));
}

void gated_rmsnorm(const float* x, const float* z, const float* w, int n, float eps, float* y) {
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv * w[i] * silu_f32(z[i]);
}

}  // namespace triattn::ops
