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
#include "kv/policies/policy_base.h"
#include "kv/policies/recent_query_policy.h"
#include "kv/policies/shared_knobs.h"

namespace triattn {
namespace {

class SnapKvPolicy final : public PolicyBase<SnapKvPolicy, RecentQueryPolicy, describe_snapkv> {
 public:
  SnapKvPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : PolicyBase(params, g, params.obs_window) {}

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    std::vector<double> imp(split.candidates.size());
    importance(cache, layer, kv_head, split, params_.pool_kernel, imp.data());
    for (size_t i = 0; i < imp.size(); ++i) scores[i] = static_cast<float>(imp[i]);
  }
};

}  // namespace

const PolicyDescription& describe_snapkv() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "snapkv";
    i.description =
        "SnapKV: keeps the keys the last w queries attend to, their weights summed, max-pooled over "
        "neighbouring keys and summed over the group";
    i.prunes = true;
    i.needs = kNeedQueries;
    i.params = {obs_window_knob(), pool_kernel_knob()};
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<SnapKvPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
