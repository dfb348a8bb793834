#include "kv/policies/scored_policy.h"

namespace triattn {

BudgetedPolicy::BudgetedPolicy(const PolicyParams& params) : params_(params) { validate_budget_params(params); }

int64_t BudgetedPolicy::memory_bound(const SequenceInfo& seq) const {
  return effective_budget(params_, seq) + params_.divide_length;
}

std::optional<KeepPlan> ScoredPolicy::plan_before_append(const KvCache& cache, int64_t n_new, const SequenceInfo& seq,
                                                         ThreadPool* pool) {
  if (!prune_due(cache, n_new, params_, seq)) return std::nullopt;
  const KeepRules rules = keep_rules(params_, seq);
  const int L = cache.shape().n_layers, H = cache.shape().n_kv_heads;
  begin_event(cache, pool ? pool->size() : 1);
  splits_.resize(static_cast<size_t>(L) * H);
  scores_.resize(splits_.size());
  parallel_for_dynamic(pool, static_cast<int64_t>(L) * H, [&](int64_t b, int64_t e, int thread) {
    for (int64_t i = b; i < e; ++i) {
      const int l = static_cast<int>(i / H), h = static_cast<int>(i % H);
      const int s = cache.stream_index(l, h);
      if (cache.uncompressed(l)) {  // bounded by its window; select_by_mode keeps it whole
        splits_[s] = StreamSplit{};
        scores_[s].clear();
        continue;
      }
      splits_[s] = split_stream(stream_positions(cache, l, h), rules);
      scores_[s].assign(splits_[s].candidates.size(), 0.0f);
      score_stream(cache, l, h, splits_[s], scores_[s].data(), thread);
    }
  });
  combine_streams(cache, seq, splits_, scores_);
  KeepPlan plan = select_by_mode(cache, mode(), rules, splits_, scores_, name());
  if (!plan_evicts(cache, plan)) return std::nullopt;
  on_plan(plan);
  return plan;
}

}  // namespace triattn
