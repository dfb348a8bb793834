#include "cli/kv_knob_options.h"

#include <variant>

#include "kv/policy.h"

namespace triattn::cli {
namespace {

// " [TRIATTN_RUNTIME_KV_BUDGET]": the variable that sets the knob when its flag is absent.
std::string env_note(const PolicyKnob& k) { return k.env.empty() ? "" : " [" + k.env + "]"; }

// "full, triattention-split, streaming": where --pruning-mode changes nothing.
std::string mode_ignored_by() {
  std::string names;
  for (const PolicyDescription& d : kv_policy_list())
    if (!d.mode_applies) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

// Adds one knob's flag, bound by the type of its member.
struct KnobFlag {
  CLI::App& app;
  PolicyParams& params;
  std::string& pruning_mode;
  const PolicyKnob& knob;
  std::string help;
  std::string env;  // env_note(knob) where the command reads the variable, else empty

  void operator()(int64_t PolicyParams::*m) const { numeric(params.*m); }
  void operator()(double PolicyParams::*m) const { numeric(params.*m); }
  void operator()(uint64_t PolicyParams::*m) const { numeric(params.*m); }
  // Unset means the policy's own default, which the help names.
  void operator()(std::optional<int64_t> PolicyParams::*m) const {
    app.add_option(knob.flag, params.*m, help + " (default: " + knob.default_value + ")" + env);
  }
  void operator()(bool PolicyParams::*m) const { app.add_flag(knob.flag, params.*m, help + env); }
  // A name, which the command parses (finish_kv_options, after the environment).
  void operator()(std::optional<PruningMode> PolicyParams::*) const {
    app.add_option(knob.flag, pruning_mode,
                   help + " (default: " + knob.default_value + "; " + mode_ignored_by() + " ignore it)" + env);
  }

  template <class T>
  void numeric(T& value) const {
    app.add_option(knob.flag, value, help + env)->capture_default_str();
  }
};

}  // namespace

void add_kv_knob_option(CLI::App& app, const PolicyKnob& knob, PolicyParams& params, std::string& pruning_mode,
                        const std::string& help, bool reads_env) {
  std::visit(KnobFlag{app, params, pruning_mode, knob, help, reads_env ? env_note(knob) : ""}, knob.member);
}

void add_kv_knob_options(CLI::App& app, KvOptions& kv) {
  for (const PolicyKnob& k : kv_shared_params())
    add_kv_knob_option(app, k, kv.settings.params, kv.pruning_mode, k.description, true);
  // A policy's own knob says which policies read it: "snapkv, rkv: w, the last queries ...".
  for (const PolicyKnob& k : kv_policy_knobs())
    add_kv_knob_option(app, k, kv.settings.params, kv.pruning_mode, kv_knob_readers(k) + ": " + k.description, true);
}

}  // namespace triattn::cli
