#include "engine/online_stats.h"

#include <vector>

#include "calib/stats_accumulator.h"

namespace triattn {
namespace {

class AccumulatedStats final : public OnlineStats {
 public:
  explicit AccumulatedStats(StatsAccumulator acc) : acc_(std::move(acc)) {}
  void add(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override {
    acc_.on_pre_rope(layer, pos0, n_tokens, q, k);
  }
  int64_t tokens() const override { return acc_.tokens(); }
  HeadStats result() const override { return acc_.result(); }
  std::unique_ptr<OnlineStats> clone() const override { return std::make_unique<AccumulatedStats>(acc_); }

 private:
  StatsAccumulator acc_;
};

}  // namespace

std::unique_ptr<OnlineStats> make_online_stats(const AttentionGeometry& g) {
  // The forward pass reports pre-RoPE vectors for the layers that keep KV (not DeltaNet's).
  std::vector<int> observed;
  for (int l = 0; l < g.n_layers; ++l)
    if (g.layer_window.empty() || g.layer_window[static_cast<size_t>(l)] != KvCacheShape::kNoKv) observed.push_back(l);
  return std::make_unique<AccumulatedStats>(
      StatsAccumulator(g.n_layers, g.n_heads, g.n_kv_heads, g.head_dim, g.rotary_dims(), std::move(observed)));
}

}  // namespace triattn
