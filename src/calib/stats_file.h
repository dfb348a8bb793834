#pragma once
// The calibration stats file (DESIGN §3): safetensors holding, f32 and band-indexed by
// frequency ("half" pairing: band f = (x[f], x[f + d/2])),
//   q_mean_real, q_mean_imag, q_abs_mean, q_mrl   [n_layers, n_heads, d/2]
//   k_mean_real, k_mean_imag, k_abs_mean, k_mrl   [n_layers, n_kv_heads, d/2]
//   rope_freqs                                    [d/2]  (ω_f after scaling, for validation)
// where *_mrl = |mean| / abs_mean (R_f, derived, for analysis). __metadata__ (strings):
//   format "triattn-stats", format_version "1", architecture, model_name, n_layers, n_heads,
//   n_kv_heads, head_dim, rope_theta, rope_scaling, rope_attn_factor, token_count,
//   input_hash ("fnv1a64:<16 hex>" of the calibration token ids), pairing "half".
// Loading validates against the model and refuses a mismatch naming each field and both values.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kv/policy.h"
#include "model/config.h"

namespace triattn {

inline constexpr const char* kStatsFormatName = "triattn-stats";
inline constexpr int kStatsFormatVersion = 1;

// Identity of the model and the calibration run recorded in (or read from) a stats file.
struct StatsInfo {
  std::string architecture, model_name;
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  double rope_theta = 0;
  std::string rope_scaling;  // describe_rope_scaling()
  double rope_attn_factor = 1;
  std::vector<float> rope_freqs;
  int64_t token_count = 0;
  std::string input_hash;
};

struct LoadedStats {
  std::shared_ptr<const HeadStats> stats;
  StatsInfo info;
  bool official_pt = false;  // read from the official implementation's .pt (fewer fields known)
};

// FNV-1a 64 over the token ids as little-endian int32: identifies the calibration input.
uint64_t fnv1a64_tokens(std::span<const int32_t> tokens);
std::string format_input_hash(uint64_t h);  // "fnv1a64:%016x"
std::string describe_rope_scaling(const RopeScaling& s);
StatsInfo stats_info_for(const ModelConfig& cfg, int64_t token_count, uint64_t input_hash);

void write_stats_file(const std::string& path, const HeadStats& stats, const StatsInfo& info);
// Either format: safetensors (ours) or the official torch .pt zip (by magic bytes).
LoadedStats read_stats_any(const std::string& path);
// Throws Error naming every field that differs from the model (with both values).
void check_stats_match(const LoadedStats& loaded, const ModelConfig& cfg, const std::string& path);
// What the engine calls: read (either format), validate against cfg, return the statistics.
std::shared_ptr<const HeadStats> load_stats(const std::string& path, const ModelConfig& cfg);

}  // namespace triattn
