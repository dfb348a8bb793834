#include "cli/kv_environment.h"

#include <charconv>
#include <cstdlib>

#include "core/error.h"
#include "kv/keep_set.h"

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
  struct Knob {
    const char* var;
    const char* flag;
    int64_t* value;
  };
  for (const Knob& k : {Knob{"TRIATTN_RUNTIME_KV_BUDGET", "--kv-budget", &s.params.budget},
                        Knob{"TRIATTN_RUNTIME_DIVIDE_LENGTH", "--divide-length", &s.params.divide_length},
                        Knob{"TRIATTN_RUNTIME_WINDOW_SIZE", "--window", &s.params.window}})
    if (const char* v = env(k.var); v && !flag_given(k.flag)) *k.value = env_tokens(k.var, v);
  if (const char* v = env("TRIATTN_RUNTIME_SPARSE_STATS_PATH"); v && !flag_given("--stats")) s.stats_path = v;
  if (const char* v = env("TRIATTN_RUNTIME_PRUNING_MODE"); v && !flag_given("--pruning-mode")) {
    auto mode = pruning_mode_from_name(v);
    if (!mode)
      fail("environment variable TRIATTN_RUNTIME_PRUNING_MODE='", v, "' is not a pruning mode (", pruning_mode_names(),
           ")");
    s.params.mode = *mode;
  }
}

}  // namespace triattn::cli
