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

#include "core/error.h"
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/recent_query_policy.h"
#include "kv/policies/shared_knobs.h"
#include "kv/policy_knob.h"

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

PolicyKnob rkv_lambda_knob() {
  PolicyKnob k = real_knob("--rkv-lambda", &PolicyParams::rkv_lambda, 0, 1,
                           "lambda: the weight of importance against redundancy");
  k.check = [](const PolicyParams& p, std::string_view) {
    if (!std::isfinite(p.rkv_lambda) || p.rkv_lambda < 0 || p.rkv_lambda > 1)
      fail("--rkv-lambda must be between 0 (redundancy only) and 1 (importance only), got ", real_text(p.rkv_lambda));
  };
  return k;
}

PolicyKnob rkv_threshold_knob() {
  PolicyKnob k = real_knob("--rkv-threshold", &PolicyParams::rkv_threshold, -1, 1,
                           "cosine similarity above which two keys count as redundant");
  k.check = [](const PolicyParams& p, std::string_view) {
    if (!std::isfinite(p.rkv_threshold) || p.rkv_threshold < -1 || p.rkv_threshold > 1)
      fail("--rkv-threshold is a cosine similarity: it must be between -1 and 1, got ", real_text(p.rkv_threshold));
  };
  return k;
}

class RKvPolicy final : public PolicyBase<RKvPolicy, RecentQueryPolicy, describe_rkv> {
 public:
  RKvPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : PolicyBase(params, g, params.obs_window) {}

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

const PolicyDescription& describe_rkv() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "rkv";
    i.description =
        "R-KV: lambda * importance (SnapKV's, averaged) - (1 - lambda) * redundancy (keys' cosine similarity "
        "to the other keys)";
    i.prunes = true;
    i.needs = kNeedQueries;
    i.params = {obs_window_knob(), pool_kernel_knob(), rkv_lambda_knob(), rkv_threshold_knob()};
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<RKvPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
