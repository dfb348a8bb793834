#include "calib/stats_formats.h"

#include <filesystem>

#include "calib/atomic_write.h"
#include "calib/npz_stats.h"
#include "calib/pt_stats_writer.h"
#include "calib/stats_container.h"
#include "calib/tria_stats.h"
#include "core/error.h"

namespace triattn {

namespace {

constexpr StatsFormatInfo kFormats[] = {
    {StatsFormat::Triattn, "triattn", ".safetensors", "triattn stats file (safetensors)"},
    {StatsFormat::OfficialPt, "pt", ".pt", "official .pt"},
    {StatsFormat::TriaV1, "tria-v1", ".triattention", "TRIA v1 (.triattention, llama.cpp TurboQuant fork)"},
    {StatsFormat::TriaV2, "tria-v2", ".bin", "TRIA v2 (triattention-ggml)"},
    {StatsFormat::MlxNpz, "npz", ".npz", "official MLX .npz"},
};

std::string names_text(bool extensions) {
  std::string s;
  for (const StatsFormatInfo& f : kFormats) s += (s.empty() ? "" : ", ") + std::string(extensions ? f.extension : f.name);
  return s;
}

}  // namespace

std::span<const StatsFormatInfo> stats_formats() { return kFormats; }

const StatsFormatInfo& stats_format_info(StatsFormat f) {
  for (const StatsFormatInfo& i : kFormats)
    if (i.format == f) return i;
  return kFormats[0];
}

const char* stats_format_name(StatsFormat f) { return stats_format_info(f).name; }

StatsFormat parse_stats_format(const std::string& name) {
  for (const StatsFormatInfo& i : kFormats)
    if (name == i.name) return i.format;
  fail("unknown statistics format '", name, "' (known: ", names_text(false), ")");
}

StatsFormat stats_format_for_path(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  for (const StatsFormatInfo& i : kFormats)
    if (ext == i.extension) return i.format;
  fail(path, ": cannot tell the statistics format from the extension '", ext, "' (known: ", names_text(true),
       "); name it with --to");
}

void require_full_rope(const HeadStats& s, StatsFormat f, const std::string& path) {
  if (s.pass_dims() > 0)
    fail(path, ": the ", stats_format_info(f).description, " format holds statistics of rotated coordinates only; these ",
         "are of a model that rotates ", s.rotary_dims(), " of its ", s.head_dim,
         " coordinates (partial RoPE), which only triattn's own format can hold");
}

void write_stats_as(StatsFormat f, const std::string& path, const HeadStats& s, const StatsInfo& info,
                    std::vector<std::string>* dropped) {
  if (f == StatsFormat::Triattn) {
    write_stats_file(path, s, info);
    return;
  }
  require_full_rope(s, f, path);
  // The same value rules as our own writer, before anything is written.
  (void)stats_payload(s, info, path);
  auto drop = [&](bool lost, const std::string& what) {
    if (lost && dropped) dropped->push_back(what);
  };
  const bool official = f == StatsFormat::OfficialPt || f == StatsFormat::MlxNpz;
  drop(!s.k_mean_real.empty(), "the key statistics (k_*)");
  drop(!info.weights_fingerprint.empty(), "the weights fingerprint (loading it will warn that the model's identity "
                                          "cannot be verified)");
  drop(!info.architecture.empty(), "the architecture '" + info.architecture + "'");
  drop(!info.rope_scaling.empty() && info.rope_scaling != "none", "the RoPE scaling '" + info.rope_scaling + "'");
  drop(info.token_count > 0, "the calibration token count and input hash");
  drop(!info.scored_layers.empty(), "the scored layers " + join_layers(info.scored_layers));
  drop(official && !info.model_name.empty(), "the model name '" + info.model_name + "'");
  drop(official && info.n_kv_heads > 0, "the KV head count");
  drop(official && info.rope_theta > 0, "RoPE theta");
  drop((official || f == StatsFormat::TriaV1) && info.rope_attn_factor > 0 && info.rope_attn_factor != 1,
       "the RoPE attention factor");
  switch (f) {
    case StatsFormat::TriaV1: write_bytes_atomically(path, tria_v1_bytes(s, info, path)); return;
    case StatsFormat::TriaV2: write_bytes_atomically(path, tria_v2_bytes(s, info, path)); return;
    case StatsFormat::MlxNpz: write_bytes_atomically(path, npz_stats_bytes(s)); return;
    case StatsFormat::OfficialPt: {
      std::string stem = std::filesystem::path(path).stem().string();
      if (stem.empty()) stem = "archive";
      write_bytes_atomically(path, pt_stats_bytes(s, stem));
      return;
    }
    case StatsFormat::Triattn: break;
  }
}

}  // namespace triattn
