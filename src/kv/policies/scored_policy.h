#pragma once
// What every pruning policy shares (docs/design.md, "Pruning"), written once: the B + β trigger,
// prefill chunks of at most β tokens, the memory bound, the keep-set rules of kv/keep_set.h
// and the pruning modes. A scored policy supplies only its candidates' scores (kvpress's
// shape: methods produce scores, one top-k), and, when it keeps per-row observations, the
// compaction of them when its plan is applied.
#include <optional>
#include <vector>

#include "kv/keep_set.h"
#include "kv/policy.h"

namespace triattn {

class BudgetedPolicy : public KvPolicy {
 public:
  // params: resolved (resolve_policy_params: sink and mode set) and validated.
  explicit BudgetedPolicy(const PolicyParams& params);
  // A chunk of at most β tokens appended to a cache of at most B stays within B + β, so a
  // prompt longer than B is pruned between chunks and runs in bounded memory too.
  int64_t max_append() const override { return params_.divide_length; }
  int64_t memory_bound(const SequenceInfo& seq) const override;

 protected:
  PruningMode mode() const { return params_.mode.value_or(PruningMode::PerLayerPerHead); }
  const PolicyParams params_;
};

class ScoredPolicy : public BudgetedPolicy {
 public:
  using BudgetedPolicy::BudgetedPolicy;
  std::optional<KeepPlan> plan_before_append(const KvCache& cache, int64_t n_new, const SequenceInfo& seq,
                                             ThreadPool* pool) final;

 protected:
  // Once per pruning event, on the calling thread, before any score_stream; n_threads: how
  // many `thread` indices score_stream may be called with (per-thread scratch).
  virtual void begin_event(const KvCache& cache, int n_threads) {}
  // scores[i]: how much candidate split.candidates[i] of stream (layer, kv_head) deserves to
  // stay (never called for a sliding-window layer's streams, which are not pruned); higher keeps, ties keep the older token. Streams are scored in parallel on the
  // pool: an implementation writes only its own stream's scores and its thread's scratch.
  virtual void score_stream(const KvCache& cache, int layer, int kv_head, const StreamSplit& split, float* scores,
                            int thread) = 0;
  // After every stream is scored, before selection, on the calling thread: a policy whose
  // scores depend on other streams (e.g. a mean over layers) rewrites them here.
  virtual void combine_streams(const KvCache& cache, const SequenceInfo& seq, const std::vector<StreamSplit>& splits,
                               std::vector<std::vector<float>>& scores) {}
  // The engine applies `plan` as soon as it is returned (Sequence::prepare_append): a policy
  // that keeps per-row observations compacts them here, so they stay row-aligned.
  virtual void on_plan(const KeepPlan& plan) {}

 private:
  // Reused between events (one policy per sequence).
  std::vector<StreamSplit> splits_;
  std::vector<std::vector<float>> scores_;
};

}  // namespace triattn
