#include "kv/budget_knobs.h"

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policy_knob.h"

namespace triattn {
namespace {

// `what` names the rule in words before its flag: "KV budget (--kv-budget) must be ...".
PolicyKnob tokens_knob(std::string flag, PolicyKnobMember member, int64_t min, std::string what,
                       std::string description, std::string env = {}) {
  PolicyKnob k = count_knob(flag, member, min, kMaxBudgetTokens, std::move(description));
  k.env = std::move(env);
  const std::string named = what + " (" + flag + ")";
  k.check = [named, member, min](const PolicyParams& p, std::string_view) {
    // Sink is optional: unset counts as none (resolve_policy_params fills the policy's in).
    const int64_t v = std::holds_alternative<int64_t PolicyParams::*>(member)
                          ? p.*std::get<int64_t PolicyParams::*>(member)
                          : (p.*std::get<std::optional<int64_t> PolicyParams::*>(member)).value_or(0);
    if (v < min || v > kMaxBudgetTokens)
      fail(named, " must be between ", min, " and ", kMaxBudgetTokens, " tokens, got ", v);
  };
  return k;
}

}  // namespace

const std::vector<PolicyKnob>& budget_knobs() {
  static const std::vector<PolicyKnob> knobs = [] {
    std::vector<PolicyKnob> v;
    v.push_back(tokens_knob("--kv-budget", &PolicyParams::budget, 1, "KV budget",
                            "B: tokens kept per (layer, KV head) after a pruning event", "TRIATTN_RUNTIME_KV_BUDGET"));
    v.push_back(tokens_knob("--divide-length", &PolicyParams::divide_length, 1, "divide length",
                            "beta: prune back to B when an append would take the cache past B + beta",
                            "TRIATTN_RUNTIME_DIVIDE_LENGTH"));
    v.push_back(tokens_knob("--window", &PolicyParams::window, 0, "window",
                            "W: most recent tokens always kept (clamped to B - 1)", "TRIATTN_RUNTIME_WINDOW_SIZE"));
    v.push_back(tokens_knob("--sink", &PolicyParams::sink, 0, "sink", "S: first tokens always kept"));
    PolicyKnob protect;
    protect.flag = "--protect-prompt";
    protect.member = &PolicyParams::protect_prompt;
    protect.default_value = knob_default_text(protect.member);
    protect.description = "never evict prompt tokens";
    v.push_back(protect);
    PolicyKnob mode;
    mode.flag = "--pruning-mode";
    mode.member = &PolicyParams::mode;
    mode.default_value = knob_default_text(mode.member);
    mode.description = "which streams share a keep set: " + pruning_mode_names();
    mode.env = "TRIATTN_RUNTIME_PRUNING_MODE";
    v.push_back(mode);
    return v;
  }();
  return knobs;
}

}  // namespace triattn
