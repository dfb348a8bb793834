// Validating a stats file against the model it is about to be used with (stats_file.h):
// shape and RoPE from the config, then whether the weights are the ones it was calibrated on.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "calib/stats_file.h"
#include "calib/stats_formats.h"
#include "core/error.h"
#include "model/model.h"
#include "model/weights_fingerprint.h"

namespace triattn {

namespace {


std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Two decimals, or as many more as it takes not to print a refused value as the threshold.
std::string similarity_text(double sim) {
  int digits = 2;
  while (digits < 6 && std::strtod(fixed(sim, digits).c_str(), nullptr) >= kSameWeightsSimilarity) ++digits;
  return fixed(sim, digits);
}

std::string recalibrate_hint(const Model& model, const std::string& path) {
  return "recalibrate with `triattn calibrate -m " + (model.path().empty() ? std::string("MODEL") : model.path()) +
         " --input TEXT -o " + path + "`";
}

// The .pt and .npz do not record KV heads; the model does (needed for GQA grouping).
std::shared_ptr<const HeadStats> with_kv_heads(const LoadedStats& l, const ModelConfig& cfg) {
  if (l.stats->n_kv_heads > 0) return l.stats;
  auto s = std::make_shared<HeadStats>(*l.stats);
  s->n_kv_heads = cfg.n_kv_heads;
  return s;
}

}  // namespace

void check_stats_match(const LoadedStats& loaded, const ModelConfig& cfg, const std::string& path) {
  const StatsInfo& i = loaded.info;
  std::vector<std::string> bad;
  auto cmp_int = [&](const char* field, int file, int model) {
    if (file != model) bad.push_back(std::string(field) + " " + std::to_string(file) + " (model: " + std::to_string(model) + ")");
  };
  cmp_int("n_layers", i.n_layers, cfg.n_layers);
  cmp_int("n_heads", i.n_heads, cfg.n_heads);
  cmp_int("head_dim", i.head_dim, cfg.head_dim);
  // The bands and the pass statistics depend on how many coordinates rotate. The foreign
  // formats have no pass statistics, so a partial-RoPE model refuses them (reported as its rotary_dim).
  if (loaded.format != StatsFormat::Triattn && cfg.rotary_dims() < cfg.head_dim)
    bad.push_back("rotary_dim: the model rotates " + std::to_string(cfg.rotary_dims()) + " of its " +
                  std::to_string(cfg.head_dim) + " coordinates, and the " + stats_format_info(loaded.format).description +
                  " format holds no statistics of the unrotated ones");
  else
    cmp_int("rotary_dim", i.rotary_dims(), cfg.rotary_dims());
  // Each field only where the file records it: the foreign formats (and files converted from
  // them) know fewer (calib/stats_formats.h); unknown fields are "" or 0.
  if (i.n_kv_heads > 0) cmp_int("n_kv_heads", i.n_kv_heads, cfg.n_kv_heads);
  if (!i.architecture.empty() && i.architecture != cfg.arch)
    bad.push_back("architecture '" + i.architecture + "' (model: '" + cfg.arch + "')");
  if (i.rope_theta > 0 && std::abs(i.rope_theta - cfg.rope_theta) > 1e-6 * std::abs(static_cast<double>(cfg.rope_theta)))
    bad.push_back("rope_theta " + exact_number_text(i.rope_theta) + " (model: " + exact_number_text(cfg.rope_theta) + ")");
  {
    // Compare what scoring actually uses (ω_f after scaling), so equivalent descriptions of the
    // same scaling (HF rope_scaling vs GGUF rope_freqs factors) are not refused.
    if (i.head_dim == cfg.head_dim && i.rotary_dims() == cfg.rotary_dims()) {
      const auto freqs = cfg.rope_freqs();
      for (size_t f = 0; f < freqs.size() && f < i.rope_freqs.size(); ++f)
        if (std::abs(i.rope_freqs[f] - freqs[f]) > 1e-5f * std::abs(freqs[f])) {
          bad.push_back("rope scaling '" + i.rope_scaling + "' (model: '" + describe_rope_scaling(cfg.rope_scaling) +
                        "'; band " + std::to_string(f) + " frequency " + exact_number_text(i.rope_freqs[f]) + " vs " + exact_number_text(freqs[f]) + ")");
          break;
        }
    }
    // A file that names its scored layers must name this model's full-attention layers (a file
    // without the field predates it, or the model has no sliding layers: every layer).
    const std::vector<int> full = cfg.has_uncompressed_layers() ? cfg.full_attention_layers() : std::vector<int>{};
    if (!i.scored_layers.empty() && i.n_layers == cfg.n_layers && i.scored_layers != full)
      bad.push_back("scored layers " + join_layers(i.scored_layers) + " (model's full-attention layers: " +
                    (full.empty() ? std::string("all") : join_layers(full)) + ")");
    // 1e-6 relative: TRIA v2 stores it as f32.
    if (i.rope_attn_factor > 0 && std::abs(i.rope_attn_factor - cfg.rope_attn_factor()) > 1e-6 * cfg.rope_attn_factor())
      bad.push_back("rope_attn_factor " + exact_number_text(i.rope_attn_factor) + " (model: " + exact_number_text(cfg.rope_attn_factor()) + ")");
  }
  if (bad.empty()) return;
  std::string msg;
  for (const auto& b : bad) msg += (msg.empty() ? "" : ", ") + b;
  fail(path, ": stats file does not match the model ", cfg.name.empty() ? cfg.arch : "'" + cfg.name + "'", ": ", msg,
       i.model_name.empty() ? std::string() : " (the stats were calibrated on '" + i.model_name + "')",
       "; run `triattn calibrate` for this model");
}

void check_stats_identity(const LoadedStats& loaded, const Model& model, const std::string& path,
                          std::vector<std::string>* warnings) {
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(path + ": " + w);
  };
  const StatsInfo& i = loaded.info;
  const std::string& name = model.config().name;
  if (i.weights_fingerprint.empty()) {
    const std::string why =
        loaded.format != StatsFormat::Triattn
            ? std::string("the ") + stats_format_info(loaded.format).description + " format records no weights fingerprint"
        : !loaded.info.source_format.empty()
            ? "it was converted from the " + std::string(stats_format_info(parse_stats_format(loaded.info.source_format)).description) +
                  " format, which records no weights fingerprint"
            : "stats format version " + std::to_string(loaded.format_version) + " records no weights fingerprint";
    warn(why + ", so it cannot be verified that these statistics were calibrated on this model (only its shape "
               "matches); " + recalibrate_hint(model, path) + " to record one");
  } else {
    const double sim = fingerprint_similarity(i.weights_fingerprint, weights_fingerprint(model));
    if (!(sim >= kSameWeightsSimilarity))
      fail(path, ": stats file was calibrated on a model with different weights (fingerprint similarity ",
           similarity_text(sim), ", the same weights give ", fixed(kSameWeightsSimilarity, 2), " or more",
           i.model_name.empty() ? std::string() : "; calibrated on '" + i.model_name + "'",
           name.empty() ? std::string() : ", this model is '" + name + "'", "): ", recalibrate_hint(model, path));
  }
  // Names differ between formats of one model (GGUF general.name vs the HF directory name),
  // so a different name alone is only worth a note.
  if (!i.model_name.empty() && !name.empty() && i.model_name != name)
    warn("the statistics were calibrated on a model named '" + i.model_name + "', this one is named '" + name + "'" +
         (i.weights_fingerprint.empty() ? std::string() : " (the weights fingerprint matches)"));
}

std::shared_ptr<const HeadStats> load_stats(const std::string& path, const Model& model,
                                            std::vector<std::string>* warnings) {
  LoadedStats l = read_stats_any(path);
  check_stats_match(l, model.config(), path);
  check_stats_identity(l, model, path, warnings);
  if (warnings) warnings->insert(warnings->end(), l.notes.begin(), l.notes.end());
  return with_kv_heads(l, model.config());
}

std::shared_ptr<const HeadStats> load_stats(const std::string& path, const ModelConfig& cfg) {
  const LoadedStats l = read_stats_any(path);
  check_stats_match(l, cfg, path);
  return with_kv_heads(l, cfg);
}

}  // namespace triattn
