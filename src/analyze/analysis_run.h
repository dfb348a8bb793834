#pragma once
// `triattn analyze` minus the presentation: loads the statistics (a stats file, checked
// against the model, or none), runs the model over the input once (the calibration loop of
// engine/calibrate.h: BOS + text, windows of the context length) while capturing every
// pre-RoPE query and key, and computes the Analysis.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyze/analysis.h"
#include "calib/stats_file.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace triattn {

// The fewest tokens analyze accepts (after BOS is added, after max_tokens): r̄ needs a query
// at position 4 to correlate over Δ = 1, 2, 4.
inline constexpr int64_t kMinAnalysisTokens = 5;

// Statistics from a file, validated against the model before any work (shape, RoPE, weights).
struct AnalysisStats {
  std::shared_ptr<const HeadStats> stats;
  StatsInfo info;
  std::string path;
  bool has_key_stats = false;  // the official .pt holds only queries
};
AnalysisStats load_analysis_stats(const std::string& path, const Model& model, std::vector<std::string>* warnings);

struct AnalyzeOptions {
  int64_t max_tokens = 4096;          // of the input, BOS included (0 = all)
  const AnalysisStats* stats = nullptr;  // null: statistics of the input itself
  std::vector<HeadChoice> heads;      // empty: default_heads()
  int64_t scatter_points = 512;
  ThreadPool* pool = nullptr;
  std::function<void(int64_t, int64_t)> progress;  // (tokens done, total) after each forward call
};

// What the figures were computed from, for the report.
struct AnalysisSource {
  std::string model_path, model_name, architecture;
  int n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int rotary_dim = 0;  // coordinates RoPE rotates (= head_dim unless partial); bands = rotary_dim / 2
  int64_t context_length = 0;
  double rope_theta = 0;
  std::string rope_scaling;
  std::vector<int32_t> tokens;  // the ids that were run
  int64_t windows = 0;
  std::string input_hash;
  std::string stats_source;     // "input" or the stats file's path
  int64_t stats_tokens = 0;
  std::string stats_input_hash;
  std::string key_stats_source;  // "input" or the stats file's path
};

struct AnalysisRun {
  AnalysisSource source;
  Analysis analysis;
};

// Bytes the capture of n tokens takes (for a note before a long run).
int64_t capture_bytes(const ModelConfig& c, int64_t tokens);

AnalysisRun run_analysis(const Model& model, const std::string& text, const AnalyzeOptions& opt);

}  // namespace triattn
