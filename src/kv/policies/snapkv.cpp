// SnapKV (Li et al., 2024): the keys the last w queries (--obs-window, default 32) attend to,
// their softmax weights summed over those queries, max-pooled over --pool-kernel (default 7)
// neighbouring candidates so that a kept key brings its context along, and summed over the
// query heads of the GQA group (recent_queries.h says how the weights are recomputed).
//
// Published SnapKV compresses once, after the prompt, with the prompt's last w queries; here
// it prunes on the shared B + β trigger, before a prefill chunk or a decode step, with the
// w queries processed last. Chunks hold at most β tokens (max_append), so the recent queries
// of a long prompt are those of its latest chunk; w > β simply reaches into earlier chunks.
#include "kv/policies/policies.h"
#include "kv/policies/recent_query_policy.h"

namespace triattn {
namespace {

class SnapKvPolicy final : public RecentQueryPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<SnapKvPolicy>(*this); }
  SnapKvPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : RecentQueryPolicy(params, g, params.obs_window) {}

  std::string_view name() const override { return "snapkv"; }

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    std::vector<double> imp(split.candidates.size());
    importance(cache, layer, kv_head, split, params_.pool_kernel, imp.data());
    for (size_t i = 0; i < imp.size(); ++i) scores[i] = static_cast<float>(imp[i]);
  }
};

}  // namespace

std::unique_ptr<KvPolicy> make_snapkv_policy(const PolicyParams& params, const AttentionGeometry& geometry) {
  return std::make_unique<SnapKvPolicy>(params, geometry);
}

}  // namespace triattn
