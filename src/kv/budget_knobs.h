#pragma once
// The budget rules every pruning policy shares (B, β, W, S, protect-prompt, pruning mode),
// described once as knobs: validate_budget_params runs their checks, and the registry lists
// them with each policy's own defaults (kv_shared_params).
#include <vector>

#include "kv/policy.h"

namespace triattn {

// In order: --kv-budget, --divide-length, --window, --sink, --protect-prompt, --pruning-mode.
const std::vector<PolicyKnob>& budget_knobs();

}  // namespace triattn
