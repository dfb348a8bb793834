// The one list of KV policies feeding CLI, server, eval and tests: names, what each needs,
// its own parameters with their defaults and checks, and its factory.
#include <array>
#include <cmath>

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policies/policies.h"
#include "kv/policy.h"

namespace triattn {
namespace {

using Factory = std::unique_ptr<KvPolicy> (*)(const PolicyParams&, const AttentionGeometry&);
using Check = void (*)(const PolicyParams&);

struct Entry {
  PolicyInfo info;
  Factory make;
  Check check = nullptr;  // the policy's own knobs (the budget rules are checked for all that prune)
};

// Queries kept per query head: w · head_dim floats each, for every head of every layer.
constexpr int64_t kMaxObsWindow = 65536;
constexpr int64_t kMaxPoolKernel = 4095;

std::string fmt(double x) {
  std::string s = std::to_string(x);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

const PolicyParams kDefaults{};

PolicyParamInfo obs_window_param() {
  return {"--obs-window", std::to_string(kDefaults.obs_window),
          "w: the last queries whose attention over the cache scores it"};
}
PolicyParamInfo pool_kernel_param() {
  return {"--pool-kernel", std::to_string(kDefaults.pool_kernel),
          "max-pooling width (odd) over neighbouring candidates' scores"};
}

void check_pool_kernel(const char* who, const PolicyParams& p) {
  if (p.pool_kernel < 1 || p.pool_kernel > kMaxPoolKernel || p.pool_kernel % 2 == 0)
    fail("--pool-kernel (", who, ") must be an odd width between 1 and ", kMaxPoolKernel,
         " (it is centred on each key), got ", p.pool_kernel);
}

void check_window_knobs(const char* who, const PolicyParams& p) {
  if (p.obs_window < 1 || p.obs_window > kMaxObsWindow)
    fail("--obs-window (", who, ") must be between 1 and ", kMaxObsWindow, " queries, got ", p.obs_window);
  check_pool_kernel(who, p);
}

void check_snapkv(const PolicyParams& p) { check_window_knobs("snapkv", p); }

void check_triattention_split(const PolicyParams& p) { check_pool_kernel("triattention-split", p); }

void check_rkv(const PolicyParams& p) {
  check_window_knobs("rkv", p);
  if (!std::isfinite(p.rkv_lambda) || p.rkv_lambda < 0 || p.rkv_lambda > 1)
    fail("--rkv-lambda must be between 0 (redundancy only) and 1 (importance only), got ", fmt(p.rkv_lambda));
  if (!std::isfinite(p.rkv_threshold) || p.rkv_threshold < -1 || p.rkv_threshold > 1)
    fail("--rkv-threshold is a cosine similarity: it must be between -1 and 1, got ", fmt(p.rkv_threshold));
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = [] {
    std::vector<Entry> v;
    {
      PolicyInfo i;
      i.name = "full";
      i.description = "full attention: never evicts (reference quality, unbounded memory)";
      i.mode_applies = false;
      v.push_back({i, make_full_policy});
    }
    {
      PolicyInfo i;
      i.name = "triattention";
      i.description =
          "TriAttention: keeps the keys that calibrated query statistics predict future queries will attend "
          "to (needs --stats)";
      i.needs_stats = true;
      i.prunes = true;
      i.default_mode = PruningMode::PerHead;  // as the official implementation
      v.push_back({i, make_triattention_policy});
    }
    {
      PolicyInfo i;
      i.name = "triattention-split";
      i.description =
          "TriAttention's ranking plus, per (layer, KV head), a rescue of the prompt's keys that a query "
          "straying from the mean could single out (spread-term outliers, max-pooled, at most B/4): keeps what "
          "a long prompt's question will ask for (needs --stats)";
      i.needs_stats = true;
      i.prunes = true;
      i.mode_applies = false;  // it shares the paper's ranking across layers itself, then selects per stream
      i.params = {pool_kernel_param()};
      v.push_back({i, make_triattention_split_policy, check_triattention_split});
    }
    {
      PolicyInfo i;
      i.name = "streaming";
      i.description = "StreamingLLM: the first S tokens (attention sinks, --sink) plus the most recent ones";
      i.prunes = true;
      i.mode_applies = false;
      i.default_sink = 4;
      v.push_back({i, make_streaming_policy});
    }
    {
      PolicyInfo i;
      i.name = "h2o";
      i.description =
          "H2O: keeps the heavy hitters, the keys with the most attention accumulated since they entered "
          "(summed over the query heads of their group)";
      i.prunes = true;
      i.needs = kNeedAttention;
      v.push_back({i, make_h2o_policy});
    }
    {
      PolicyInfo i;
      i.name = "snapkv";
      i.description =
          "SnapKV: keeps the keys the last w queries attend to, their weights summed, max-pooled over "
          "neighbouring keys and summed over the group";
      i.prunes = true;
      i.needs = kNeedQueries;
      i.params = {obs_window_param(), pool_kernel_param()};
      v.push_back({i, make_snapkv_policy, check_snapkv});
    }
    {
      PolicyInfo i;
      i.name = "rkv";
      i.description =
          "R-KV: lambda * importance (SnapKV's, averaged) - (1 - lambda) * redundancy (keys' cosine similarity "
          "to the other keys)";
      i.prunes = true;
      i.needs = kNeedQueries;
      i.params = {obs_window_param(), pool_kernel_param(),
                  {"--rkv-lambda", fmt(kDefaults.rkv_lambda), "lambda: the weight of importance against redundancy"},
                  {"--rkv-threshold", fmt(kDefaults.rkv_threshold),
                   "cosine similarity above which two keys count as redundant"}};
      v.push_back({i, make_rkv_policy, check_rkv});
    }
    {
      PolicyInfo i;
      i.name = "knorm";
      i.description = "KNorm: keeps the keys with the smallest L2 norm";
      i.prunes = true;
      v.push_back({i, make_knorm_policy});
    }
    {
      PolicyInfo i;
      i.name = "tova";
      i.description = "TOVA: keeps the keys the current query attends to most (summed over the group)";
      i.prunes = true;
      i.needs = kNeedQueries;
      v.push_back({i, make_tova_policy});
    }
    {
      PolicyInfo i;
      i.name = "random";
      i.description = "random eviction, reproducible from --kv-seed (the floor every method must beat)";
      i.prunes = true;
      i.params = {{"--kv-seed", std::to_string(kDefaults.seed), "the seed of the draw"}};
      v.push_back({i, make_random_policy});
    }
    return v;
  }();
  return e;
}

const Entry* find_entry(std::string_view name) {
  for (const auto& e : entries())
    if (e.info.name == name) return &e;
  return nullptr;
}

const Entry& entry_or_fail(const std::string& name) {
  if (const Entry* e = find_entry(name)) return *e;
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  fail("unknown KV policy '", name, "' (known: ", known, ")");
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

const PolicyInfo* find_kv_policy(std::string_view name) {
  const Entry* e = find_entry(name);
  return e ? &e->info : nullptr;
}

const std::vector<PolicyParamInfo>& kv_shared_params() {
  static const std::vector<PolicyParamInfo> list = [] {
    // Per-policy defaults are named after the common one ("0; streaming: 4").
    std::string sink = "0", mode = std::string(pruning_mode_name(PruningMode::PerLayerPerHead));
    for (const auto& e : entries()) {
      if (e.info.prunes && e.info.default_sink != 0)
        sink += "; " + e.info.name + ": " + std::to_string(e.info.default_sink);
      if (e.info.mode_applies && e.info.default_mode != PruningMode::PerLayerPerHead)
        mode += "; " + e.info.name + ": " + std::string(pruning_mode_name(e.info.default_mode));
    }
    return std::vector<PolicyParamInfo>{
        {"--kv-budget", std::to_string(kDefaults.budget), "B: tokens kept per (layer, KV head) after a pruning event"},
        {"--divide-length", std::to_string(kDefaults.divide_length),
         "beta: prune back to B when an append would take the cache past B + beta"},
        {"--window", std::to_string(kDefaults.window), "W: most recent tokens always kept (clamped to B - 1)"},
        {"--sink", sink, "S: first tokens always kept"},
        {"--protect-prompt", "off", "never evict prompt tokens"},
        {"--pruning-mode", mode, "which streams share a keep set: " + pruning_mode_names()},
    };
  }();
  return list;
}

PolicyParams resolve_policy_params(const std::string& name, const PolicyParams& params) {
  const PolicyInfo& info = entry_or_fail(name).info;
  PolicyParams p = params;
  if (!p.sink) p.sink = info.default_sink;
  if (!p.mode) p.mode = info.default_mode;
  return p;
}

std::unique_ptr<KvPolicy> make_kv_policy(const std::string& name, const PolicyParams& params,
                                         const AttentionGeometry& geometry) {
  const Entry& e = entry_or_fail(name);
  const PolicyParams p = resolve_policy_params(name, params);
  if (e.info.prunes) validate_budget_params(p);  // a bad knob is named before missing stats
  if (e.check) e.check(p);
  if (e.info.needs_stats && !p.stats)
    fail("KV policy '", name,
         "' needs calibration statistics: run `triattn calibrate -m MODEL --input FILE -o STATS` "
         "once for this model, then pass --stats STATS");
  return e.make(p, geometry);
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
