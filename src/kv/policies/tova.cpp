// TOVA, token omission via attention (Oren et al., 2024): keep the keys the current query
// attends to most, its softmax weights summed over the query heads of the GQA group. The
// current query is the last token processed (the newest decode token, or the last token of
// the latest prefill chunk); TOVA as published evicts one token per step, here the shared
// B + β trigger cuts β at a time with the same score.
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"
#include "kv/policies/recent_query_policy.h"

namespace triattn {
namespace {

class TovaPolicy final : public PolicyBase<TovaPolicy, RecentQueryPolicy, describe_tova> {
 public:
  TovaPolicy(const PolicyParams& params, const AttentionGeometry& g)
      : PolicyBase(params, g, /*capacity=*/1) {}

 protected:
  void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                    int) override {
    std::vector<double> att(split.candidates.size());
    importance(cache, layer, kv_head, split, /*kernel=*/1, att.data());
    for (size_t i = 0; i < att.size(); ++i) scores[i] = static_cast<float>(att[i]);
  }
};

}  // namespace

const PolicyDescription& describe_tova() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "tova";
    i.description = "TOVA: keeps the keys the current query attends to most (summed over the group)";
    i.prunes = true;
    i.needs = kNeedQueries;
    i.make = [](const PolicyParams& p, const AttentionGeometry& g) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<TovaPolicy>(p, g);
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
