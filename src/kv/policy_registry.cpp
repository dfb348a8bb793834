// The one list of KV policies feeding CLI, server, eval and tests.
#include <array>

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policies/policies.h"
#include "kv/policy.h"

namespace triattn {
namespace {

using Factory = std::unique_ptr<KvPolicy> (*)(const PolicyParams&, const AttentionGeometry&);

struct Entry {
  PolicyInfo info;
  Factory make;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {{"full", "full attention: never evicts (reference quality, unbounded memory)", false, false},
       make_full_policy},
      {{"triattention",
        "TriAttention: keeps the keys that calibrated query statistics predict future queries "
        "will attend to (needs --stats)",
        true, true},
       make_triattention_policy},
  };
  return e;
}

constexpr std::array<std::pair<PruningMode, std::string_view>, 4> kModeNames = {{
    {PruningMode::PerHead, "per_head"},
    {PruningMode::PerLayerPerHead, "per_layer_per_head"},
    {PruningMode::PerLayer, "per_layer"},
    {PruningMode::Global, "global"},
}};

}  // namespace

const std::vector<PolicyInfo>& kv_policy_list() {
  static const std::vector<PolicyInfo> list = [] {
    std::vector<PolicyInfo> l;
    for (const auto& e : entries()) l.push_back(e.info);
    return l;
  }();
  return list;
}

std::unique_ptr<KvPolicy> make_kv_policy(const std::string& name, const PolicyParams& params,
                                         const AttentionGeometry& geometry) {
  for (const auto& e : entries()) {
    if (e.info.name != name) continue;
    if (e.info.prunes) validate_budget_params(params);  // a bad knob is named before missing stats
    if (e.info.needs_stats && !params.stats)
      fail("KV policy '", name,
           "' needs calibration statistics: run `triattn calibrate -m MODEL --input FILE -o STATS` "
           "once for this model, then pass --stats STATS");
    return e.make(params, geometry);
  }
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  fail("unknown KV policy '", name, "' (known: ", known, ")");
}

std::optional<PruningMode> pruning_mode_from_name(std::string_view name) {
  for (const auto& [mode, n] : kModeNames)
    if (n == name) return mode;
  return std::nullopt;
}

std::string_view pruning_mode_name(PruningMode mode) {
  for (const auto& [m, n] : kModeNames)
    if (m == mode) return n;
  return "?";
}

std::string pruning_mode_names() {
  std::string s;
  for (const auto& [m, n] : kModeNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace triattn
