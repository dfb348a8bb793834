#pragma once
// One sequence being generated: its KV cache, its policy instance and its token history.
// feed() runs tokens through the model in steps the policy allows, pruning between steps.
#include <memory>
#include <span>
#include <vector>

#include "engine/kv_setup.h"
#include "engine/run_stats.h"
#include "kv/kv_cache.h"
#include "kv/policy.h"
#include "model/forward.h"

namespace triattn {

class Sequence {
 public:
  Sequence(const Model& model, const PolicyFactory& policies);

  // Runs tokens through the model (prefill when many, decode when one) and returns the logits
  // after the last one. Prunes the cache before any step that would exceed the policy's bound.
  std::vector<float> feed(std::span<const int32_t> tokens, Forward& forward);
  // The policy's pruning before appending n tokens, timed into stats().scoring_ms; scoring and
  // compaction run on `pool` when given.
  void prepare_append(int64_t n, ThreadPool* pool);
  // Marks the end of the prompt (protect-prompt, statistics).
  void set_prompt_length(int64_t n) { info_.prompt_len = n; }

  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  KvPolicy& policy() { return *policy_; }
  const std::vector<int32_t>& history() const { return history_; }
  void push_history(int32_t id) { history_.push_back(id); }
  RunStats& stats() { return stats_; }
  // Refreshes the cache figures in stats().
  void update_stats();
  int64_t max_step() const { return max_step_; }

 private:
  const Model& model_;
  std::unique_ptr<KvPolicy> policy_;
  KvCache cache_;
  SequenceInfo info_;
  std::vector<int32_t> history_;
  RunStats stats_;
  int64_t max_step_;
};

}  // namespace triattn
