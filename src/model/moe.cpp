#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn {

TensorView expert_matrix(const TensorView& experts, int64_t e) {
  if (experts.shape.size() != 3 || e < 0 || e >= experts.shape[0])
    fail("internal: expert ", e, " asked of a tensor that is not a stack of experts holding it");
  const int64_t rows = experts.shape[1], cols = experts.shape[2];
  const size_t bytes = row_bytes(experts.type, cols) * static_cast<size_t>(rows);
  return TensorView{experts.type, {rows, cols}, static_cast<const uint8_t*>(experts.data) + static_cast<size_t>(e) * bytes};
}

void route(std::span<const float> logits, int k, bool norm, Route& out) {
  const int n = static_cast<int>(logits.size());
  if (k < 1 || k > n) fail("internal: top ", k, " of ", n, " experts");
  // Softmax over every expert (in double: the ranking and weights do not depend on the ISA).
  thread_local std::vector<double> p;
  thread_local std::vector<int32_t> order;
  p.resize(static_cast<size_t>(n));
  order.resize(static_cast<size_t>(n));
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[i] = std::exp(static_cast<double>(logits[i]) - top);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
  out.experts.assign(order.begin(), order.begin() + k);
  double kept = 0;
  for (int32_t e : out.experts) kept += p[e];
  const double denom = norm ? kept : sum;
  out.weights.resize(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) out.weights[i] = static_cast<float>(p[out.experts[i]] / denom);
}

namespace {
void activation_row(const ModelConfig& c, float* gate, const float* up, int64_t n) {
  switch (c.activation) {
    case Activation::GeluTanh: ops::geglu(gate, up, gate, n); return;
    case Activation::Silu: ops::swiglu(gate, up, gate, n); return;
    case Activation::SwigluOai: {
      // gpt-oss (transformers' GptOssExperts): gate clamped above only, up both ways; alpha
      // 1.702 makes g * sigmoid(alpha g) the GELU approximation; the + 1 on up is the model's.
      constexpr float kAlpha = 1.702f;
      const float limit = c.swiglu_limit;
      for (int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], limit);
        const float u = std::clamp(up[i], -limit, limit);
        gate[i] = (u + 1.0f) * g / (1.0f + std::exp(-kAlpha * g));
      }
      return;
    }
  }
}
}  // namespace

void ffn_activation(const ModelConfig& c, float* gate, const float* up, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) activation_row(c, gate + r * n, up + r * n, n);
}

namespace {
// y[t * n + i] += bias[i] for t < rows (an expert's bias row over its tokens).
void add_rows(float* y, const float* bias, int64_t rows, int64_t n) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < n; ++i) y[t * n + i] += bias[i];
}
const float* bias_row(const TensorView& b, int64_t e) {
  return b.empty() ? nullptr : static_cast<const float*>(b.data) + e * b.shape[1];
}
}  // namespace

void MoeFfn::run(const ModelConfig& c, const LayerWeights& L, const float* xn, int64_t n_tokens, float* out,
                 ThreadPool* pool) {
  const int64_t E = c.n_embd, X = c.n_expert, F = c.n_ff_expert;
  const int k = c.n_expert_used;
  logits_.resize(static_cast<size_t>(n_tokens * X));
  ops::matmul(L.router, xn, n_tokens, logits_.data(), pool);
  if (!L.router_bias.empty()) add_rows(logits_.data(), static_cast<const float*>(L.router_bias.data), n_tokens, X);

  // Group the (token, weight) pairs by expert, tokens in order within each expert.
  routes_.resize(static_cast<size_t>(n_tokens));
  first_.assign(static_cast<size_t>(X + 1), 0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    route(std::span<const float>(&logits_[t * X], static_cast<size_t>(X)), k, c.expert_weights_norm, routes_[t]);
    for (int32_t e : routes_[t].experts) ++first_[e + 1];
  }
  std::partial_sum(first_.begin(), first_.end(), first_.begin());
  slots_.resize(static_cast<size_t>(n_tokens * k));
  std::vector<int64_t> next(first_.begin(), first_.end() - 1);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int i = 0; i < k; ++i) slots_[next[routes_[t].experts[i]]++] = {t, routes_[t].weights[i]};

  int64_t most = 0;
  for (int64_t e = 0; e < X; ++e) most = std::max(most, first_[e + 1] - first_[e]);
  x_.resize(static_cast<size_t>(most * E));
  gate_.resize(static_cast<size_t>(k * most * F));
  up_.resize(static_cast<size_t>(k * most * F));
  y_.resize(static_cast<size_t>(k * most * E));
  std::fill(out, out + n_tokens * E, 0.0f);

  // One matrix product per selected expert over the tokens routed to it; the other experts'
  // weights are never touched. Experts routed the very same tokens (in decode, all k of them)
  // share one gate/up call (one quantization of the input) and one down call (each expert's
  // own activations): the threads meet twice per batch of experts, not twice per expert.
  auto same_tokens = [&](int64_t a, int64_t b) {
    const int64_t n = first_[a + 1] - first_[a];
    if (first_[b + 1] - first_[b] != n) return false;
    for (int64_t i = 0; i < n; ++i)
      if (slots_[first_[a] + i].first != slots_[first_[b] + i].first) return false;
    return true;
  };
  std::vector<int64_t> batch;  // experts sharing batch[0]'s tokens (at most k: a token picks k)
  std::vector<TensorView> views;
  std::vector<ops::MatmulTarget> targets;
  for (int64_t e0 = 0; e0 < X;) {
    const int64_t b0 = first_[e0], n = first_[e0 + 1] - b0;
    if (n == 0) {
      ++e0;
      continue;
    }
    batch.assign(1, e0);
    int64_t e1 = e0 + 1;
    for (; e1 < X; ++e1)
      if (first_[e1 + 1] > first_[e1] && !same_tokens(e0, e1)) break;
    for (int64_t e = e0 + 1; e < e1; ++e)
      if (first_[e + 1] > first_[e]) batch.push_back(e);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(&x_[i * E], xn + slots_[b0 + i].first * E, static_cast<size_t>(E) * sizeof(float));
    views.clear();
    for (int64_t e : batch) {
      views.push_back(expert_matrix(L.gate_exps, e));
      views.push_back(expert_matrix(L.up_exps, e));
    }
    targets.clear();
    for (size_t j = 0; j < batch.size(); ++j) {
      targets.push_back({&views[2 * j], &gate_[j * n * F]});
      targets.push_back({&views[2 * j + 1], &up_[j * n * F]});
    }
    ops::matmul_group(targets, x_.data(), n, pool);
    for (size_t j = 0; j < batch.size(); ++j) {
      if (const float* b = bias_row(L.gate_exps_bias, batch[j])) add_rows(&gate_[j * n * F], b, n, F);
      if (const float* b = bias_row(L.up_exps_bias, batch[j])) add_rows(&up_[j * n * F], b, n, F);
    }
    ffn_activation(c, gate_.data(), up_.data(), static_cast<int64_t>(batch.size()) * n, F);
    views.clear();
    for (int64_t e : batch) views.push_back(expert_matrix(L.down_exps, e));
    targets.clear();
    for (size_t j = 0; j < batch.size(); ++j) targets.push_back({&views[j], &y_[j * n * E], &gate_[j * n * F]});
    ops::matmul_group(targets, nullptr, n, pool);
    for (size_t j = 0; j < batch.size(); ++j)
      if (const float* b = bias_row(L.down_exps_bias, batch[j])) add_rows(&y_[j * n * E], b, n, E);
    for (size_t j = 0; j < batch.size(); ++j) {
      const int64_t b = first_[batch[j]];
      for (int64_t i = 0; i < n; ++i)
        ops::axpy_f32(slots_[b + i].second, &y_[(j * n + i) * E], out + slots_[b + i].first * E, E);
    }
    e0 = e1;
  }
  if (!L.shared_gate.empty()) add_shared_expert(c, L, xn, n_tokens, out, pool);
}

void MoeFfn::add_shared_expert(const ModelConfig& c, const LayerWeights& L, const float* xn, int64_t n_tokens,
                               float* out, ThreadPool* pool) {
  const int64_t E = c.n_embd, S = c.n_ff_shared;
  gate_.resize(static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(gate_.size()), n_tokens * S)));
  up_.resize(gate_.size());
  y_.resize(static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(y_.size()), n_tokens * E)));
  const ops::MatmulTarget gate_up[] = {{&L.shared_gate, gate_.data()}, {&L.shared_up, up_.data()}};
  ops::matmul_group(gate_up, xn, n_tokens, pool);
  ffn_activation(c, gate_.data(), up_.data(), n_tokens, S);
  ops::matmul(L.shared_down, gate_.data(), n_tokens, y_.data(), pool);
  const auto* w = static_cast<const float*>(L.shared_gate_inp.data);
  for (int64_t t = 0; t < n_tokens; ++t) {
    double logit = 0;
    for (int64_t i = 0; i < E; ++i) logit += static_cast<double>(w[i]) * xn[t * E + i];
    const float scale = static_cast<float>(1.0 / (1.0 + std::exp(-logit)));
    ops::axpy_f32(scale, &y_[t * E], out + t * E, E);
  }
}

}  // namespace triattn
