#pragma once
// The one keep-set selection every policy reuses (docs/design.md, The algorithm): protected tokens
// (recent window, sinks, optionally the prompt) are kept unconditionally and the remaining
// slots of the budget go to the best-scoring candidates. Policies differ only in how they
// score candidates, so this is where the budget/window/tie rules live, once.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kv/policy.h"

namespace triattn {

// The protection/budget rules of one pruning event, after clamping.
struct KeepRules {
  int64_t budget = 0;         // B: rows a stream keeps (more only if protected rows exceed it)
  int64_t window = 0;         // most recent rows always kept; clamped to [0, B-1]
  int64_t sink = 0;           // rows with position < sink always kept
  int64_t protect_below = 0;  // rows with position < protect_below always kept (the prompt)
};

KeepRules keep_rules(const PolicyParams& params, const SequenceInfo& seq);

// The most tokens any budget knob may ask for: positions are int32, and B + β must not
// overflow (a budget near INT64_MAX used to switch pruning off silently).
constexpr int64_t kMaxBudgetTokens = (int64_t{1} << 30);

// Throws Error naming the first knob out of range: B and β in [1, kMaxBudgetTokens], W and S
// in [0, kMaxBudgetTokens], S < B (sinks are kept unconditionally: S >= B leaves nothing to
// select, and the budget could never hold). Every policy that prunes calls it.
void validate_budget_params(const PolicyParams& params);

// B, or more when the tokens kept unconditionally cannot fit in it: with --protect-prompt a
// prompt longer than B stays whole, plus the window. Pruning triggers at this + β, so a
// protection that outgrows B raises the bound instead of scoring at every step.
int64_t effective_budget(const PolicyParams& params, const SequenceInfo& seq);

// True when appending n_new tokens would take the largest stream past the effective budget
// + β (the cache is cut back before that happens) and there is something to cut.
bool prune_due(const KvCache& cache, int64_t n_new, const PolicyParams& params, const SequenceInfo& seq);

// A stream's rows split into protected rows and eviction candidates (both increasing).
struct StreamSplit {
  std::vector<int32_t> protected_rows;
  std::vector<int32_t> candidates;
};

// pos: the stream's absolute positions, one per row, increasing (rows are in token order).
StreamSplit split_stream(std::span<const int32_t> pos, const KeepRules& rules);

// Rows to keep, increasing: every protected row plus the top max(0, budget - |protected|)
// candidates by score (scores[i] belongs to split.candidates[i]). Higher score wins; equal
// scores keep the older token (lower position); NaN scores rank below every number.
std::vector<int32_t> select_keep(const StreamSplit& split, std::span<const float> scores,
                                 std::span<const int32_t> pos, int64_t budget);

// Every protected row plus the most recent max(0, budget - |protected|) candidates (the
// recency rule of StreamingLLM, exact at any position, where a float score would round).
std::vector<int32_t> keep_most_recent(const StreamSplit& split, int64_t budget);

// The stream's positions as a span (rows in token order).
std::span<const int32_t> stream_positions(const KvCache& cache, int layer, int head);

// The keep plan of one pruning event in `mode` (docs/design.md, The algorithm), from every
// stream's split and its candidates' scores (scores[s][i] belongs to splits[s].candidates[i],
// stream s = cache.stream_index(l, h); higher keeps). Streams that share a keep set must hold
// the same tokens (else Error naming `policy`); a shared candidate's score is
//   per_head:  the mean over layers of its score (one set per KV-head index),
//   per_layer: the max over the layer's KV heads (one set per layer),
//   global:    the mean over layers of the max over each layer's heads (one set).
// per_layer_per_head selects every stream on its own. Streams of sliding-window layers
// (cache.sliding) keep every row and are in no shared set; their splits and scores are unread.
KeepPlan select_by_mode(const KvCache& cache, PruningMode mode, const KeepRules& rules,
                        const std::vector<StreamSplit>& splits, const std::vector<std::vector<float>>& scores,
                        std::string_view policy);

// 0, 1, ..., n-1: every row of a stream of n rows.
std::vector<int32_t> all_rows(int64_t n);

// A plan that keeps `keep` in every stream.
KeepPlan uniform_plan(int n_streams, const std::vector<int32_t>& keep);

// True when the plan evicts at least one row of `cache` (a plan keeping everything is noise).
bool plan_evicts(const KvCache& cache, const KeepPlan& plan);

}  // namespace triattn
