#include "eval/eval_config.h"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "calib/stats_embedded.h"
#include "core/error.h"

namespace triattn::eval {

namespace {
const PolicyInfo* find_policy(const std::string& name) {
  for (const PolicyInfo& p : kv_policy_list())
    if (p.name == name) return &p;
  return nullptr;
}

constexpr std::string_view kRecallSuffix = "+recall";

std::string known_policies() {
  std::string s;
  for (const PolicyInfo& p : kv_policy_list()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}
}  // namespace

std::string PolicyChoice::label() const { return recall ? name + std::string(kRecallSuffix) : name; }

std::string EvalConfig::policy_name() const { return PolicyChoice{policy, recall}.label(); }

std::string EvalConfig::policy_label() const {
  return kv_type ? policy_name() + "[" + std::string(dtype_name(*kv_type)) + "]" : policy_name();
}

std::string EvalConfig::label() const {
  return budget > 0 ? policy_label() + "@" + std::to_string(budget) : policy_label();
}

namespace {
// "triattention+recall" -> {triattention, recall}; Error for an unknown suffix, an unknown
// policy, or recall on a policy that never evicts.
PolicyChoice parse_choice(const std::string& entry) {
  PolicyChoice c{entry, false};
  if (const size_t plus = entry.find('+'); plus != std::string::npos) {
    const std::string suffix = entry.substr(plus);
    if (suffix != kRecallSuffix)
      fail("--policies: unknown suffix '", suffix, "' in '", entry, "' (", kRecallSuffix,
           " is the only one: the policy with the cold tier and query-aware recall)");
    c = {entry.substr(0, plus), true};
  }
  const PolicyInfo* info = find_policy(c.name);
  if (!info) fail("--policies: unknown KV policy '", c.name, "' (known: ", known_policies(), ", or all)");
  if (c.recall && !info->prunes)
    fail("--policies: '", entry, "': the '", c.name, "' policy evicts nothing, so there is nothing to recall");
  return c;
}
}  // namespace

std::vector<PolicyChoice> parse_policies(const std::string& list) {
  std::vector<PolicyChoice> out;
  auto add = [&out](const PolicyChoice& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) continue;
    if (name == "all") {
      for (const PolicyInfo& p : kv_policy_list()) add({p.name, false});
      continue;
    }
    add(parse_choice(name));
  }
  if (out.empty()) fail("--policies is empty (known: ", known_policies(), ", or all)");
  return out;
}

std::vector<int64_t> check_budgets(const std::vector<int64_t>& budgets) {
  for (int64_t b : budgets)
    if (b < 1) fail("--budgets: every budget must be at least 1 token, got ", b);
  return budgets;
}

std::vector<EvalConfig> make_configs(const std::vector<PolicyChoice>& policies, std::vector<int64_t> budgets,
                                     std::optional<DType> reference_kv) {
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  std::vector<EvalConfig> out{{"full", 0, reference_kv}};
  if (reference_kv) out.push_back({"full", 0});
  for (const PolicyChoice& choice : policies) {
    const PolicyInfo* info = find_policy(choice.name);
    if (!info) fail("unknown KV policy '", choice.name, "' (known: ", known_policies(), ")");
    if (!info->prunes) {
      if (choice.recall) fail("'", choice.label(), "': the '", choice.name, "' policy evicts nothing, so there is nothing to recall");
      if (choice.name != "full") out.push_back({choice.name, 0});
      continue;
    }
    if (budgets.empty()) fail("policy '", choice.label(), "' evicts: give --budgets (e.g. --budgets 64,128,256)");
    for (int64_t b : budgets) out.push_back({choice.name, b, std::nullopt, choice.recall});
  }
  return out;
}

ConfigFactories::ConfigFactories(const Model& model, const KvSettings& base, const std::vector<EvalConfig>& configs)
    : configs_(configs) {
  KvSettings shared = base;
  if (!shared.stats_path.empty() && !shared.params.stats) {
    KvSettings probe = shared;
    probe.policy = "full";
    const PolicyFactory loader(model, probe);  // loads and checks the statistics once
    warnings_ = loader.warnings();
    shared.params.stats = loader.settings().params.stats;
  } else if (shared.stats_path.empty() && !shared.params.stats) {
    // The model's own statistics, read and checked once for every configuration that scores.
    bool scores = false;
    for (const EvalConfig& c : configs_)
      if (const PolicyDescription* d = find_kv_policy(c.policy)) scores |= d->needs_stats;
    if (scores) shared.params.stats = load_embedded_stats(model, &warnings_);
  }
  for (const EvalConfig& c : configs_) {
    KvSettings s = shared;
    s.policy = c.policy;
    if (c.budget > 0) s.params.budget = c.budget;
    if (c.kv_type) s.cache_type = *c.kv_type;
    s.recall.on = c.recall;
    try {
      factories_.push_back(std::make_unique<PolicyFactory>(model, s));
    } catch (const Error& e) {
      fail(c.label(), ": ", e.what());
    }
  }
}

}  // namespace triattn::eval

namespace triattn::eval {
nlohmann::json settings_json(const KvSettings& s) {
  nlohmann::json j;
  j["divide_length"] = s.params.divide_length;
  j["window"] = s.params.window;
  j["sink"] = s.params.sink ? nlohmann::json(*s.params.sink) : nlohmann::json("policy default");
  j["protect_prompt"] = s.params.protect_prompt;
  j["pruning_mode"] = s.params.mode ? std::string(pruning_mode_name(*s.params.mode)) : std::string("policy default");
  j["kv_type"] = std::string(dtype_name(s.cache_type));
  j["prefill_chunk"] = s.prefill_chunk;
  j["stats"] = s.stats_path;
  // What the configurations with recall (policy+recall) run with.
  j["recall_quota"] = s.recall.quota;
  j["cold_bytes"] = s.recall.cold_bytes;
  return j;
}
}  // namespace triattn::eval
