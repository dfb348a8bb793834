// Full attention: the cache keeps every token (the quality reference, DESIGN §1 "Baselines").
#include "kv/policies/policies.h"

namespace triattn {
namespace {

class FullPolicy final : public KvPolicy {
 public:
  // A forked sequence (n > 1) continues with this instance's observations and state.
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<FullPolicy>(*this); }
  std::string_view name() const override { return "full"; }
  std::optional<KeepPlan> plan_before_append(const KvCache&, int64_t, const SequenceInfo&, ThreadPool*) override {
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<KvPolicy> make_full_policy(const PolicyParams&, const AttentionGeometry&) {
  return std::make_unique<FullPolicy>();
}

}  // namespace triattn
