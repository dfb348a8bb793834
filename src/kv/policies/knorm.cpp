// KNorm (Devoto et al., 2024, "A simple and effective L2 norm-based strategy for KV cache
// compression"): keys with a small L2 norm draw more attention, so the keys with the
// smallest norms are kept. The norm of the stored post-RoPE key equals the pre-RoPE one
// (RoPE rotates pairs), so no observation is needed.
#include <cmath>

#include "kv/policies/policies.h"
#include "kv/policies/recent_queries.h"
#include "kv/policies/scored_policy.h"

namespace triattn {
namespace {

class KNormPolicy final : public ScoredPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<KNormPolicy>(*this); }
  using ScoredPolicy::ScoredPolicy;
  std::string_view name() const override { return "knorm"; }

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    const int d = cache.shape().head_dim;
    const std::vector<double> keys = stream_keys(cache, layer, kv_head);
    for (size_t i = 0; i < split.candidates.size(); ++i) {
      const double* k = &keys[static_cast<size_t>(split.candidates[i]) * d];
      double ss = 0;
      for (int j = 0; j < d; ++j) ss += k[j] * k[j];
      scores[i] = static_cast<float>(-std::sqrt(ss));  // smaller norm, higher score
    }
  }
};

}  // namespace

std::unique_ptr<KvPolicy> make_knorm_policy(const PolicyParams& params, const AttentionGeometry&) {
  return std::make_unique<KNormPolicy>(params);
}

}  // namespace triattn
