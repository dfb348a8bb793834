#pragma once
// The reference implementation's environment variables (TRIATTN_RUNTIME_*), read here and
// nowhere else (library code never reads the environment; docs/design.md, Architecture).
#include <functional>
#include <string>

#include "engine/kv_setup.h"

namespace triattn::cli {

// Sets each knob from its variable unless its flag was given (flag_given("--kv-budget")):
// a flag overrides the variable, so a malformed variable whose flag was given is ignored.
// Nothing is read for the full policy, which uses none of these knobs. A variable that is
// read and malformed or out of range raises Error naming it. The budget knobs name their
// variables (PolicyKnob::env: TRIATTN_RUNTIME_KV_BUDGET, _DIVIDE_LENGTH, _WINDOW_SIZE,
// _PRUNING_MODE); TRIATTN_RUNTIME_SPARSE_STATS_PATH sets --stats.
void apply_kv_environment(KvSettings& s, const std::function<bool(const char* flag)>& flag_given);

}  // namespace triattn::cli
