#include "engine/kv_setup.h"

#include <cstdlib>
#include <string>

#include "calib/stats_file.h"
#include "core/error.h"

namespace triattn {

namespace {
int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || x < 0) fail("environment variable ", name, "='", v, "' is not a non-negative integer");
  return x;
}
}  // namespace

void apply_kv_environment(KvSettings& s) {
  s.params.budget = env_int("TRIATTN_RUNTIME_KV_BUDGET", s.params.budget);
  s.params.divide_length = env_int("TRIATTN_RUNTIME_DIVIDE_LENGTH", s.params.divide_length);
  s.params.window = env_int("TRIATTN_RUNTIME_WINDOW_SIZE", s.params.window);
  if (const char* v = std::getenv("TRIATTN_RUNTIME_SPARSE_STATS_PATH"); v && *v) s.stats_path = v;
  if (const char* v = std::getenv("TRIATTN_RUNTIME_PRUNING_MODE"); v && *v) {
    auto mode = pruning_mode_from_name(v);
    if (!mode)
      fail("environment variable TRIATTN_RUNTIME_PRUNING_MODE='", v,
           "' is not a pruning mode (per_head, per_layer_per_head, per_layer, global)");
    s.params.mode = *mode;
  }
}

AttentionGeometry attention_geometry(const ModelConfig& c) {
  AttentionGeometry g;
  g.n_layers = c.n_layers;
  g.n_heads = c.n_heads;
  g.n_kv_heads = c.n_kv_heads;
  g.head_dim = c.head_dim;
  g.rope_freqs = c.rope_freqs();
  g.attn_factor = c.rope_attn_factor();
  return g;
}

PolicyFactory::PolicyFactory(const Model& model, const KvSettings& settings)
    : settings_(settings), geometry_(attention_geometry(model.config())) {
  if (!settings_.stats_path.empty() && !settings_.params.stats)
    settings_.params.stats = load_stats(settings_.stats_path, model.config());
  make();  // validate the settings now, before any work starts
}

std::unique_ptr<KvPolicy> PolicyFactory::make() const {
  return make_kv_policy(settings_.policy, settings_.params, geometry_);
}

}  // namespace triattn
