// TriAttention (DESIGN §1): at each pruning event every candidate key is scored by the
// calibrated query statistics (kv/triattention_score.h), z-scored per query head over the
// candidates and max-pooled over the GQA group; the shared rules (scored_policy.h) then
// aggregate across the streams that share a keep set (pruning mode) and cut back to the
// budget.
#include "core/error.h"
#include "kv/policies/policies.h"
#include "kv/policies/scored_policy.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

class TriAttentionPolicy final : public ScoredPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<TriAttentionPolicy>(*this); }
  TriAttentionPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : ScoredPolicy(params), scorer_(params.stats, geometry, params.max_offset_log2) {}

  std::string_view name() const override { return "triattention"; }

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

std::unique_ptr<KvPolicy> make_triattention_policy(const PolicyParams& params,
                                                   const AttentionGeometry& geometry) {
  if (!params.stats)
    fail("KV policy 'triattention' needs calibration statistics: run `triattn calibrate -m MODEL "
         "--input FILE -o STATS` once for this model, then pass --stats STATS");
  return std::make_unique<TriAttentionPolicy>(params, geometry);
}

}  // namespace triattn
