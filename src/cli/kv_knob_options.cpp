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
  KvOptions& kv;
  const PolicyKnob& knob;
  std::string help;

  void operator()(int64_t PolicyParams::*m) const { numeric(kv.settings.params.*m); }
  void operator()(double PolicyParams::*m) const { numeric(kv.settings.params.*m); }
  void operator()(uint64_t PolicyParams::*m) const { numeric(kv.settings.params.*m); }
  // Unset means the policy's own default, which the help names.
  void operator()(std::optional<int64_t> PolicyParams::*m) const {
    app.add_option(knob.flag, kv.settings.params.*m, help + " (default: " + knob.default_value + ")" + env_note(knob));
  }
  void operator()(bool PolicyParams::*m) const { app.add_flag(knob.flag, kv.settings.params.*m, help); }
  // A name, parsed after the environment is read (finish_kv_options).
  void operator()(std::optional<PruningMode> PolicyParams::*) const {
    app.add_option(knob.flag, kv.pruning_mode,
                   help + " (default: " + knob.default_value + "; " + mode_ignored_by() + " ignore it)" +
                       env_note(knob));
  }

  template <class T>
  void numeric(T& value) const {
    app.add_option(knob.flag, value, help + env_note(knob))->capture_default_str();
  }
};

}  // namespace

void add_kv_knob_options(CLI::App& app, KvOptions& kv) {
  for (const PolicyKnob& k : kv_shared_params()) std::visit(KnobFlag{app, kv, k, k.description}, k.member);
  // A policy's own knob says which policies read it: "snapkv, rkv: w, the last queries ...".
  for (const PolicyKnob& k : kv_policy_knobs())
    std::visit(KnobFlag{app, kv, k, kv_knob_readers(k) + ": " + k.description}, k.member);
}

}  // namespace triattn::cli
