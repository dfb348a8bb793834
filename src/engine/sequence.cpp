#include "engine/sequence.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "model/kv_shape.h"

namespace triattn {

namespace {
KvCacheShape cache_shape(const Model& m, DType type) { return kv_cache_shape(m.config(), type); }

// Positions are stored as int32 in the cache.
constexpr int64_t kMaxPositions = std::numeric_limits<int32_t>::max();

}  // namespace

Sequence::Sequence(const Model& model, const PolicyFactory& policies, NoticeFn notices)
    : model_(model),
      policy_(policies.make()),
      cache_(cache_shape(model, policies.settings().cache_type)),
      context_limit_(policies.context_limit()),
      notices_(std::move(notices)) {
  const KvSettings& kv = policies.settings();
  if (kv.recall.on) {
    recall_ = std::make_unique<KvRecall>(policies.geometry(), kv.recall.quota);
    recall_params_ = resolve_policy_params(kv.policy, kv.params);
    cache_.enable_cold(static_cast<size_t>(kv.recall.cold_bytes));
  }
  const int64_t limit = policy_->max_append();
  max_step_ = std::max<int64_t>(1, limit > 0 ? std::min(limit, policies.settings().prefill_chunk)
                                             : policies.settings().prefill_chunk);
}

std::unique_ptr<Sequence> Sequence::fork(const PolicyFactory& policies, NoticeFn notices) const {
  std::unique_ptr<KvPolicy> policy = policy_->clone();
  if (!policy) {
    if (policy_->needs() != kNeedNothing)
      fail("the '", policy_->name(), "' policy keeps per-sequence observations and cannot be copied (n > 1)");
    policy = policies.make();
  }
  auto s = std::unique_ptr<Sequence>(new Sequence(*this, std::move(policy)));
  s->notices_ = std::move(notices);
  return s;
}

Sequence::Sequence(const Sequence& o, std::unique_ptr<KvPolicy> policy)
    : model_(o.model_),
      policy_(std::move(policy)),
      cache_(o.cache_),
      info_(o.info_),
      history_(o.history_),
      stats_(o.stats_),
      max_step_(o.max_step_),
      context_limit_(o.context_limit_),
      announced_past_context_(o.announced_past_context_),
      recall_(o.recall_ ? std::make_unique<KvRecall>(*o.recall_) : nullptr),
      recall_params_(o.recall_params_),
      recall_due_(o.recall_due_) {}

void Sequence::reserve_for(int64_t tokens) {
  // What the sequence can really hold: no more than the policy's bound or the context (a
  // budget of 1e6 used to preallocate 545 MB for a 656K-parameter model at construction).
  const int64_t bound = memory_bound();
  int64_t n = tokens;
  if (bound > 0) n = std::min(n, bound);
  if (context_limit_ > 0 && bound == 0) n = std::min(n, context_limit_);
  if (n > 0) cache_.reserve(n);
}

void Sequence::set_prompt_length(int64_t n) {
  const int64_t before = policy_->memory_bound(info_);
  info_.prompt_len = n;
  const int64_t after = policy_->memory_bound(info_);
  if (before > 0 && after > before)
    notice("the protected prompt (" + std::to_string(n) + " tokens) does not fit the KV budget: the cache will hold up to " +
           std::to_string(after) + " tokens per (layer, KV head) instead of " + std::to_string(before) +
           " (drop --protect-prompt or raise --kv-budget to keep the usual bound)");
}

int64_t Sequence::room() const {
  const int64_t used = cache_.n_processed();
  if (context_limit_ > 0 && memory_bound() == 0) return std::max<int64_t>(0, context_limit_ - used);
  return kMaxPositions - used;
}

void Sequence::check_context(int64_t n) {
  const int64_t used = cache_.n_processed(), end = used + n;
  if (end > kMaxPositions) fail("the sequence would pass ", kMaxPositions, " positions, the most a KV cache stores");
  if (context_limit_ <= 0 || end <= context_limit_) return;
  if (memory_bound() == 0)
    fail(n, " more tokens would take the sequence to ", end, " tokens, past its context of ", context_limit_,
         " (the model's context length, or --ctx): the '", policy_->name(),
         "' policy keeps every token. Shorten the input, or use a compressing --kv-policy");
  if (!announced_past_context_) {
    announced_past_context_ = true;
    notice("the sequence passes " + std::to_string(context_limit_) +
           " tokens, the context limit: the KV policy keeps memory bounded, but positions past the model's "
           "trained context may lower quality");
  }
}

void Sequence::prepare_append(int64_t n, ThreadPool* pool) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto plan = policy_->plan_before_append(cache_, n, info_, pool);
  if (plan) cache_.apply(*plan, pool);
  stats_.scoring_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Recall follows every eviction (the rows just evicted may be the ones the queries want) and
  // runs where Generation asked for it.
  if (recall_ && (plan || recall_due_)) run_recall(pool);
  recall_due_ = false;
}

int64_t Sequence::rewind_for_recall(int64_t most) {
  if (!recall_) fail("sequence: recall is off");
  if (cache_.cold().bytes() == 0) return 0;
  const int64_t n = std::min({most, cache_.rewindable(), static_cast<int64_t>(history_.size())});
  if (n <= 0) return 0;
  cache_.rewind_last(n);
  // The policy's per-row observations lose the last rows with the cache: row r stays row r.
  std::vector<std::vector<int32_t>> previous(static_cast<size_t>(cache_.n_streams()));
  for (int s = 0; s < cache_.n_streams(); ++s) {
    auto& rows = previous[static_cast<size_t>(s)];
    rows.resize(static_cast<size_t>(cache_.size(s / cache_.shape().n_kv_heads, s % cache_.shape().n_kv_heads)));
    std::iota(rows.begin(), rows.end(), 0);
  }
  policy_->on_recall(previous);
  history_.resize(history_.size() - static_cast<size_t>(n));
  recall_due_ = true;
  return n;
}

void Sequence::run_recall(ThreadPool* pool) {
  const auto t0 = std::chrono::steady_clock::now();
  const RecallPlan plan =
      recall_->plan(cache_, recall_params_.mode.value_or(PruningMode::PerLayerPerHead), keep_rules(recall_params_, info_), pool);
  if (std::any_of(plan.take.begin(), plan.take.end(), [](const auto& t) { return !t.empty(); })) {
    policy_->on_recall(cache_.recall(plan, pool));
  }
  stats_.recall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ForwardItem Sequence::begin_step(std::span<const int32_t> tokens, ForwardItem::Logits logits, ThreadPool* pool,
                                 ForwardObserver* also) {
  if (static_cast<int64_t>(tokens.size()) > max_step_)
    fail("sequence: a step of ", tokens.size(), " tokens is more than the policy allows (", max_step_, ")");
  check_context(static_cast<int64_t>(tokens.size()));
  prepare_append(static_cast<int64_t>(tokens.size()), pool);
  ForwardItem item;
  item.cache = &cache_;
  item.tokens = tokens;
  item.logits = logits;
  observer_.emplace(*policy_, recall_.get(), also);
  item.observer = &*observer_;
  return item;
}

void Sequence::end_step(std::span<const int32_t> tokens) {
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  update_stats();
}

void Sequence::update_stats() {
  stats_.kv_peak_tokens = cache_.peak_tokens();
  stats_.kv_peak_bytes = cache_.peak_bytes();
  stats_.prune_events = cache_.prune_events();
  stats_.recalled_rows = cache_.recalled_rows();
  stats_.kv_cold_peak_bytes = cache_.peak_cold_bytes();
}

}  // namespace triattn
