#include "engine/kv_setup.h"

#include <algorithm>
#include <string>

#include "calib/stats_embedded.h"
#include "calib/stats_file.h"
#include "core/error.h"
#include "engine/online_stats.h"
#include "kv/kv_cache.h"
#include "model/kv_shape.h"

namespace triattn {

AttentionGeometry attention_geometry(const ModelConfig& c) {
  AttentionGeometry g;
  g.n_layers = c.n_layers;
  g.n_heads = c.n_heads;
  g.n_kv_heads = c.n_kv_heads;
  g.head_dim = c.head_dim;
  g.rotary_dim = c.rotary_dims();
  g.rope_freqs = c.rope_freqs();
  g.attn_factor = c.rope_attn_factor();
  g.layer_window = layer_windows(c);
  return g;
}

PolicyFactory::PolicyFactory(const Model& model, const KvSettings& settings)
    : settings_(settings),
      geometry_(attention_geometry(model.config())),
      context_limit_(settings.context_length > 0 ? settings.context_length
                                                 : std::max<int64_t>(0, model.config().context_length)) {
  // Validate the settings now, before any work starts (a server would otherwise start and
  // then fail every request): the KV type against the model's head_dim, then the policy.
  check_kv_type(settings_.cache_type, model.config().head_dim);
  for (int l = 0; l < model.config().n_layers; ++l) check_kv_type(settings_.cache_type, model.config().layer_head_dim(l));
  // The policies score and prune streams of the full layers' shape (AttentionGeometry); a
  // model whose sliding layers have other KV shapes lays its streams out by the largest.
  if (const PolicyDescription* d = find_kv_policy(settings_.policy); d && d->prunes && model.config().layer_shape_differs())
    fail("KV policy '", settings_.policy, "' does not support ", model.config().arch,
         " models whose sliding and full layers differ in KV heads or head_dim yet (use --kv-policy full)");
  if (settings_.stats_path == kStatsAuto) {
    // Policies that take no statistics ignore it, as they do a file (a server's --stats
    // auto is the default of requests that may pick any policy).
    settings_.params.stats = nullptr;
    settings_.params.online_stats = make_online_stats;
    if (const EmbeddedStats own = find_embedded_stats(model.path()))
      warnings_.push_back("--stats auto measures statistics instead of using those stored in " + own.path);
  } else if (!settings_.stats_path.empty() && !settings_.params.stats) {
    settings_.params.stats = load_stats(settings_.stats_path, model, &warnings_);
    if (const EmbeddedStats own = find_embedded_stats(model.path()))
      warnings_.push_back("--stats " + settings_.stats_path + " is used instead of the statistics stored in " +
                          own.path);
  } else if (settings_.stats_path.empty() && !settings_.params.stats) {
    // Only a policy that scores with statistics reads the model's own: the others must not
    // fail (or warn) over statistics they would never use.
    const PolicyDescription* d = find_kv_policy(settings_.policy);
    if (d && d->needs_stats) settings_.params.stats = load_embedded_stats(model, &warnings_);
  }
  make();
  if (settings_.recall.on) {
    const PolicyDescription* d = find_kv_policy(settings_.policy);
    if (!d->prunes)
      fail("--kv-recall: the '", settings_.policy, "' policy evicts nothing, so there is nothing to recall "
           "(use it with an evicting --kv-policy such as triattention)");
    if (settings_.recall.quota < 1) fail("--kv-recall-quota must be at least 1, got ", settings_.recall.quota);
    if (settings_.recall.cold_bytes < 0) fail("--kv-cold-memory must not be negative");
  }
}

int64_t PolicyFactory::memory_bound(int64_t prompt_len) const {
  SequenceInfo info;
  info.prompt_len = prompt_len;
  return make()->memory_bound(info);
}

std::unique_ptr<KvPolicy> PolicyFactory::make() const {
  return make_kv_policy(settings_.policy, settings_.params, geometry_);
}

}  // namespace triattn
