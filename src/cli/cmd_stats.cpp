// triattn stats: what a statistics file holds (`stats info`), and the same statistics in
// another format (`stats convert`): ours, the official .pt and MLX .npz, TRIA v1 and v2
// (calib/stats_formats.h).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "calib/stats_file.h"
#include "calib/stats_formats.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"

namespace triattn::cli {

namespace {

// Mean R_f = |mean q_f| / mean |q_f| over the heads and bands of each layer.
std::vector<double> stats_mean_r_per_layer(const HeadStats& s) {
  std::vector<double> r(static_cast<size_t>(s.n_layers), 0.0);
  const size_t per_layer = static_cast<size_t>(s.n_heads) * s.bands();
  for (int l = 0; l < s.n_layers; ++l) {
    double sum = 0;
    for (size_t i = l * per_layer; i < (l + 1) * per_layer; ++i)
      sum += s.q_abs_mean[i] > 0 ? std::hypot(s.q_mean_real[i], s.q_mean_imag[i]) / s.q_abs_mean[i] : 0.0;
    r[l] = per_layer ? sum / per_layer : 0.0;
  }
  return r;
}

nlohmann::json stats_info_json(const LoadedStats& l) {
  const StatsInfo& i = l.info;
  const HeadStats& s = *l.stats;
  nlohmann::json j;
  j["format"] = stats_format_name(l.format);
  j["format_description"] = stats_format_info(l.format).description;
  if (l.format_version) j["format_version"] = l.format_version;
  if (!i.source_format.empty() && l.format == StatsFormat::Triattn) j["source_format"] = i.source_format;
  // Unknown fields are null: the format does not record them.
  auto known = [](bool k, auto v) { return k ? nlohmann::json(v) : nlohmann::json(nullptr); };
  j["architecture"] = known(!i.architecture.empty(), i.architecture);
  j["model_name"] = known(!i.model_name.empty(), i.model_name);
  j["n_layers"] = s.n_layers;
  j["n_heads"] = s.n_heads;
  j["n_kv_heads"] = known(s.n_kv_heads > 0, s.n_kv_heads);
  j["head_dim"] = s.head_dim;
  j["rotary_dim"] = s.rotary_dims();
  j["bands"] = s.bands();
  j["rope_theta"] = known(i.rope_theta > 0, i.rope_theta);
  j["rope_scaling"] = known(!i.rope_scaling.empty(), i.rope_scaling);
  j["rope_attn_factor"] = known(i.rope_attn_factor > 0, i.rope_attn_factor);
  j["token_count"] = known(i.token_count > 0, i.token_count);
  j["input_hash"] = known(!i.input_hash.empty(), i.input_hash);
  j["weights_fingerprint"] = !i.weights_fingerprint.empty();
  j["key_statistics"] = !s.k_mean_real.empty();
  j["scored_layers"] = i.scored_layers;
  j["mean_r_per_layer"] = stats_mean_r_per_layer(s);
  j["notes"] = l.notes;
  return j;
}

void stats_print_info(const std::string& path, const nlohmann::json& j) {
  auto text = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string("(not recorded)");
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return std::string(v.get<bool>() ? "yes" : "no");
    return v.dump();
  };
  std::printf("%s\n", path.c_str());
  std::printf("  format              %s (%s%s)\n", j["format"].get<std::string>().c_str(),
              j["format_description"].get<std::string>().c_str(),
              j.contains("format_version") ? (", version " + j["format_version"].dump()).c_str() : "");
  if (j.contains("source_format")) std::printf("  converted from      %s\n", j["source_format"].get<std::string>().c_str());
  for (const char* k : {"architecture", "model_name", "n_layers", "n_heads", "n_kv_heads", "head_dim", "rotary_dim",
                        "bands", "rope_theta", "rope_scaling", "rope_attn_factor", "token_count", "input_hash",
                        "weights_fingerprint", "key_statistics"})
    std::printf("  %-19s %s\n", k, text(j[k]).c_str());
  if (!j["scored_layers"].empty()) std::printf("  %-19s %s\n", "scored_layers", j["scored_layers"].dump().c_str());
  std::printf("  mean R per layer (|mean q_f| / mean |q_f|, over heads and bands):\n");
  const auto& r = j["mean_r_per_layer"];
  for (size_t l = 0; l < r.size(); ++l) std::printf("    layer %3zu  %.4f\n", l, r[l].get<double>());
  for (const auto& n : j["notes"]) std::printf("  note: %s\n", n.get<std::string>().c_str());
}

int stats_run_info(const std::vector<std::string>& args) {
  CLI::App app{"Describe a statistics file of any format: its format, the model identity it records, the shape and "
               "the mean R per layer",
               "triattn stats info"};
  std::string path;
  bool json = false;
  app.add_option("file", path, "statistics file (.safetensors, .pt, .npz, .triattention, TRIA .bin)")->required();
  app.add_flag("--json", json, "print JSON instead of text (unrecorded fields are null)");
  if (int rc = parse(app, args); rc >= 0) return rc;
  const LoadedStats l = read_stats_any(path);
  const nlohmann::json j = stats_info_json(l);
  if (json)
    std::cout << j.dump(1) << "\n";
  else
    stats_print_info(path, j);
  return 0;
}

// A field the source may not record, given on the command line: fills it when unknown,
// must agree when known.
template <class T>
void stats_supply(const char* flag, const std::optional<T>& given, T& field, const std::string& in) {
  if (!given) return;
  if (field > 0 && field != *given)
    fail(flag, " ", *given, ": ", in, " records ", field, " (the flag only supplies what the source does not record)");
  field = *given;
}

int stats_run_convert(const std::vector<std::string>& args) {
  CLI::App app{"Write the statistics of IN in another format: triattn (.safetensors), pt, npz, tria-v1 "
               "(.triattention), tria-v2 (.bin)",
               "triattn stats convert"};
  std::string in, out, to;
  std::optional<int> kv_heads;
  std::optional<double> rope_theta, attn_factor;
  app.add_option("in", in, "statistics file of any format")->required();
  app.add_option("out", out, "file to write")->required();
  app.add_option("--to", to, "output format (default: from OUT's extension): triattn, pt, npz, tria-v1, tria-v2");
  app.add_option("--kv-heads", kv_heads, "KV head count, for a source that does not record it (.pt, .npz) and a "
                                         "target that does (tria-v1, tria-v2)");
  app.add_option("--rope-theta", rope_theta, "RoPE theta, for a source that does not record it");
  app.add_option("--rope-attn-factor", attn_factor, "RoPE attention factor (YaRN mscale), for a source that does not "
                                                    "record it");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (kv_heads && *kv_heads < 1) fail("--kv-heads ", *kv_heads, " must be at least 1");
  if (rope_theta && !(std::isfinite(*rope_theta) && *rope_theta > 0)) fail("--rope-theta must be finite and positive");
  if (attn_factor && !(std::isfinite(*attn_factor) && *attn_factor > 0))
    fail("--rope-attn-factor must be finite and positive");
  const StatsFormat format = to.empty() ? stats_format_for_path(out) : parse_stats_format(to);
  LoadedStats l = read_stats_any(in);
  HeadStats s = *l.stats;
  StatsInfo info = l.info;
  stats_supply("--kv-heads", kv_heads, s.n_kv_heads, in);
  info.n_kv_heads = s.n_kv_heads;
  stats_supply("--rope-theta", rope_theta, info.rope_theta, in);
  stats_supply("--rope-attn-factor", attn_factor, info.rope_attn_factor, in);
  if (s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads != 0)
    fail("--kv-heads ", s.n_kv_heads, " does not divide the ", s.n_heads, " query heads");
  for (const std::string& n : l.notes) std::cerr << "note: " << n << "\n";
  std::vector<std::string> dropped;
  write_stats_as(format, out, s, info, &dropped);
  std::cout << "wrote " << out << " (" << stats_format_info(format).description << ", " << s.n_layers << " layers x "
            << s.n_heads << " heads x " << s.bands() << " bands) from " << in << " ("
            << stats_format_info(l.format).description << ")\n";
  for (const std::string& d : dropped) std::cerr << "note: the target format cannot hold " << d << "; not written\n";
  return 0;
}

}  // namespace

int cmd_stats(const std::vector<std::string>& args) {
  static const char* kUsage =
      "usage: triattn stats info FILE [--json]\n"
      "       triattn stats convert IN OUT [--to FORMAT] [--kv-heads N] [--rope-theta X] [--rope-attn-factor X]\n"
      "formats: triattn (.safetensors), pt (.pt), npz (.npz), tria-v1 (.triattention), tria-v2 (.bin)\n";
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "info") return stats_run_info(rest);
  if (args[0] == "convert") return stats_run_convert(rest);
  fail("unknown subcommand '", args[0], "' (info or convert)\n", kUsage);
}

}  // namespace triattn::cli
