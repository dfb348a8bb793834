#pragma once
// Adapts a sequence's KV policy to the forward pass's observer interface: the policy's
// declared needs become what the observer asks for, and the forward pass's reports go to
// the policy's observation hooks (and the queries to the sequence's recall, when it has one). A caller's own observer (calibration, analysis) may ride
// along and sees the pre-RoPE vectors first.
#include "kv/policy.h"
#include "kv/recall.h"
#include "model/observer.h"

namespace triattn {

class PolicyObserver final : public ForwardObserver {
 public:
  PolicyObserver(KvPolicy& policy, KvRecall* recall, ForwardObserver* also)
      : policy_(policy), recall_(recall), also_(also) {}
  unsigned wants() const override {
    const unsigned needs = policy_.needs();
    return (needs & kNeedQueries || recall_ ? kQueries : 0u) | (needs & kNeedAttention ? kAttention : 0u) |
           (also_ ? also_->wants() : 0u);
  }
  void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override {
    policy_.observe_pre_rope(layer, pos0, n_tokens, q, k);  // reported to every observer anyway
    if (also_) also_->on_pre_rope(layer, pos0, n_tokens, q, k);
  }
  void on_query(int layer, int q_head, int32_t pos, const float* q_rotated) override {
    if (policy_.needs() & kNeedQueries) policy_.observe_query(layer, q_head, pos, q_rotated);
    if (recall_) recall_->observe_query(layer, q_head, pos, q_rotated);
    if (also_) also_->on_query(layer, q_head, pos, q_rotated);
  }
  void on_attention(int layer, int q_head, const float* weights, int64_t n_keys) override {
    if (policy_.needs() & kNeedAttention) policy_.observe_attention(layer, q_head, weights, n_keys);
    if (also_) also_->on_attention(layer, q_head, weights, n_keys);
  }

 private:
  KvPolicy& policy_;
  KvRecall* recall_;
  ForwardObserver* also_;
};

}  // namespace triattn
