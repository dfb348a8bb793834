#pragma once
// One sequence being generated: its KV cache, its policy instance and its token history.
// The engine step (engine/step.h) runs its tokens through the model, pruning between steps as
// the policy asks. It also holds the context rule, one for every frontend: under a policy that does not
// bound memory (full) the sequence never passes its context limit; under one that does,
// positions past it are allowed and announced once.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_setup.h"
#include "engine/run_stats.h"
#include "engine/policy_observer.h"
#include "kv/kv_cache.h"
#include "kv/policy.h"
#include "model/forward_item.h"

namespace triattn {

// Receives the sequence's notices (context passed, protection outgrowing the budget, a
// generation stopped at the context). The engine never prints; frontends decide where
// notices go (stderr, a server log).
using NoticeFn = std::function<void(const std::string& text)>;

class Sequence {
 public:
  Sequence(const Model& model, const PolicyFactory& policies, NoticeFn notices = nullptr);
  // An independent copy of this sequence as it stands (cache, history, policy and its
  // observations, figures), for the choices of one request that share a prefill. `policies`
  // must be the factory this sequence was made with (it rebuilds a policy that cannot be
  // copied and keeps no observations; Error for one that keeps observations).
  std::unique_ptr<Sequence> fork(const PolicyFactory& policies, NoticeFn notices = nullptr) const;

  // The sequence's part of one engine step (engine/step.h): begin_step checks the context
  // rule, prunes before the append (on `pool`) and returns the sequence's forward item for
  // these tokens (at most max_step()), observed by its policy and by `also` when given; after
  // the forward call, end_step records them. The tokens must stay alive in between.
  ForwardItem begin_step(std::span<const int32_t> tokens, ForwardItem::Logits logits, ThreadPool* pool,
                         ForwardObserver* also = nullptr);
  void end_step(std::span<const int32_t> tokens);
  // Refuses (Error, nothing fed) or announces n more tokens according to the context rule.
  void check_context(int64_t n);
  // The policy's pruning before appending n tokens, timed into stats().scoring_ms; scoring and
  // compaction run on `pool` when given.
  void prepare_append(int64_t n, ThreadPool* pool);
  // With recall on (KvSettings::recall): a recall event runs before the next step's tokens go
  // in, whether or not the policy prunes there. Generation asks for it before the last token of
  // a prompt, once the prompt's other queries are known.
  bool recalls() const { return recall_ != nullptr; }
  void request_recall() { recall_due_ = recall_ != nullptr; }
  // The prompt-end recall event: when the cold tier holds rows, takes back the last tokens fed
  // (at most `most`, and only those every stream still holds: cache rows, history) and asks
  // for a recall event before the next step, which feeds them again. The whole prompt's
  // queries then choose what comes back, and the retaken tokens (the question) are computed
  // again reading it, as the first generated token does. Returns how many were taken back (0:
  // nothing is cold, nothing to recall). Only where the cache can take tokens back
  // (KvCache::can_rewind); elsewhere the recall runs before the prompt's last token.
  int64_t rewind_for_recall(int64_t most);
  // Marks the end of the prompt (protect-prompt, statistics); announces when protecting it
  // raises the policy's memory bound.
  void set_prompt_length(int64_t n);

  // Sizes the cache for `tokens` tokens in all (what the caller expects to feed), capped by
  // the policy's bound and, without one, by the context; beyond that it grows on demand.
  void reserve_for(int64_t tokens);
  // Tokens this sequence may still take: context_limit() - tokens so far when memory is not
  // bounded, else only what positions (int32) can hold.
  int64_t room() const;
  // The context limit (PolicyFactory::context_limit); 0 when unknown (then only the int32
  // positions limit).
  int64_t context_limit() const { return context_limit_; }
  // Tokens per (layer, KV head) the policy never exceeds for this sequence; 0 = unbounded.
  int64_t memory_bound() const { return policy_->memory_bound(info_); }
  void set_notices(NoticeFn notices) { notices_ = std::move(notices); }
  void notice(const std::string& text) const {
    if (notices_) notices_(text);
  }

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
  Sequence(const Sequence& other, std::unique_ptr<KvPolicy> policy);  // fork()
  void run_recall(ThreadPool* pool);

  const Model& model_;
  std::unique_ptr<KvPolicy> policy_;
  KvCache cache_;
  SequenceInfo info_;
  std::vector<int32_t> history_;
  RunStats stats_;
  int64_t max_step_;
  int64_t context_limit_ = 0;
  NoticeFn notices_;
  bool announced_past_context_ = false;
  std::optional<PolicyObserver> observer_;  // the current step's (begin_step)
  std::unique_ptr<KvRecall> recall_;        // null without --kv-recall
  PolicyParams recall_params_;              // the policy's, resolved (mode, sink)
  bool recall_due_ = false;
};

}  // namespace triattn
