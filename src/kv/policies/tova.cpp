// TOVA, token omission via attention (Oren et al., 2024): keep the keys the current query
// attends to most, its softmax weights summed over the query heads of the GQA group. The
// current query is the last token processed (the newest decode token, or the last token of
// the latest prefill chunk); TOVA as published evicts one token per step, here the shared
// B + β trigger cuts β at a time with the same score.
#include "kv/policies/policies.h"
#include "kv/policies/recent_query_policy.h"

namespace triattn {
namespace {

class TovaPolicy final : public RecentQueryPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<TovaPolicy>(*this); }
  TovaPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : RecentQueryPolicy(params, g, /*capacity=*/1) {}

  std::string_view name() const override { return "tova"; }

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    std::vector<double> att(split.candidates.size());
    importance(cache, layer, kv_head, split, /*kernel=*/1, att.data());
    for (size_t i = 0; i < att.size(); ++i) scores[i] = static_cast<float>(att[i]);
  }
};

}  // namespace

std::unique_ptr<KvPolicy> make_tova_policy(const PolicyParams& params, const AttentionGeometry& geometry) {
  return std::make_unique<TovaPolicy>(params, geometry);
}

}  // namespace triattn
