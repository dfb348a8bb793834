#pragma once
// The base of the policies that score keys by the attention of the last queries (SnapKV, R-KV,
// TOVA): fed the post-RoPE queries their descriptions ask for (kNeedQueries), it keeps the
// last `capacity` of each query head, and recomputes their attention over the cache at a
// pruning event.
#include "kv/policies/recent_queries.h"
#include "kv/policies/scored_policy.h"

namespace triattn {

class RecentQueryPolicy : public ScoredPolicy {
 public:
  RecentQueryPolicy(const PolicyParams& params, const AttentionGeometry& geometry, int64_t capacity)
      : ScoredPolicy(params), queries_(geometry, capacity), scale_(attention_scale(geometry)) {}
  void observe_query(int layer, int q_head, int32_t pos, const float* q) final { queries_.push(layer, q_head, pos, q); }

 protected:
  // The recent queries' attention on each candidate of the stream, max-pooled over `kernel`
  // neighbours and summed over the group (recent_attention_importance).
  void importance(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, int64_t kernel,
                  double* out) const {
    recent_attention_importance(cache, layer, kv_head, queries_, split, scale_, kernel, out);
  }

  RecentQueries queries_;
  double scale_;
};

}  // namespace triattn
