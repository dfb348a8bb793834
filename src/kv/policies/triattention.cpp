// TriAttention (docs/design.md, "Key score"): at each pruning event every candidate key is scored by the
// calibrated query statistics (kv/triattention_score.h), z-scored per query head over the
// candidates and max-pooled over the GQA group; the shared rules (scored_policy.h) then
// aggregate across the streams that share a keep set (pruning mode) and cut back to the
// budget.
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/scored_policy.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

class TriAttentionPolicy final : public PolicyBase<TriAttentionPolicy, ScoredPolicy, describe_triattention> {
 public:
  TriAttentionPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : PolicyBase(params), scorer_(params.stats, geometry, params.max_offset_log2) {}

 protected:
  void begin_event(const KvCache& cache, int n_threads) override {
    scorer_.prepare(cache.n_processed());
    raw_.resize(static_cast<size_t>(n_threads));
  }
  // Group-max z-scores of the stream's candidates (each thread scores with its own scratch).
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int thread) override {
    std::vector<float>& raw = raw_[static_cast<size_t>(thread)];
    const auto& cand = split.candidates;
    raw.resize(cand.size() * scorer_.group());
    scorer_.score_stream(cache, layer, kv_head, cand, raw.data());
    zscore_group_max(raw.data(), scorer_.group(), static_cast<int64_t>(cand.size()), scores);
  }

 private:
  TriAttentionScorer scorer_;
  std::vector<std::vector<float>> raw_;  // scoring scratch, one per thread
};

}  // namespace

const PolicyDescription& describe_triattention() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "triattention";
    i.description =
        "TriAttention: keeps the keys that calibrated query statistics predict future queries will attend "
        "to (needs --stats)";
    i.needs_stats = true;  // make_kv_policy refuses to build it without them
    i.prunes = true;
    i.default_mode = PruningMode::PerHead;  // as the official implementation
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<TriAttentionPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
