#pragma once
// The command-line flags of the KV knobs, one per PolicyKnob: the shared budget rules
// (kv_shared_params) and the policies' own knobs (kv_policy_knobs), with their --help text
// made from the descriptions, so that a knob described once is a flag with no more code.
#include <CLI/CLI.hpp>

#include "cli/common.h"

namespace triattn::cli {

// Binds each knob's flag to its member of kv.settings.params (--pruning-mode: kv.pruning_mode,
// parsed by finish_kv_options).
void add_kv_knob_options(CLI::App& app, KvOptions& kv);

}  // namespace triattn::cli
