#pragma once
// Factories of the built-in KV policies, one file each under kv/policies/. They receive
// resolved, validated parameters (make_kv_policy). A new baseline is one new file plus one
// entry in policy_registry.cpp's table (no static self-registration:
// a static library would silently drop an object file nobody references).
#include <memory>

#include "kv/policy.h"

namespace triattn {

std::unique_ptr<KvPolicy> make_full_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_triattention_policy(const PolicyParams& params,
                                                   const AttentionGeometry& geometry);
// TriAttention with its trig and spread terms ranked apart (kv/policies/triattention_split.cpp).
std::unique_ptr<KvPolicy> make_triattention_split_policy(const PolicyParams& params,
                                                         const AttentionGeometry& geometry);
// The baselines (DESIGN §1 "Baselines"), one file each.
std::unique_ptr<KvPolicy> make_streaming_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_h2o_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_snapkv_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_rkv_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_knorm_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_tova_policy(const PolicyParams& params, const AttentionGeometry& geometry);
std::unique_ptr<KvPolicy> make_random_policy(const PolicyParams& params, const AttentionGeometry& geometry);

}  // namespace triattn
