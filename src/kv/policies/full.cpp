// Full attention: the cache keeps every token (the quality reference, docs/design.md "The other policies").
#include "kv/policies/policies.h"
#include "kv/policies/policy_base.h"

namespace triattn {
namespace {

class FullPolicy final : public PolicyBase<FullPolicy, KvPolicy, describe_full> {
 public:
  std::optional<KeepPlan> plan_before_append(const KvCache&, int64_t, const SequenceInfo&, ThreadPool*) override {
    return std::nullopt;
  }
};

}  // namespace

const PolicyDescription& describe_full() {
  static const PolicyDescription d = [] {
    PolicyDescription i;
    i.name = "full";
    i.description = "full attention: never evicts (reference quality, unbounded memory)";
    i.mode_applies = false;
    i.make = [](const PolicyParams&, const AttentionGeometry&) -> std::unique_ptr<KvPolicy> {
      return std::make_unique<FullPolicy>();
    };
    return i;
  }();
  return d;
}

}  // namespace triattn
