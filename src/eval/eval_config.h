#pragma once
// The configurations one evaluation compares: every policy named in --policies at every
// budget in --budgets, policies that never evict (full) once. Each configuration gets its
// own PolicyFactory over shared settings (statistics loaded once), so any policy in the
// registry (kv_policy_list) works here without changes to eval.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv_setup.h"
#include "model/model.h"

namespace triattn::eval {

// One entry of --policies: a registered policy, with the cold tier and query-aware recall
// ("triattention+recall") or without.
struct PolicyChoice {
  std::string name;
  bool recall = false;
  // "triattention", "triattention+recall"
  std::string label() const;
  friend bool operator==(const PolicyChoice&, const PolicyChoice&) = default;
};

struct EvalConfig {
  std::string policy;
  int64_t budget = 0;  // 0: a policy that does not prune (the budget means nothing to it)
  // The reference's own KV type (--reference-kv-type); nullopt: the run's --kv-type.
  std::optional<DType> kv_type = std::nullopt;
  bool recall = false;  // KvSettings::recall.on
  bool prunes() const { return budget > 0; }
  // "triattention", "triattention+recall": one series of the plots.
  std::string policy_name() const;
  // "full", "full[f16]" (a reference in its own KV type), "triattention+recall": the
  // reports' policy column.
  std::string policy_label() const;
  // "full", "triattention@128", "full[f16]", "triattention+recall@128"
  std::string label() const;
};

// "a,b+recall,c" -> choices, "all" -> every registered policy (without recall). Error naming
// an unknown policy and listing the known ones, an unknown suffix, or recall on a policy
// that evicts nothing (there is nothing to recall).
std::vector<PolicyChoice> parse_policies(const std::string& list);
// Error unless every budget is a whole number >= 1.
std::vector<int64_t> check_budgets(const std::vector<int64_t>& budgets);

// The configurations in a fixed order: `full` first (always: it is the reference every
// other configuration is compared with), then each policy in the order given, budgets
// ascending. A policy that prunes needs at least one budget (Error otherwise).
// reference_kv: the reference runs full attention in this KV type instead of the run's, and
// full attention in the run's type follows it (what a KV type costs, e.g. q8_0 against f16).
std::vector<EvalConfig> make_configs(const std::vector<PolicyChoice>& policies, std::vector<int64_t> budgets,
                                     std::optional<DType> reference_kv = std::nullopt);

// One PolicyFactory per configuration, sharing the statistics (loaded once from
// base.stats_path, validated against the model). Error (from the registry) for a policy
// that needs statistics when none were given, before any work starts.
class ConfigFactories {
 public:
  ConfigFactories(const Model& model, const KvSettings& base, const std::vector<EvalConfig>& configs);
  const PolicyFactory& at(size_t i) const { return *factories_[i]; }
  const std::vector<EvalConfig>& configs() const { return configs_; }
  size_t size() const { return configs_.size(); }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<EvalConfig> configs_;
  std::vector<std::unique_ptr<PolicyFactory>> factories_;
  std::vector<std::string> warnings_;
};

}  // namespace triattn::eval

namespace triattn::eval {
// The shared knobs of a run for results.json (divide length, window, sink and pruning mode
// or "policy default" where unset, protect-prompt, KV type, statistics file).
nlohmann::json settings_json(const KvSettings& s);
}  // namespace triattn::eval
