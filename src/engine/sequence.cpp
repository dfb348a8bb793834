#include "engine/sequence.h"

#include <algorithm>
#include <chrono>

namespace triattn {

namespace {
KvCacheShape cache_shape(const Model& m, DType type) {
  const ModelConfig& c = m.config();
  return KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, type};
}
}  // namespace

Sequence::Sequence(const Model& model, const PolicyFactory& policies)
    : model_(model),
      policy_(policies.make()),
      cache_(cache_shape(model, policies.settings().cache_type), policy_->capacity_hint()) {
  const int64_t limit = policy_->max_append();
  max_step_ = std::max<int64_t>(1, limit > 0 ? std::min(limit, policies.settings().prefill_chunk)
                                             : policies.settings().prefill_chunk);
}

void Sequence::prepare_append(int64_t n, ThreadPool* pool) {
  const auto t0 = std::chrono::steady_clock::now();
  if (auto plan = policy_->plan_before_append(cache_, n, info_, pool)) cache_.apply(*plan, pool);
  stats_.scoring_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<float> Sequence::feed(std::span<const int32_t> tokens, Forward& forward) {
  std::vector<std::vector<float>> logits;
  std::vector<float> last;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(max_step_)) {
    const size_t n = std::min(tokens.size() - start, static_cast<size_t>(max_step_));
    prepare_append(static_cast<int64_t>(n), forward.pool());
    ForwardItem item;
    item.cache = &cache_;
    item.tokens = tokens.subspan(start, n);
    const bool is_last = start + n == tokens.size();
    item.logits = is_last ? ForwardItem::Logits::Last : ForwardItem::Logits::None;
    item.observing_policy = policy_.get();
    forward.run(std::span<const ForwardItem>(&item, 1), logits);
    if (is_last) last = std::move(logits[0]);
    history_.insert(history_.end(), item.tokens.begin(), item.tokens.end());
  }
  update_stats();
  return last;
}

void Sequence::update_stats() {
  stats_.kv_peak_tokens = cache_.peak_tokens();
  stats_.kv_peak_bytes = cache_.peak_bytes();
  stats_.prune_events = cache_.prune_events();
}

}  // namespace triattn
