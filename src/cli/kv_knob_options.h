#pragma once
// The command-line flags of the KV knobs, one per PolicyKnob: the shared budget rules
// (kv_shared_params) and the policies' own knobs (kv_policy_knobs), with their --help text
// made from the descriptions, so that a knob described once is a flag with no more code.
#include <CLI/CLI.hpp>

#include <string>

#include "cli/common.h"
#include "kv/policy.h"

namespace triattn::cli {

// Binds each knob's flag to its member of kv.settings.params (--pruning-mode: kv.pruning_mode,
// parsed by finish_kv_options), each help naming the knob's TRIATTN_RUNTIME_* variable.
void add_kv_knob_options(CLI::App& app, KvOptions& kv);
// One knob's flag bound to its member of `params` (--pruning-mode: to `pruning_mode`, a name
// the command parses), for a command with its own set; reads_env: the command applies the
// knob's variable (apply_kv_environment), so the help names it.
void add_kv_knob_option(CLI::App& app, const PolicyKnob& knob, PolicyParams& params, std::string& pruning_mode,
                        const std::string& help, bool reads_env);

}  // namespace triattn::cli
