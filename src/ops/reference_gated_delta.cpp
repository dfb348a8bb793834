// Slow references of the Gated DeltaNet kernels (reference.h), in double, written from the
// definition and sharing nothing with gated_delta.cpp.
#include <cmath>
#include <vector>

#include "ops/gated_delta.h"
#include "ops/reference.h"

namespace triattn::ops::ref {
namespace {

double silu_f64(double x) { return x / (1.0 + std::exp(-x)); }

// x / sqrt(sum(x^2) + 1e-6) * scale.
std::vector<double> l2_normalized(const float* x, int n, double scale) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  std::vector<double> y(n);
  for (int i = 0; i < n; ++i) y[i] = x[i] * scale / std::sqrt(ss + 1e-6);
  return y;
}

// One token of one value head on its state S[dk][dv].
void delta_token(const std::vector<double>& q, const std::vector<double>& k, const float* v,
                 double g, double beta, int dk, int dv, std::vector<double>& S, float* out) {
  const double decay = std::exp(g);
  for (double& x : S) x *= decay;
  for (int j = 0; j < dv; ++j) {
    double mem = 0.0;
    for (int i = 0; i < dk; ++i) mem += S[i * dv + j] * k[i];
    const double delta = (v[j] - mem) * beta;
    for (int i = 0; i < dk; ++i) S[i * dv + j] += k[i] * delta;
  }
  for (int j = 0; j < dv; ++j) {
    double o = 0.0;
    for (int i = 0; i < dk; ++i) o += S[i * dv + j] * q[i];
    out[j] = static_cast<float>(o);
  }
}

}  // namespace

void causal_conv1d_silu(int64_t T, int C, int K, const float* x, int64_t x_stride,
                        const float* w, float* state, float* y, int64_t y_stride) {
  // The whole input: the K-1 state rows, then x.
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < K - 1; ++r) rows.emplace_back(state + r * C, state + (r + 1) * C);
  for (int64_t t = 0; t < T; ++t) rows.emplace_back(x + t * x_stride, x + t * x_stride + C);
  for (int64_t t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      double acc = 0.0;
      for (int j = 0; j < K; ++j) acc += static_cast<double>(w[c * K + j]) * rows[t + j][c];
      y[t * y_stride + c] = static_cast<float>(silu_f64(acc));
    }
  for (int r = 0; r < K - 1; ++r)
    for (int c = 0; c < C; ++c) state[r * C + c] = rows[rows.size() - (K - 1) + r][c];
}

void gated_delta_rule(const DeltaShape& s, int64_t T, const float* qkv, int64_t qkv_stride,
                      const float* g, const float* beta, int64_t gb_stride, float* state,
                      float* out, int64_t out_stride) {
  const int dk = s.head_k_dim, dv = s.head_v_dim;
  for (int h = 0; h < s.n_v_heads; ++h) {
    const int kh = s.v_heads_tiled ? h % s.n_k_heads : h / (s.n_v_heads / s.n_k_heads);
    float* st = state + static_cast<int64_t>(h) * dk * dv;
    std::vector<double> S(st, st + dk * dv);
    for (int64_t t = 0; t < T; ++t) {
      const float* row = qkv + t * qkv_stride;
      const auto q = l2_normalized(row + kh * dk, dk, 1.0 / std::sqrt(static_cast<double>(dk)));
      const auto k = l2_normalized(row + s.n_k_heads * dk + kh * dk, dk, 1.0);
      const float* v = row + 2 * s.n_k_heads * dk + h * dv;
      delta_token(q, k, v, g[t * gb_stride + h], beta[t * gb_stride + h], dk, dv, S,
                  out + t * out_stride + h * dv);
    }
    for (int i = 0; i < dk * dv; ++i) st[i] = static_cast<float>(S[i]);
  }
}

void gated_rmsnorm(const float* x, const float* z, const float* w, int n, float eps, float* y) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] * inv * w[i] * silu_f64(z[i]));
}

}  // namespace triattn::ops::ref
