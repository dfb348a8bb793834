// H2O, heavy-hitter oracle (Zhang et al., 2023): a key's score is the attention it has
// received, accumulated over every step since it entered the cache and summed over the query
// heads of its GQA group (the forward pass reports each query head's softmax weights,
// kNeedAttention). The recent window plays H2O's "recent tokens" part.
//
// The accumulators are one double per row of each stream, kept row-aligned with the cache:
// a row appended by the forward pass is reported in the same step (observe_attention gets
// n_keys = the stream's rows, new ones at the end) and a plan returned here is applied by the
// engine at once, so on_plan compacts them the same way. A row no attention was reported for
// (a cache filled without the forward pass, as `triattn bench` does) counts as having
// received none.
#include "core/error.h"
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/scored_policy.h"

namespace triattn {
namespace {

class H2OPolicy final : public PolicyBase<H2OPolicy, ScoredPolicy, describe_h2o> {
 public:
  H2OPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : PolicyBase(params),
        n_kv_heads_(g.n_kv_heads),
        group_(g.n_kv_heads > 0 ? g.n_heads / g.n_kv_heads : 1),
        acc_(static_cast<size_t>(g.n_layers) * g.n_kv_heads),
        layer_window_(g.layer_window) {}

  void observe_attention(int layer, int q_head, const float* weights, int64_t n_keys) override {
    // A sliding-window layer is trimmed by the forward pass and never pruned: nothing to rank.
    if (!layer_window_.empty() && layer < static_cast<int>(layer_window_.size()) &&
        layer_window_[static_cast<size_t>(layer)] != 0)
      return;
    const size_t s = static_cast<size_t>(layer) * n_kv_heads_ + q_head / group_;
    if (s >= acc_.size()) fail("h2o: attention of layer ", layer, " query head ", q_head, " outside the model");
    std::vector<double>& a = acc_[s];
    if (static_cast<int64_t>(a.size()) > n_keys)
      fail("h2o: attention over ", n_keys, " keys for a stream of ", a.size(),
           " accumulated rows: the cache was pruned by something other than this policy's plans");
    a.resize(static_cast<size_t>(n_keys), 0.0);
    for (int64_t i = 0; i < n_keys; ++i) a[i] += weights[i];
  }

  // A row back from the cold store starts again from nothing: what it received before it left
  // is not kept.
  void on_recall(const std::vector<std::vector<int32_t>>& previous) override { on_plan(KeepPlan{previous}); }

 protected:
  void score_stream(const KvCache&, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    const std::vector<double>& a = acc_[static_cast<size_t>(layer) * n_kv_heads_ + kv_head];
    for (size_t i = 0; i < split.candidates.size(); ++i) {
      const size_t row = static_cast<size_t>(split.candidates[i]);
      scores[i] = row < a.size() ? static_cast<float>(a[row]) : 0.0f;
    }
  }

  void on_plan(const KeepPlan& plan) override {
    for (size_t s = 0; s < acc_.size(); ++s) {
      std::vector<double> kept(plan.keep[s].size(), 0.0);
      for (size_t j = 0; j < kept.size(); ++j) {
        const size_t row = static_cast<size_t>(plan.keep[s][j]);
        if (plan.keep[s][j] >= 0 && row < acc_[s].size()) kept[j] = acc_[s][row];
      }
      acc_[s] = std::move(kept);
    }
  }

 private:
  int n_kv_heads_, group_;
  std::vector<std::vector<double>> acc_;  // [layer * n_kv_heads + kv_head][row]
  std::vector<int32_t> layer_window_;     // AttentionGeometry::layer_window
};

}  // namespace

const PolicyDescription& describe_h2o() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "h2o";
    i.description =
        "H2O: keeps the heavy hitters, the keys with the most attention accumulated since they entered "
        "(summed over the query heads of their group)";
    i.prunes = true;
    i.needs = kNeedAttention;
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<H2OPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
