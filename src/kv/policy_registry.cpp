// The one list of KV policies feeding CLI, server, eval and tests. Each policy describes itself
// in its own file (kv/policies/<name>.cpp); the list below says which exist and in what order.
#include <array>

#include "core/error.h"
#include "kv/budget_knobs.h"
#include "kv/keep_set.h"
#include "kv/policies/policies.h"
#include "kv/policy.h"

namespace triattn {
namespace {

using Describe = const PolicyDescription& (*)();
constexpr Describe kPolicies[] = {
    describe_full, describe_triattention, describe_triattention_split, describe_streaming, describe_h2o,
    describe_snapkv, describe_rkv, describe_knorm, describe_tova, describe_random,
};

const PolicyDescription& described_or_fail(const std::string& name) {
  if (const PolicyDescription* d = find_kv_policy(name)) return *d;
  std::string known;
  for (const PolicyDescription& d : kv_policy_list()) known += (known.empty() ? "" : ", ") + d.name;
  fail("unknown KV policy '", name, "' (known: ", known, ")");
}

constexpr std::array<std::pair<PruningMode, std::string_view>, 4> kModeNames = {{
    {PruningMode::PerHead, "per_head"},
    {PruningMode::PerLayerPerHead, "per_layer_per_head"},
    {PruningMode::PerLayer, "per_layer"},
    {PruningMode::Global, "global"},
}};

}  // namespace

std::string online_stats_policies() {
  std::string names;
  for (const PolicyDescription& d : kv_policy_list())
    if (d.online_stats) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

const std::vector<PolicyDescription>& kv_policy_list() {
  static const std::vector<PolicyDescription> list = [] {
    std::vector<PolicyDescription> l;
    for (Describe describe : kPolicies) l.push_back(describe());
    return l;
  }();
  return list;
}

const PolicyDescription* find_kv_policy(std::string_view name) {
  for (const PolicyDescription& d : kv_policy_list())
    if (d.name == name) return &d;
  return nullptr;
}

const std::vector<PolicyKnob>& kv_shared_params() {
  static const std::vector<PolicyKnob> list = [] {
    std::vector<PolicyKnob> knobs = budget_knobs();
    // Per-policy defaults are named after the common one ("0; streaming: 4").
    for (PolicyKnob& k : knobs) {
      const bool sink = k.flag == "--sink", mode = k.flag == "--pruning-mode";
      if (mode) k.default_value = std::string(pruning_mode_name(PruningMode::PerLayerPerHead));
      for (const PolicyDescription& d : kv_policy_list()) {
        if (sink && d.prunes && d.default_sink != 0)
          k.default_value += "; " + d.name + ": " + std::to_string(d.default_sink);
        if (mode && d.mode_applies && d.default_mode != PruningMode::PerLayerPerHead)
          k.default_value += "; " + d.name + ": " + std::string(pruning_mode_name(d.default_mode));
      }
    }
    return knobs;
  }();
  return list;
}

const std::vector<PolicyKnob>& kv_policy_knobs() {
  static const std::vector<PolicyKnob> list = [] {
    std::vector<PolicyKnob> knobs;
    for (const PolicyDescription& d : kv_policy_list())
      for (const PolicyKnob& k : d.params) {
        bool seen = false;
        for (const PolicyKnob& s : knobs) seen = seen || s.flag == k.flag;
        if (!seen) knobs.push_back(k);
      }
    return knobs;
  }();
  return list;
}

std::string kv_knob_readers(const PolicyKnob& knob) {
  std::string readers;
  for (const PolicyDescription& d : kv_policy_list())
    for (const PolicyKnob& k : d.params)
      if (k.flag == knob.flag) readers += (readers.empty() ? "" : ", ") + d.name;
  return readers;
}

PolicyParams resolve_policy_params(const std::string& name, const PolicyParams& params) {
  const PolicyDescription& d = described_or_fail(name);
  PolicyParams p = params;
  if (!p.sink) p.sink = d.default_sink;
  if (!p.mode) p.mode = d.default_mode;
  return p;
}

std::unique_ptr<KvPolicy> make_kv_policy(const std::string& name, const PolicyParams& params,
                                         const AttentionGeometry& geometry) {
  const PolicyDescription& d = described_or_fail(name);
  const PolicyParams p = resolve_policy_params(name, params);
  if (d.prunes) validate_budget_params(p);  // a bad knob is named before missing stats
  for (const PolicyKnob& k : d.params)
    if (k.check) k.check(p, d.name);
  if (d.needs_stats && p.online_stats && !d.online_stats)
    fail("KV policy '", name, "' cannot measure its statistics itself (--stats auto is for ", online_stats_policies(),
         "): pass --stats STATS from `triattn calibrate -m MODEL --input FILE -o STATS`");
  if (d.needs_stats && p.online_stats && p.stats)
    fail("KV policy '", name, "' was given both calibrated statistics and --stats auto: choose one");
  if (d.needs_stats && !p.stats && !p.online_stats)
    fail("KV policy '", name,
         "' needs calibration statistics: run `triattn calibrate -m MODEL --input FILE -o STATS` "
         "once for this model, then pass --stats STATS (or store them in the model: `triattn calibrate --into "
         "MODEL ...`), or --stats auto to measure them from the sequence itself");
  return d.make(p, geometry);
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

std::string_view pruning_mode_name(std::optional<PruningMode> mode) {
  return mode ? pruning_mode_name(*mode) : "default";
}

std::string pruning_mode_names() {
  std::string s;
  for (const auto& [m, n] : kModeNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace triattn
