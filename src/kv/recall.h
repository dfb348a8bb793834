#pragma once
// Query-aware recall (docs/design.md, "Cold tier and recall"): at a recall event the recent
// actual queries score every row of both tiers as attention would, and the cold rows they
// want most come back in place of the hot rows they want least. Eviction decides what
// leaves; recall decides what returns.
//
// A row's recall score, in stream (layer, KV head): the softmax attention of each recent query
// of the group's query heads over the hot and cold rows together (scale and causal mask as the
// forward pass), summed over those queries, then max-pooled over the rows in position order
// from kPoolBefore rows before to kPoolAfter rows after, discounted by distance (a fact is a
// run of tokens, and the tokens after the one a query finds are the ones generation reads next).
// A position's score is the best any stream gives it, and every stream swaps by it: a run one
// head reads closely comes back everywhere, since the heads that read it next may be others.
// Streams that share a keep set (the pruning mode) hold the same positions and so swap the same
// ones. A swap happens only where the cold row scores above the hot row it displaces;
// protected hot rows (window, sinks, prompt) are never displaced.
#include <cstdint>
#include <optional>
#include <vector>

#include "kv/keep_set.h"
#include "kv/kv_cache.h"
#include "kv/policies/recent_queries.h"
#include "kv/policy.h"

namespace triattn {

class KvRecall {
 public:
  // The recent queries per query head a recall event scores with.
  static constexpr int64_t kQueries = 8;
  static constexpr int64_t kPoolBefore = 3, kPoolAfter = 12;
  static constexpr float kPoolDecay = 64.0f;  // a neighbour d rows away gets (1 - d / kPoolDecay)
  // The prompt's last tokens computed again after its end's recall event: the question's own
  // rows were computed before what it asks for came back, and the answer reads them.
  static constexpr int64_t kPromptTail = 32;

  // quota: the most rows one event brings back per stream.
  KvRecall(const AttentionGeometry& geometry, int64_t quota);

  void observe_query(int layer, int q_head, int32_t pos, const float* q) { queries_.push(layer, q_head, pos, q); }

  // The swap of one recall event (empty streams where nothing is swapped); also records each
  // cold row's recall score as its usefulness (ColdStore, what its cap drops by). `mode` and
  // `rules`: the policy's, resolved. Scores on `pool`'s threads.
  RecallPlan plan(KvCache& cache, PruningMode mode, const KeepRules& rules, ThreadPool* pool);

 private:
  int64_t quota_;
  RecentQueries queries_;
  double scale_;
};

}  // namespace triattn
