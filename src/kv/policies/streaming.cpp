// StreamingLLM (Xiao et al., 2023): the first S tokens ("attention sinks", --sink, default
// 4 for this policy) plus the most recent ones. Here that is the shared keep-set rules with
// recency as the score: sinks, the window and any protected prompt are kept, and the budget's
// remaining slots go to the newest candidates, so the cache holds S sinks + the B − S most
// recent tokens. Every stream holds the same positions, so the pruning mode changes nothing.
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/scored_policy.h"

namespace triattn {
namespace {

class StreamingPolicy final : public PolicyBase<StreamingPolicy, BudgetedPolicy, describe_streaming> {
 public:
  using PolicyBase::PolicyBase;

  std::optional<KeepPlan> plan_before_append(const KvCache& cache, int64_t n_new, const SequenceInfo& seq,
                                             ThreadPool*) override {
    if (!prune_due(cache, n_new, params_, seq)) return std::nullopt;
    const KeepRules rules = keep_rules(params_, seq);
    KeepPlan plan;
    plan.keep.resize(cache.n_streams());
    for (int l = 0; l < cache.shape().n_layers; ++l)
      for (int h = 0; h < cache.shape().n_kv_heads; ++h)
        plan.keep[cache.stream_index(l, h)] =
            cache.uncompressed(l) ? all_rows(cache.size(l, h))  // bounded by its own window
                             : keep_most_recent(split_stream(stream_positions(cache, l, h), rules), rules.budget);
    if (!plan_evicts(cache, plan)) return std::nullopt;
    return plan;
  }
};

}  // namespace

const PolicyDescription& describe_streaming() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "streaming";
    i.description = "StreamingLLM: the first S tokens (attention sinks, --sink) plus the most recent ones";
    i.prunes = true;
    i.mode_applies = false;
    i.default_sink = 4;
    i.make = [](const PolicyParams& p, const AttentionGeometry&) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<StreamingPolicy>(p);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
