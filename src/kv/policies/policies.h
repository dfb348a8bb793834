#pragma once
// Factories of the built-in KV policies, one file each under kv/policies/. A new baseline is
// one new file plus one line in policy_registry.cpp's table (no static self-registration:
// a static library would silently drop an object file nobody references).
#include <memory>

#include "kv/policy.h"

namespace triattn {

std::unique_ptr<KvPolicy> make_full_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_triattention_policy(const PolicyParams& params,
                                                   const AttentionGeometry& geometry);

}  // namespace triattn
