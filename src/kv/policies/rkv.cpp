// R-KV (Cai et al., 2025, "R-KV: Redundancy-aware KV Cache Compression for Reasoning
// Models"): keep keys that are important and not redundant,
//   score = λ · importance − (1 − λ) · redundancy,   λ = --rkv-lambda (default 0.1).
// importance: SnapKV's (recent_queries.h: softmax weights of the last --obs-window queries,
//   max-pooled over --pool-kernel candidates, per query head), averaged instead of summed over
//   the w queries and the G heads of the group, so that, as in R-KV, it is a distribution
//   over keys on the same scale as the redundancy (for SnapKV alone the scale is immaterial).
// redundancy, over all n rows of the stream (R-KV's cal_similarity, "retain last"):
//   k̂_r = k_r / (‖k_r‖ + 1e-8);  S[r][c] = k̂_r · k̂_c, S[r][r] = 0;
//   for each r with some c having S[r][c] > --rkv-threshold (default 0.5), the largest such c
//   (the most recent similar key) has S[r][c] set to 0;
//   redundancy_r = softmax over r of (1/n) Σ_c S[r][c].
// Where R-KV's code zeroes column 0 of a row with no similar key at all (an artefact of its
// argmax over an all-zero mask), nothing is zeroed here. The published defaults differ
// (window 8, λ 0.07 in one release, 0.1 in the TriAttention comparison): λ 0.1 and w 32 follow
// the comparison this project reproduces. Cost: O(n² · head_dim) per stream and event.
#include <algorithm>
#include <cmath>

#include "kv/policies/policies.h"
#include "kv/policies/recent_query_policy.h"

namespace triattn {
namespace {

// redundancy_r for every row of the stream (see above).
std::vector<double> redundancy(const KvCache& cache, int layer, int kv_head, double threshold) {
  const int d = cache.shape().head_dim;
  const int64_t n = cache.size(layer, kv_head);
  std::vector<double> k = stream_keys(cache, layer, kv_head);
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int i = 0; i < d; ++i) ss += k[r * d + i] * k[r * d + i];
    const double inv = 1.0 / (std::sqrt(ss) + 1e-8);
    for (int i = 0; i < d; ++i) k[r * d + i] *= inv;
  }
  std::vector<double> raw(static_cast<size_t>(n)), sim(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    int64_t last_similar = -1;
    for (int64_t c = 0; c < n; ++c) {
      double dot = 0;
      if (c != r)
        for (int i = 0; i < d; ++i) dot += k[r * d + i] * k[c * d + i];
      sim[c] = dot;
      if (dot > threshold) last_similar = c;
    }
    if (last_similar >= 0) sim[last_similar] = 0;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += sim[c];
    raw[r] = sum / static_cast<double>(n);
  }
  const double mx = n ? *std::max_element(raw.begin(), raw.end()) : 0.0;
  double z = 0;
  for (double& x : raw) z += (x = std::exp(x - mx));
  for (double& x : raw) x /= z;
  return raw;
}

class RKvPolicy final : public RecentQueryPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<RKvPolicy>(*this); }
  RKvPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : RecentQueryPolicy(params, g, params.obs_window) {}

  std::string_view name() const override { return "rkv"; }

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    const size_t n_cand = split.candidates.size();
    std::vector<double> imp(n_cand);
    importance(cache, layer, kv_head, split, params_.pool_kernel, imp.data());
    const int G = queries_.group();
    const int64_t m = queries_.count(layer, kv_head * G);
    const double norm = m > 0 ? 1.0 / (static_cast<double>(m) * G) : 0.0;
    const std::vector<double> red = redundancy(cache, layer, kv_head, params_.rkv_threshold);
    const double lambda = params_.rkv_lambda;
    for (size_t i = 0; i < n_cand; ++i)
      scores[i] = static_cast<float>(lambda * imp[i] * norm - (1.0 - lambda) * red[split.candidates[i]]);
  }
};

}  // namespace

std::unique_ptr<KvPolicy> make_rkv_policy(const PolicyParams& params, const AttentionGeometry& geometry) {
  return std::make_unique<RKvPolicy>(params, geometry);
}

}  // namespace triattn
