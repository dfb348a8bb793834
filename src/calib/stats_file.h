#pragma once
// The calibration stats file (docs/design.md, Contracts): safetensors holding, f32 and
// band-indexed by frequency ("half" pairing: band f = (x[f], x[f + r/2]), r = rotary_dim,
// which is d unless the model rotates only part of each head),
//   q_mean_real, q_mean_imag, q_abs_mean, q_mrl   [n_layers, n_heads, r/2]
//   k_mean_real, k_mean_imag, k_abs_mean, k_mrl   [n_layers, n_kv_heads, r/2]
//   rope_freqs                                    [r/2]  (ω_f after scaling, for validation)
//   weights_fingerprint                           [256]  (model/weights_fingerprint.h; version 2)
//   q_pass_mean                                   [n_layers, n_heads, d − r]  (only when r < d)
//   q_pass_abs_mean                               [n_layers, n_heads]         (only when r < d)
// where q_pass_* are the mean of the unrotated query coordinates [r, d) and the mean of their
// norm, and metadata 'rotary_dim' is written only when r < d (absent: r = d).
// where *_mrl = |mean| / abs_mean (R_f, derived, for analysis). __metadata__ (strings):
//   format "triattn-stats", format_version "2", architecture, model_name, n_layers, n_heads,
//   n_kv_heads, head_dim, rope_theta, rope_scaling, rope_attn_factor, token_count,
//   input_hash ("fnv1a64:<16 hex>" of the calibration token ids), pairing "half".
// Version 1 is the same without weights_fingerprint; it still loads, with a warning that the
// model's identity cannot be verified.
// A file converted from another format (`triattn stats convert`) says so in metadata
// 'source_format' (stats_format_name) and holds only what that format knew: any of
// architecture, n_kv_heads, rope_*, token_count, input_hash, rope_freqs and the k_* tensors
// may then be absent (unknown), and nothing absent is compared with the model.
// Loading validates against the model and refuses a mismatch naming each field and both
// values; every value must obey calib/stats_values.h. Reading and writing live in
// stats_file.cpp (over calib/stats_container.h, shared with the statistics a model file
// carries: calib/stats_embedded.h), validation against a model in stats_load.cpp.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/policy.h"
#include "model/config.h"

namespace triattn {

class Model;

inline constexpr const char* kStatsFormatName = "triattn-stats";
inline constexpr int kStatsFormatVersion = 2;

// The fewest tokens a calibration may use, not counting a leading BOS. From one token,
// |mean q_f| equals mean |q_f| exactly: R_f = 1 in every band, the score's norm term vanishes
// and the "statistics" describe that one token, not the model. Two is the least that shows
// any spread at all. (Loading refuses files whose token_count, BOS included, is below this.)
inline constexpr int64_t kMinCalibrationTokens = 2;
// Below this many tokens `triattn calibrate` warns that the statistics are noisy: the
// standard error of a band's mean query is about E|q_f| / sqrt(N), 6% of the mean norm at
// 256 tokens, so a band with R_f under ~0.1 cannot be told from noise. (The committed
// 861-token calibration text of the demo is above it.)
inline constexpr int64_t kFewCalibrationTokens = 256;

// The statistics formats read and written (calib/stats_formats.h describes each).
enum class StatsFormat {
  Triattn,     // ours: safetensors, above
  OfficialPt,  // the official implementation's torch .pt (calib/pt_stats.h)
  TriaV1,      // "TRIA" version 1 of the llama.cpp TurboQuant fork, .triattention (calib/tria_stats.h)
  TriaV2,      // "TRIA" 64-byte-header layout of triattention-ggml, versions 1 and 2 (calib/tria_stats.h)
  MlxNpz,      // the official implementation's MLX port, numpy .npz (calib/npz_stats.h)
};

// Identity of the model and the calibration run recorded in (or read from) a stats file.
// Fields a format does not record stay at their "unknown" values: "" for strings, 0 for numbers.
struct StatsInfo {
  std::string architecture, model_name;
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int rotary_dim = 0;  // metadata 'rotary_dim'; 0 = head_dim (absent from the file)
  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  double rope_theta = 0;
  std::string rope_scaling;  // describe_rope_scaling()
  double rope_attn_factor = 1;
  std::vector<float> rope_freqs;
  int64_t token_count = 0;
  std::string input_hash;
  std::vector<float> weights_fingerprint;  // empty: not recorded (version 1, .pt, or written without a model)
  // The full-attention layers, the ones KV policies compress and score, on a model with
  // sliding-window layers (metadata 'scored_layers', e.g. "1,3,5"); empty: every layer. The
  // statistics hold every layer either way (analysis reads the sliding ones too).
  std::vector<int> scored_layers;
  // The format the statistics were converted from (stats_format_name); "" when triattn calibrated them.
  std::string source_format;
};

struct LoadedStats {
  std::shared_ptr<const HeadStats> stats;
  StatsInfo info;
  int format_version = 0;    // of the file's own format (ours: 1 or 2; TRIA: 1 or 2); 0 for .pt and .npz
  StatsFormat format = StatsFormat::Triattn;
  // Read from one of the official implementation's formats (.pt, MLX .npz): no KV head count,
  // no model identity at all.
  bool official_pt = false;
  // What the reader could not honour but which does not stop the load (per-layer budget
  // scales of TRIA v2, ...), each "PATH: ...": shown as warnings by load_stats.
  std::vector<std::string> notes;
};

// FNV-1a 64 over the token ids as little-endian int32: identifies the calibration input.
uint64_t fnv1a64_tokens(std::span<const int32_t> tokens);
std::string format_input_hash(uint64_t h);  // "fnv1a64:%016x"
std::string describe_rope_scaling(const RopeScaling& s);
std::string join_layers(const std::vector<int>& layers);  // "1,3,5"
std::string exact_number_text(double v);                 // "%.17g": reads back as the same double
StatsInfo stats_info_for(const ModelConfig& cfg, int64_t token_count, uint64_t input_hash);

// Refuses values that break calib/stats_values.h (a model whose activations overflowed) and
// writes atomically: an error never leaves a truncated file at `path`.
void write_stats_file(const std::string& path, const HeadStats& stats, const StatsInfo& info);
// Any format of calib/stats_formats.h, told apart by the first bytes (calib/stats_file_kind.h);
// anything else (a GGUF, a model directory, a text) is refused as not a stats file.
LoadedStats read_stats_any(const std::string& path);
// Throws Error naming every field that differs from the model (with both values).
void check_stats_match(const LoadedStats& loaded, const ModelConfig& cfg, const std::string& path);
// Whether the stats were calibrated on these weights (the fingerprint). Throws Error when
// the fingerprints differ; appends to *warnings (if given) what does not stop the load: no
// fingerprint to compare (version 1, .pt), or another model name with the same weights (the
// same model is "TinyStories-656K" in GGUF and its directory name in HF form).
void check_stats_identity(const LoadedStats& loaded, const Model& model, const std::string& path,
                          std::vector<std::string>* warnings);
// What the engine calls: read (either format), validate against the model (shape, RoPE,
// weights fingerprint), return the statistics. Warnings, each "PATH: ...", are appended to
// *warnings for the caller to show; nothing is printed here.
std::shared_ptr<const HeadStats> load_stats(const std::string& path, const Model& model,
                                            std::vector<std::string>* warnings);
// Shape and RoPE only, for callers without the weights: cannot tell two models of one shape
// apart. Prefer the Model overload.
std::shared_ptr<const HeadStats> load_stats(const std::string& path, const ModelConfig& cfg);

}  // namespace triattn
