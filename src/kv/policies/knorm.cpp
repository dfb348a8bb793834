// KNorm (Devoto et al., 2024, "A simple and effective L2 norm-based strategy for KV cache
// compression"): keys with a small L2 norm draw more attention, so the keys with the
// smallest norms are kept. The norm of the stored post-RoPE key equals the pre-RoPE one
// (RoPE rotates pairs), so no observation is needed.
#include <cmath>

#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/recent_queries.h"
#include "kv/policies/scored_policy.h"

namespace triattn {
namespace {

class KNormPolicy final : public PolicyBase<KNormPolicy, ScoredPolicy, describe_knorm> {
 public:
  using PolicyBase::PolicyBase;

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

const PolicyDescription& describe_knorm() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "knorm";
    i.description = "KNorm: keeps the keys with the smallest L2 norm";
    i.prunes = true;
    i.make = [](const PolicyParams& p, const AttentionGeometry&) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<KNormPolicy>(p);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
