// TriAttention (docs/design.md, "Key score"): at each pruning event every candidate key is scored by the
// calibrated query statistics (kv/triattention_score.h), z-scored per query head over the
// candidates and max-pooled over the GQA group; the shared rules (scored_policy.h) then
// aggregate across the streams that share a keep set (pruning mode) and cut back to the
// budget. With --stats auto the statistics are the running mean of the sequence's own pre-RoPE
// queries (kv/online_stats.h), read afresh at each event; until --auto-stats-min tokens were
// seen, the most recent keys are kept instead.
#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/online_stats.h"
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/scored_policy.h"
#include "kv/policy_knob.h"
#include "kv/triattention_score.h"

namespace triattn {
namespace {

class TriAttentionPolicy final : public PolicyBase<TriAttentionPolicy, ScoredPolicy, describe_triattention> {
 public:
  TriAttentionPolicy(const PolicyParams& params, const AttentionGeometry& geometry)
      : PolicyBase(params), geometry_(geometry) {
    if (params.online_stats)
      online_ = params.online_stats(geometry);
    else
      scorer_.emplace(params.stats, geometry, params.max_offset_log2);
  }
  // The copy a forked sequence continues with: its own copy of the statistics so far.
  TriAttentionPolicy(const TriAttentionPolicy& o)
      : PolicyBase(o), geometry_(o.geometry_), scorer_(o.scorer_), online_(o.online_ ? o.online_->clone() : nullptr) {}

  void observe_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override {
    if (online_) online_->add(layer, pos0, n_tokens, q, k);
  }
  const OnlineStats* online_stats() const override { return online_.get(); }

 protected:
  void begin_event(const KvCache& cache, int n_threads) override {
    recent_ = online_ && online_->tokens() < std::max<int64_t>(1, params_.auto_stats_min);
    if (recent_) return;
    if (online_) scorer_.emplace(std::make_shared<const HeadStats>(online_->result()), geometry_, params_.max_offset_log2);
    scorer_->prepare(cache.n_processed());
    raw_.resize(static_cast<size_t>(n_threads));
  }
  // Group-max z-scores of the stream's candidates (each thread scores with its own scratch).
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int thread) override {
    const auto& cand = split.candidates;
    if (recent_) {  // candidates are in token order: the newest scores highest (exact below 2^24 of them)
      for (size_t i = 0; i < cand.size(); ++i) scores[i] = static_cast<float>(i);
      return;
    }
    std::vector<float>& raw = raw_[static_cast<size_t>(thread)];
    raw.resize(cand.size() * scorer_->group());
    scorer_->score_stream(cache, layer, kv_head, cand, raw.data());
    zscore_group_max(raw.data(), scorer_->group(), static_cast<int64_t>(cand.size()), scores);
  }

 private:
  AttentionGeometry geometry_;
  std::optional<TriAttentionScorer> scorer_;  // calibrated: made once; online: at each event
  std::unique_ptr<OnlineStats> online_;      // --stats auto
  bool recent_ = false;                      // this event keeps the most recent keys (too few seen)
  std::vector<std::vector<float>> raw_;      // scoring scratch, one per thread
};

const PolicyKnob& auto_stats_min_knob() {
  static const PolicyKnob knob = [] {
    PolicyKnob k = count_knob("--auto-stats-min", &PolicyParams::auto_stats_min, 0, kMaxBudgetTokens,
                              "with --stats auto: tokens the sequence must have fed before its own statistics score "
                              "keys (until then a pruning keeps the most recent)");
    k.check = [](const PolicyParams& p, std::string_view who) {
      if (p.auto_stats_min < 0 || p.auto_stats_min > kMaxBudgetTokens)
        fail("--auto-stats-min (", who, ") must be between 0 and ", kMaxBudgetTokens, " tokens, got ",
             p.auto_stats_min);
      if (!p.online_stats && p.auto_stats_min != PolicyParams{}.auto_stats_min)
        fail("--auto-stats-min (", who, ") applies to --stats auto only: calibrated statistics (--stats FILE) "
             "score from the first pruning on");
    };
    return k;
  }();
  return knob;
}

}  // namespace

const PolicyDescription& describe_triattention() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "triattention";
    i.description =
        "TriAttention: keeps the keys that calibrated query statistics predict future queries will attend "
        "to (needs --stats: a file from `triattn calibrate`, or auto to measure them from the sequence)";
    i.needs_stats = true;  // make_kv_policy refuses to build it without them
    i.online_stats = true;
    i.params = {auto_stats_min_knob()};
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
