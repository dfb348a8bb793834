#pragma once
// Gated DeltaNet kernels (the linear-attention layers of Qwen3.5/3.6): the causal conv1d over
// the q/k/v projection, the gated delta rule with its recurrent state, the gated RMSNorm on its
// output, and the decay/strength helpers. One sequence and one layer per call; the caller
// owns the conv and recurrent states (docs/design.md, "A sequence's state").
#include <cmath>
#include <cstdint>

namespace triattn::ops {

// The layer's head layout. Every value head h reads key head key_head(h): HF checkpoints group
// consecutive value heads on one key head, llama.cpp GGUF files tile them.
struct DeltaShape {
  int n_k_heads = 0;
  int n_v_heads = 0;
  int head_k_dim = 0;
  int head_v_dim = 0;
  bool v_heads_tiled = false;

  int key_dim() const { return n_k_heads * head_k_dim; }
  int value_dim() const { return n_v_heads * head_v_dim; }
  // Channels of the conv and of one qkv row: q, then k, then v.
  int conv_dim() const { return 2 * key_dim() + value_dim(); }
  int key_head(int h) const {
    return v_heads_tiled ? h % n_k_heads : h / (n_v_heads / n_k_heads);
  }
  // Floats of the recurrent state: [n_v_heads][head_k_dim][head_v_dim].
  int64_t state_floats() const {
    return static_cast<int64_t>(n_v_heads) * head_k_dim * head_v_dim;
  }
};

// log(1 + e^x), exact to float precision for every x (e^x overflows past 88; past 20 the
// correction is below float's resolution).
inline float delta_softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
// The per-token log decay g = -exp(A_log) * softplus(a + dt_bias) (<= 0). GGUF files store
// ssm_a = -exp(A_log) already; from an HF checkpoint pass -exp(A_log).
inline float delta_decay(float a, float dt_bias, float neg_exp_a_log) {
  return neg_exp_a_log * delta_softplus(a + dt_bias);
}
// The per-token write strength beta = sigmoid(b), in (0, 1).
inline float delta_beta(float b) { return 1.0f / (1.0f + std::exp(-b)); }

// y[t][c] = silu(sum_j w[c][j] * x[t - (K-1) + j][c]) for T rows of C channels, K taps. Rows
// before the first come from `state` ([K-1][C], oldest first; zeros for a fresh sequence),
// which afterwards holds the last K-1 input rows. y must not overlap x or state.
void causal_conv1d_silu(int64_t T, int C, int K, const float* x, int64_t x_stride,
                        const float* w /*[C][K]*/, float* state /*[(K-1)][C]*/, float* y,
                        int64_t y_stride);

// The gated delta rule over T tokens for value heads [v_head_begin, v_head_end), so callers can
// split heads across threads. qkv: T conv-output rows (q, k, v; see DeltaShape), left intact:
// q and k are L2-normalised (eps 1e-6) and q scaled by 1/sqrt(head_k_dim) on private scratch.
// g, beta: T rows of n_v_heads (log decay, write strength). state: [n_v_heads][dk][dv] f32,
// updated. out: T rows of n_v_heads * dv, not overlapping qkv. Decode (T == 1) and calls under
// 8 tokens run the one-step recurrence, longer ones the chunked form (64-token chunks); both
// compute the same thing to float rounding, so how a sequence is cut into calls does not matter.
void gated_delta_rule(const DeltaShape& s, int64_t T, const float* qkv, int64_t qkv_stride,
                      const float* g, const float* beta, int64_t gb_stride, float* state,
                      float* out, int64_t out_stride, int v_head_begin, int v_head_end);
// The two forms on their own (same contract), for tests and measurements.
void gated_delta_rule_recurrent(const DeltaShape& s, int64_t T, const float* qkv,
                                int64_t qkv_stride, const float* g, const float* beta,
                                int64_t gb_stride, float* state, float* out, int64_t out_stride,
                                int v_head_begin, int v_head_end);
void gated_delta_rule_chunked(const DeltaShape& s, int64_t T, const float* qkv,
                              int64_t qkv_stride, const float* g, const float* beta,
                              int64_t gb_stride, float* state, float* out, int64_t out_stride,
                              int v_head_begin, int v_head_end);

// One value head's output norm: y = x / sqrt(mean(x^2) + eps) * w * silu(z) (plain weight, not
// 1 + w). y may alias x.
void gated_rmsnorm(const float* x, const float* z, const float* w, int n, float eps, float* y);

}  // namespace triattn::ops
