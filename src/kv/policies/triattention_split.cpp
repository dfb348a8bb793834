// TriAttention, split (issue 20; docs/results.md "Needle retrieval" has the measurements).
//
// The paper's score adds two terms in logit units: the trig term (what the MEAN calibrated
// query will give a key, a function of its distance) and the norm term (what deviations from
// the mean could add). On a long prompt whose answer hangs on one line, the line's keys are
// ranked near the middle by the trig term, and the trig term's swing with distance is so much
// larger than the norm term's that the sum is the trig term: the retrieval heads' keys that a
// rare query (the question at the end) will look for are evicted. This policy ranks the two
// separately and keeps a key when either ranks it high:
//   zT_h = z-score over the candidates of the trig term (kv/triattention_score.h, Trig),
//   zV_h = z-score of the spread term fs²·sqrt(Σ_f v_h[f]|K_f|²), v_h[f] = E|q_f|² − |E q_f|² as
//          bounded from the stats file (ScoreTerms::Spread): how far the logit of a query that
//          strays from the mean can reach; an L2 form, which ranks the retrieval keys higher than
//          the paper's L1 norm term does,
//   vote_h = max(zT_h, zV_h) where zV_h > 2 (an outlier of the spread), else zT_h: the paper's
//          ranking decides, except for the few keys a query off the mean could single out,
//   score  = maxpool_k( max over the GQA group of vote_h ), pooled over neighbouring candidates
//          (--pool-kernel, default 7) so that a kept key keeps its line.
// Each (layer, KV head) selects on its own by default (per_layer_per_head): a keep set shared
// across layers averages the one layer whose heads retrieve with the layers that do not.
// Nothing is observed at run time: the cost is two scoring passes per pruning event.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kv/policies/policies.h"
#include "kv/policies/recent_queries.h"
#include "kv/policies/scored_policy.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

// The spread term overrides the trig ranking only for its outliers: keys more than this many
// standard deviations above the candidates' mean spread, the few an atypical query can single
// out. Below it the paper's trig ranking decides alone: counting every spread vote cost the
// long-generation regime perplexity on stories260K (docs/results.md, issue 20 section).
constexpr float kSpreadOutlierZ = 2.0f;

// One query head's vote for a key, from its two z-scores.
float spread_or_trig(float z_trig, float z_spread) {
  return z_spread > kSpreadOutlierZ ? std::max(z_trig, z_spread) : z_trig;
}

class TriAttentionSplitPolicy final : public ScoredPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<TriAttentionSplitPolicy>(*this); }
  TriAttentionSplitPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : ScoredPolicy(params),
        trig_(params.stats, geometry, params.max_offset_log2, ScoreTerms::Trig),
        spread_(params.stats, geometry, params.max_offset_log2, ScoreTerms::Spread) {}

  std::string_view name() const override { return "triattention-split"; }

 protected:
  void begin_event(const KvCache& cache, int n_threads) override {
    trig_.prepare(cache.n_processed());
    spread_.prepare(cache.n_processed());
    scratch_.resize(static_cast<size_t>(n_threads));
  }
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int thread) override {
    Scratch& s = scratch_[static_cast<size_t>(thread)];
    const auto& cand = split.candidates;
    const int G = trig_.group();
    const int64_t n = static_cast<int64_t>(cand.size());
    s.trig.resize(cand.size() * G);
    s.spread.resize(cand.size() * G);
    trig_.score_stream(cache, layer, kv_head, cand, s.trig.data());
    spread_.score_stream(cache, layer, kv_head, cand, s.spread.data());
    zscore_rows(s.trig.data(), G, n);
    zscore_rows(s.spread.data(), G, n);
    s.best.assign(cand.size(), -std::numeric_limits<double>::infinity());
    for (int j = 0; j < G; ++j)
      for (int64_t i = 0; i < n; ++i)
        s.best[i] = std::max(s.best[i], static_cast<double>(spread_or_trig(s.trig[j * n + i], s.spread[j * n + i])));
    const std::vector<double> pooled = max_pool_centered(s.best, params_.pool_kernel);
    for (int64_t i = 0; i < n; ++i) scores[i] = static_cast<float>(pooled[i]);
  }

 private:
  struct Scratch {
    std::vector<float> trig, spread;  // [G][n] raw, then z-scored
    std::vector<double> best;         // [n] max over the group and the two terms
  };
  TriAttentionScorer trig_, spread_;
  std::vector<Scratch> scratch_;  // one per thread
};

}  // namespace

std::unique_ptr<KvPolicy> make_triattention_split_policy(const PolicyParams& params,
                                                         const AttentionGeometry& geometry) {
  if (!params.stats)
    fail("KV policy 'triattention-split' needs calibration statistics: run `triattn calibrate -m MODEL "
         "--input FILE -o STATS` once for this model, then pass --stats STATS");
  return std::make_unique<TriAttentionSplitPolicy>(params, geometry);
}

}  // namespace triattn
