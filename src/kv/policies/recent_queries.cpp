#include "kv/policies/recent_queries.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn {

RecentQueries::RecentQueries(const AttentionGeometry& g, int64_t capacity)
    : n_heads_(g.n_heads),
      group_(g.n_kv_heads > 0 ? g.n_heads / g.n_kv_heads : 1),
      d_(g.head_dim),
      capacity_(capacity),
      rings_(static_cast<size_t>(g.n_layers) * g.n_heads) {
  if (capacity < 1) fail("recent queries: capacity must be at least 1, got ", capacity);
}

const RecentQueries::Ring& RecentQueries::ring(int layer, int q_head) const {
  return rings_[static_cast<size_t>(layer) * n_heads_ + q_head];
}

void RecentQueries::push(int layer, int q_head, int32_t pos, const float* q) {
  if (layer < 0 || q_head < 0 || q_head >= n_heads_ || static_cast<size_t>(layer) * n_heads_ + q_head >= rings_.size())
    fail("recent queries: layer ", layer, " query head ", q_head, " outside the model");
  Ring& r = rings_[static_cast<size_t>(layer) * n_heads_ + q_head];
  const int64_t slot = r.next % capacity_;
  if (static_cast<int64_t>(r.pos.size()) <= slot) {  // still growing to capacity
    r.q.resize(static_cast<size_t>(slot + 1) * d_);
    r.pos.resize(static_cast<size_t>(slot + 1));
  }
  std::memcpy(&r.q[static_cast<size_t>(slot) * d_], q, sizeof(float) * d_);
  r.pos[slot] = pos;
  ++r.next;
}

int64_t RecentQueries::count(int layer, int q_head) const { return std::min(ring(layer, q_head).next, capacity_); }

const float* RecentQueries::query(int layer, int q_head, int64_t i) const {
  const Ring& r = ring(layer, q_head);
  const int64_t slot = (r.next - count(layer, q_head) + i) % capacity_;
  return &r.q[static_cast<size_t>(slot) * d_];
}

int32_t RecentQueries::position(int layer, int q_head, int64_t i) const {
  const Ring& r = ring(layer, q_head);
  return r.pos[(r.next - count(layer, q_head) + i) % capacity_];
}

std::vector<double> stream_keys(const KvCache& cache, int layer, int head) {
  const int d = cache.shape().head_dim;
  const int64_t n = cache.size(layer, head);
  std::vector<double> k(static_cast<size_t>(n) * d);
  const auto* rows = static_cast<const uint8_t*>(cache.keys(layer, head));
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t r = 0; r < n; ++r) {
    ops::dequantize_row(cache.shape().type, rows + r * cache.row_bytes(), row.data(), d);
    std::copy(row.begin(), row.end(), k.begin() + r * d);
  }
  return k;
}

std::vector<double> max_pool_centered(const std::vector<double>& x, int64_t kernel) {
  const int64_t n = static_cast<int64_t>(x.size()), r = kernel / 2;
  std::vector<double> out(x.size());
  // Monotone deque of indices: the window max in O(n) whatever the kernel.
  std::deque<int64_t> dq;
  int64_t next = 0;  // first index not yet pushed
  for (int64_t i = 0; i < n; ++i) {
    for (; next < n && next <= i + r; ++next) {
      while (!dq.empty() && x[dq.back()] <= x[next]) dq.pop_back();
      dq.push_back(next);
    }
    while (dq.front() < i - r) dq.pop_front();
    out[i] = x[dq.front()];
  }
  return out;
}

void recent_attention_importance(const KvCache& cache, int layer, int kv_head, const RecentQueries& queries,
                                 const StreamSplit& split, double scale, int64_t kernel, double* out) {
  const int d = queries.head_dim(), G = queries.group();
  const int64_t n = cache.size(layer, kv_head);
  const size_t n_cand = split.candidates.size();
  std::fill(out, out + n_cand, 0.0);
  if (n == 0 || n_cand == 0) return;
  const std::vector<double> keys = stream_keys(cache, layer, kv_head);
  const int32_t* pos = cache.positions(layer, kv_head);
  std::vector<double> logit(static_cast<size_t>(n)), summed(static_cast<size_t>(n)), cand(n_cand);
  for (int g = 0; g < G; ++g) {
    const int h = kv_head * G + g;
    std::fill(summed.begin(), summed.end(), 0.0);
    for (int64_t j = 0; j < queries.count(layer, h); ++j) {
      const float* q = queries.query(layer, h, j);
      const int32_t qpos = queries.position(layer, h, j);
      double mx = -INFINITY;
      for (int64_t r = 0; r < n; ++r) {
        if (pos[r] > qpos) continue;  // causal: a query never saw later keys
        double dot = 0;
        for (int i = 0; i < d; ++i) dot += static_cast<double>(q[i]) * keys[static_cast<size_t>(r) * d + i];
        logit[r] = scale * dot;
        mx = std::max(mx, logit[r]);
      }
      if (mx == -INFINITY) continue;  // no key visible (cannot happen for a query in the cache)
      double z = 0;
      for (int64_t r = 0; r < n; ++r)
        if (pos[r] <= qpos) z += std::exp(logit[r] - mx);
      for (int64_t r = 0; r < n; ++r)
        if (pos[r] <= qpos) summed[r] += std::exp(logit[r] - mx) / z;
    }
    for (size_t i = 0; i < n_cand; ++i) cand[i] = summed[split.candidates[i]];
    const std::vector<double> pooled = max_pool_centered(cand, kernel);
    for (size_t i = 0; i < n_cand; ++i) out[i] += pooled[i];
  }
}

double attention_scale(const AttentionGeometry& g) {
  const double m = g.attn_factor;
  return m * m / std::sqrt(static_cast<double>(g.head_dim));
}

}  // namespace triattn
