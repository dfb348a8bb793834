#pragma once
// The built-in KV policies, one file each under kv/policies/, each describing itself: name,
// what it needs, its defaults, its own knobs and its factory (PolicyDescription). A new
// baseline is one new file plus one line in policy_registry.cpp's list (no static
// self-registration: a static library would silently drop an object file nobody references).
#include "kv/policy.h"

namespace triattn {

const PolicyDescription& describe_full();
const PolicyDescription& describe_triattention();
// TriAttention with its trig and spread terms ranked apart (kv/policies/triattention_split.cpp).
const PolicyDescription& describe_triattention_split();
// The baselines (docs/design.md, "The other policies").
const PolicyDescription& describe_streaming();
const PolicyDescription& describe_h2o();
const PolicyDescription& describe_snapkv();
const PolicyDescription& describe_rkv();
const PolicyDescription& describe_knorm();
const PolicyDescription& describe_tova();
const PolicyDescription& describe_random();

}  // namespace triattn
