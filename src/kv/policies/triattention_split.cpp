// TriAttention, split (docs/results.md "Needle retrieval" has the measurements).
//
// The paper's score S predicts what the MEAN calibrated query will give a key. On a long
// prompt whose answer hangs on one line, the question at the end is a rare query: S ranks the
// answer's keys near the middle in the one (layer, KV head) that retrieves, and the paper's
// keep set, shared across layers, averages that stream with the ones that do not retrieve.
// This policy keeps the paper's ranking as it is and adds a per-stream rescue of the keys that
// a query straying from the mean could single out:
//   base(l, h)  = the paper's per_head ranking: z-score over the candidates of S (trig + norm
//                 term, kv/triattention_score.h), max over the GQA group, mean over the layers
//                 that hold the token (by position: once rescues differ, streams hold
//                 different tokens);
//   spread      = fs²·sqrt(Σ_f v_h[f]|K_f|²), v_h[f] = max(0, q_abs_mean² − |q_mean|²): a
//                 lower bound on the band's query variance from what a stats file holds, so
//                 how far the logit of a query off the mean can reach (ScoreTerms::Spread);
//   rescue(l,h) = max over the group of z(spread) where it is an outlier (above 2), for the
//                 prompt's keys only, max-pooled over --pool-kernel neighbouring candidates
//                 (so a kept key keeps its line), of which at most B/4 candidates, the
//                 highest, stay;
//   score       = max(base, rescue), selected per (layer, KV head).
// Where no prompt key is a spread outlier it ranks as the paper's per_head mode does;
// the model's own generated keys are ranked by the paper's score alone (the regime its
// calibration measured: a rescue there cost stories260K 0.25% perplexity at B = 64 over 25
// texts). The cap bounds what the rescue may take from the paper's ranking (pooled, uncapped,
// it cost 0.8%). Nothing is observed at run time: the cost is two scoring passes per event.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/recent_queries.h"
#include "kv/policies/scored_policy.h"
#include "kv/policies/shared_knobs.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

// A spread z-score above this is an outlier: a key an atypical query can single out.
constexpr float kSpreadOutlierZ = 2.0f;
// The rescue keeps at most B / kRescueShare candidates per stream, pooling included.
constexpr int64_t kRescueShare = 4;
constexpr double kNone = -std::numeric_limits<double>::infinity();

// The split policy does its own sharing across layers; its selection is per stream whatever
// --pruning-mode says (the registry marks the mode as not applying).
PolicyParams per_stream(PolicyParams p) {
  p.mode = PruningMode::PerLayerPerHead;
  return p;
}

// Keeps the `k` largest finite values of x (ties at the k-th value stay), the rest to kNone.
void keep_top(std::vector<double>& x, int64_t k) {
  std::vector<double> finite;
  for (double v : x)
    if (v != kNone) finite.push_back(v);
  if (static_cast<int64_t>(finite.size()) <= k) return;
  std::nth_element(finite.begin(), finite.begin() + (k - 1), finite.end(), std::greater<double>());
  const double cut = finite[k - 1];
  for (double& v : x)
    if (v < cut) v = kNone;
}

class TriAttentionSplitPolicy final
    : public PolicyBase<TriAttentionSplitPolicy, ScoredPolicy, describe_triattention_split> {
 public:
  TriAttentionSplitPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : PolicyBase(per_stream(params)),
        paper_(params.stats, geometry, params.max_offset_log2, ScoreTerms::Both),
        spread_(params.stats, geometry, params.max_offset_log2, ScoreTerms::Spread) {}

 protected:
  void begin_event(const KvCache& cache, int n_threads) override {
    paper_.prepare(cache.n_processed());
    spread_.prepare(cache.n_processed());
    scratch_.resize(static_cast<size_t>(n_threads));
    outliers_.resize(static_cast<size_t>(cache.n_streams()));
  }
  // scores: the stream's group max of z(S); outliers_: its group max of the z(spread) outliers.
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int thread) override {
    Scratch& s = scratch_[static_cast<size_t>(thread)];
    const auto& cand = split.candidates;
    const int G = paper_.group();
    const int64_t n = static_cast<int64_t>(cand.size());
    s.paper.resize(cand.size() * G);
    s.spread.resize(cand.size() * G);
    paper_.score_stream(cache, layer, kv_head, cand, s.paper.data());
    spread_.score_stream(cache, layer, kv_head, cand, s.spread.data());
    zscore_group_max(s.paper.data(), G, n, scores);
    zscore_rows(s.spread.data(), G, n);
    auto& out = outliers_[cache.stream_index(layer, kv_head)];
    out.assign(cand.size(), kNone);
    for (int j = 0; j < G; ++j)
      for (int64_t i = 0; i < n; ++i) {
        const float z = s.spread[j * n + i];
        if (z > kSpreadOutlierZ) out[i] = std::max(out[i], static_cast<double>(z));
      }
  }
  void combine_streams(const KvCache& cache, const SequenceInfo& seq, const std::vector<StreamSplit>& splits,
                       std::vector<std::vector<float>>& scores) override {
    const int L = cache.shape().n_layers, H = cache.shape().n_kv_heads;
    const size_t P = static_cast<size_t>(cache.n_processed());
    sum_.resize(P);
    count_.resize(P);
    for (int h = 0; h < H; ++h) {
      std::fill(sum_.begin(), sum_.end(), 0.0);
      std::fill(count_.begin(), count_.end(), 0);
      for (int l = 0; l < L; ++l) {
        if (cache.uncompressed(l)) continue;  // not pruned, not scored
        const int st = cache.stream_index(l, h);
        const int32_t* pos = cache.positions(l, h);
        const auto& cand = splits[st].candidates;
        for (size_t i = 0; i < cand.size(); ++i) {
          sum_[pos[cand[i]]] += scores[st][i];
          ++count_[pos[cand[i]]];
        }
      }
      for (int l = 0; l < L; ++l) {
        if (cache.uncompressed(l)) continue;
        const int st = cache.stream_index(l, h);
        const int32_t* pos = cache.positions(l, h);
        const auto& cand = splits[st].candidates;
        // Only the prompt's keys are rescued, and pooling does not carry a rescue past it.
        std::vector<double>& outliers = outliers_[st];
        for (size_t i = 0; i < cand.size(); ++i)
          if (pos[cand[i]] >= seq.prompt_len) outliers[i] = kNone;
        std::vector<double> rescue = max_pool_centered(outliers, params_.pool_kernel);
        for (size_t i = 0; i < cand.size(); ++i)
          if (pos[cand[i]] >= seq.prompt_len) rescue[i] = kNone;
        keep_top(rescue, std::max<int64_t>(1, params_.budget / kRescueShare));
        for (size_t i = 0; i < cand.size(); ++i) {
          const size_t p = static_cast<size_t>(pos[cand[i]]);
          scores[st][i] = static_cast<float>(std::max(sum_[p] / count_[p], rescue[i]));
        }
      }
    }
  }

 private:
  struct Scratch {
    std::vector<float> paper, spread;  // [G][n] raw, then z-scored
  };
  TriAttentionScorer paper_, spread_;
  std::vector<Scratch> scratch_;                // one per thread
  std::vector<std::vector<double>> outliers_;   // [stream][candidate]
  std::vector<double> sum_;                     // [position]: Σ over layers of the base z
  std::vector<int> count_;                      // [position]: layers holding it as a candidate
};

}  // namespace

const PolicyDescription& describe_triattention_split() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "triattention-split";
    i.description =
        "TriAttention's ranking plus, per (layer, KV head), a rescue of the prompt's keys that a query "
        "straying from the mean could single out (spread-term outliers, max-pooled, at most B/4): keeps what "
        "a long prompt's question will ask for (needs --stats)";
    i.needs_stats = true;  // make_kv_policy refuses to build it without them
    i.prunes = true;
    i.mode_applies = false;  // it shares the paper's ranking across layers itself, then selects per stream
    i.params = {pool_kernel_knob()};
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<TriAttentionSplitPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
