// triattn policies [--json]: every KV policy of the registry with what it needs observed, its
// default pruning mode, its own parameters and their defaults, then the budget rules they all
// share. Everything printed comes from the policies' descriptions (kv_policy_list() /
// kv_shared_params()), as the flags and the server's fields do, so the listing cannot drift
// from what --kv-policy accepts.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "kv/policy.h"

namespace triattn::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string needs_text(const PolicyDescription& p) {
  std::string s;
  const auto add = [&s](const char* what) { s += (s.empty() ? "" : ", ") + std::string(what); };
  if (p.needs_stats)
    add(p.online_stats ? "query statistics (--stats, from `triattn calibrate`, or auto: measured from the sequence)"
                       : "calibration statistics (--stats, from `triattn calibrate`)");
  if (p.needs & kNeedQueries) add("recent post-RoPE queries (reported by the forward pass)");
  if (p.needs & kNeedAttention) add("attention weights of every query (reported by the forward pass)");
  return s.empty() ? "nothing" : s;
}

std::string mode_text(const PolicyDescription& p) {
  if (p.mode_applies) return "default pruning mode " + std::string(pruning_mode_name(p.default_mode));
  return p.prunes ? "any pruning mode gives the same keep sets (every stream keeps the same positions)"
                  : "never prunes (budget rules and pruning mode unused)";
}

ojson param_json(const PolicyKnob& p) {
  return {{"flag", p.flag}, {"field", knob_field(p)}, {"default", p.default_value}, {"description", p.description}};
}

ojson listing_json() {
  ojson policies = ojson::array();
  for (const PolicyDescription& p : kv_policy_list()) {
    ojson params = ojson::array();
    for (const PolicyKnob& q : p.params) params.push_back(param_json(q));
    policies.push_back({{"name", p.name},
                        {"description", p.description},
                        {"prunes", p.prunes},
                        {"needs", {{"stats", p.needs_stats},
                                   {"stats_auto", p.online_stats},
                                   {"queries", (p.needs & kNeedQueries) != 0},
                                   {"attention", (p.needs & kNeedAttention) != 0}}},
                        {"pruning_mode_applies", p.mode_applies},
                        {"default_pruning_mode", p.mode_applies ? ojson(pruning_mode_name(p.default_mode)) : ojson()},
                        {"default_sink", p.default_sink},
                        {"parameters", params}});
  }
  ojson shared = ojson::array();
  for (const PolicyKnob& q : kv_shared_params()) shared.push_back(param_json(q));
  ojson modes = ojson::array();
  for (PruningMode m : {PruningMode::PerHead, PruningMode::PerLayerPerHead, PruningMode::PerLayer, PruningMode::Global})
    modes.push_back(pruning_mode_name(m));
  return {{"policies", policies}, {"shared_parameters", shared}, {"pruning_modes", modes}};
}

void print_param(const PolicyKnob& q) {
  std::printf("    %-16s %s (default: %s)\n", q.flag.c_str(), q.description.c_str(), q.default_value.c_str());
}

void print_listing() {
  std::printf("KV policies (--kv-policy NAME):\n\n");
  for (const PolicyDescription& p : kv_policy_list()) {
    std::printf("  %s\n    %s\n    needs: %s\n    %s", p.name.c_str(), p.description.c_str(), needs_text(p).c_str(),
                mode_text(p).c_str());
    if (p.prunes && p.default_sink != 0) std::printf("; --sink default %lld", static_cast<long long>(p.default_sink));
    std::printf("\n");
    for (const PolicyKnob& q : p.params) print_param(q);
    std::printf("\n");
  }
  std::printf("Budget rules shared by every policy that prunes (docs/design.md, \"Pruning\"):\n");
  for (const PolicyKnob& q : kv_shared_params()) print_param(q);
}

}  // namespace

int cmd_policies(const std::vector<std::string>& args) {
  CLI::App app("list the KV policies, what each needs, their parameters and defaults", "triattn policies");
  bool as_json = false;
  app.add_flag("--json", as_json, "print one JSON object instead of the listing");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (as_json)
    std::cout << listing_json().dump(1) << "\n";
  else
    print_listing();
  return 0;
}

}  // namespace triattn::cli
