#pragma once
// What every built-in policy takes from its description instead of writing it out: its name,
// what it needs observed (one declaration, which the registry lists too), and the copy a
// forked sequence continues with (observations and state included).
#include <memory>
#include <string_view>

#include "kv/policy.h"

namespace triattn {

// Derived: the policy; Base: KvPolicy or one of its shared bases (BudgetedPolicy, ScoredPolicy,
// ...); Describe: the policy's describe_<name>() (kv/policies/policies.h).
template <class Derived, class Base, const PolicyDescription& (*Describe)()>
class PolicyBase : public Base {
 public:
  using Base::Base;
  std::string_view name() const final { return Describe().name; }
  unsigned needs() const final { return Describe().needs; }
  std::unique_ptr<KvPolicy> clone() const final {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

}  // namespace triattn
