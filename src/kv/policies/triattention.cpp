// TriAttention (DESIGN §1): at each pruning event every candidate key is scored by the
// calibrated query statistics (kv/triattention_score.h), z-scored per query head over the
// candidates, max-pooled over the GQA group, aggregated across the streams that share a keep
// set (pruning mode) and cut back to the budget by the shared keep-set rules.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policies/policies.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

class TriAttentionPolicy final : public KvPolicy {
 public:
  TriAttentionPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : params_(params), geom_(geometry), scorer_(params.stats, geometry, params.max_offset_log2) {
    validate_budget_params(params);
  }

  std::string_view name() const override { return "triattention"; }
  // A chunk of at most β tokens appended to a cache of at most B stays within B + β.
  int64_t max_append() const override { return params_.divide_length; }
  int64_t memory_bound(const SequenceInfo& seq) const override {
    return effective_budget(params_, seq) + params_.divide_length;
  }

  std::optional<KeepPlan> plan_before_append(const KvCache& cache, int64_t n_new,
                                             const SequenceInfo& seq, ThreadPool* pool) override {
    if (!prune_due(cache, n_new, params_, seq)) return std::nullopt;
    const KeepRules rules = keep_rules(params_, seq);
    scorer_.prepare(cache.n_processed());
    const auto& sh = cache.shape();
    const int L = sh.n_layers, H = sh.n_kv_heads;

    // Group-max z-scores of every stream's candidates; streams are independent, so they are
    // spread over the pool (each thread scores with its own scratch).
    splits_.resize(static_cast<size_t>(L) * H);
    zmax_.resize(splits_.size());
    raw_.resize(pool ? static_cast<size_t>(pool->size()) : 1);
    parallel_for_dynamic(pool, static_cast<int64_t>(L) * H, [&](int64_t b, int64_t e, int thread) {
      std::vector<float>& raw = raw_[static_cast<size_t>(thread)];
      for (int64_t i = b; i < e; ++i) {
        const int l = static_cast<int>(i / H), h = static_cast<int>(i % H);
        const int s = cache.stream_index(l, h);
        splits_[s] = split_stream(positions(cache, l, h), rules);
        const auto& cand = splits_[s].candidates;
        raw.resize(cand.size() * scorer_.group());
        scorer_.score_stream(cache, l, h, cand, raw.data());
        zmax_[s].resize(cand.size());
        zscore_group_max(raw.data(), scorer_.group(), static_cast<int64_t>(cand.size()), zmax_[s].data());
      }
    });

    KeepPlan plan;
    plan.keep.resize(splits_.size());
    switch (params_.mode) {
      case PruningMode::PerLayerPerHead:
        for (int l = 0; l < L; ++l)
          for (int h = 0; h < H; ++h) {
            const int s = cache.stream_index(l, h);
            plan.keep[s] = select_keep(splits_[s], zmax_[s], positions(cache, l, h), rules.budget);
          }
        break;
      case PruningMode::PerHead:  // one set per KV-head index: mean over layers
        for (int h = 0; h < H; ++h) {
          std::vector<int> members;
          for (int l = 0; l < L; ++l) members.push_back(cache.stream_index(l, h));
          select_shared(cache, members, /*run=*/1, rules, plan);
        }
        break;
      case PruningMode::PerLayer:  // one set per layer: max over that layer's heads
        for (int l = 0; l < L; ++l) {
          std::vector<int> members;
          for (int h = 0; h < H; ++h) members.push_back(cache.stream_index(l, h));
          select_shared(cache, members, /*run=*/H, rules, plan);
        }
        break;
      case PruningMode::Global: {  // mean over layers of the max over heads
        std::vector<int> members;
        for (int l = 0; l < L; ++l)
          for (int h = 0; h < H; ++h) members.push_back(cache.stream_index(l, h));
        select_shared(cache, members, /*run=*/H, rules, plan);
        break;
      }
    }
    if (!plan_evicts(cache, plan)) return std::nullopt;
    return plan;
  }

 private:
  static std::span<const int32_t> positions(const KvCache& cache, int l, int h) {
    return {cache.positions(l, h), static_cast<size_t>(cache.size(l, h))};
  }

  // One keep set for the streams in `members` (which must hold the same tokens). A
  // candidate's score is the max of its group-max z-scores over each consecutive run of `run`
  // members (the heads of one layer), then the mean over the runs (the layers).
  void select_shared(const KvCache& cache, const std::vector<int>& members, int run,
                     const KeepRules& rules, KeepPlan& plan) {
    const int first = members.front();
    const int fl = first / cache.shape().n_kv_heads, fh = first % cache.shape().n_kv_heads;
    const auto pos0 = positions(cache, fl, fh);
    for (int s : members) {
      const auto pos = positions(cache, s / cache.shape().n_kv_heads, s % cache.shape().n_kv_heads);
      if (pos.size() != pos0.size() || !std::equal(pos.begin(), pos.end(), pos0.begin()))
        fail("triattention: pruning mode ", pruning_mode_name(params_.mode),
             " shares one keep set across streams, but the cache's streams hold different tokens "
             "(was the cache pruned with another mode?)");
    }
    const size_t n = zmax_[first].size();
    const int n_runs = static_cast<int>(members.size()) / run;
    agg_.assign(n, 0.0f);
    std::vector<float> run_max(n);
    for (int r = 0; r < n_runs; ++r) {
      std::fill(run_max.begin(), run_max.end(), -std::numeric_limits<float>::infinity());
      for (int m = r * run; m < (r + 1) * run; ++m) {
        const auto& z = zmax_[members[m]];
        for (size_t i = 0; i < n; ++i) run_max[i] = std::max(run_max[i], z[i]);
      }
      for (size_t i = 0; i < n; ++i) agg_[i] += run_max[i];
    }
    for (size_t i = 0; i < n; ++i) agg_[i] /= static_cast<float>(n_runs);
    const auto keep = select_keep(splits_[first], agg_, pos0, rules.budget);
    for (int s : members) plan.keep[s] = keep;
  }

  PolicyParams params_;
  AttentionGeometry geom_;
  TriAttentionScorer scorer_;
  // Scratch reused between events (one policy per sequence).
  std::vector<StreamSplit> splits_;
  std::vector<std::vector<float>> zmax_;
  std::vector<std::vector<float>> raw_;  // scoring scratch, one per thread
  std::vector<float> agg_;
};

}  // namespace

std::unique_ptr<KvPolicy> make_triattention_policy(const PolicyParams& params,
                                                   const AttentionGeometry& geometry) {
  if (!params.stats)
    fail("KV policy 'triattention' needs calibration statistics: run `triattn calibrate -m MODEL "
         "--input FILE -o STATS` once for this model, then pass --stats STATS");
  return std::make_unique<TriAttentionPolicy>(params, geometry);
}

}  // namespace triattn
