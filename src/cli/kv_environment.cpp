#include "cli/kv_environment.h"

#include <charconv>
#include <cstdlib>
#include <variant>

#include "core/error.h"
#include "kv/keep_set.h"
#include "kv/policy.h"

namespace triattn::cli {

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int64_t env_tokens(const char* name, const char* v) {
  int64_t x = -1;
  const char* end = v + std::char_traits<char>::length(v);
  const auto [p, ec] = std::from_chars(v, end, x);
  if (ec != std::errc() || p != end || x < 0 || x > kMaxBudgetTokens)
    fail("environment variable ", name, "='", v, "' is not a token count (a whole number from 0 to ",
         kMaxBudgetTokens, ")");
  return x;
}
}  // namespace

void apply_kv_environment(KvSettings& s, const std::function<bool(const char* flag)>& flag_given) {
  if (s.policy == "full") return;
  for (const PolicyKnob& k : kv_shared_params()) {  // the knobs that name a variable (PolicyKnob::env)
    const char* v = k.env.empty() ? nullptr : env(k.env.c_str());
    if (!v || flag_given(k.flag.c_str())) continue;
    if (const auto* m = std::get_if<int64_t PolicyParams::*>(&k.member)) {
      s.params.*(*m) = env_tokens(k.env.c_str(), v);
    } else if (std::holds_alternative<std::optional<PruningMode> PolicyParams::*>(k.member)) {
      auto mode = pruning_mode_from_name(v);
      if (!mode)
        fail("environment variable ", k.env, "='", v, "' is not a pruning mode (", pruning_mode_names(), ")");
      s.params.mode = *mode;
    }
  }
  if (const char* v = env("TRIATTN_RUNTIME_SPARSE_STATS_PATH"); v && !flag_given("--stats")) s.stats_path = v;
}

}  // namespace triattn::cli
