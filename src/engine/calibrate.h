#pragma once
// The calibration driver (docs/design.md, The algorithm): runs a model over a text and returns the
// per-head statistics. The text is tokenized like a prompt (BOS when the model asks for it)
// and run in windows of the model's context length, each window on a fresh KV cache from
// position 0; every token of every window counts. Fewer than kMinCalibrationTokens tokens
// (after BOS, after max_tokens) are refused (stats_file.h says why that number); the result
// records the model's weights fingerprint, so its stats file can tell other weights apart.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "calib/stats_file.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/observer.h"

namespace triattn {

struct CalibrateOptions {
  int64_t max_tokens = 0;   // use at most this many tokens (0 = all; negative is an error)
  int64_t window = 0;       // tokens per window (0 = the model's context length; negative is an error)
  int64_t chunk = 512;      // tokens per forward call within a window (bounds scratch memory; >= 1)
  DType kv_type = DType::F32;
  ThreadPool* pool = nullptr;
  // Called after every forward call with (tokens done, tokens total).
  std::function<void(int64_t, int64_t)> progress;
  // Also sees every pre-RoPE q/k the statistics are taken from (after the statistics), so a
  // caller that needs the vectors themselves (triattn analyze) shares this one loop. Windows
  // show as pos0 restarting at 0.
  ForwardObserver* also_observe = nullptr;
};

struct CalibrationResult {
  HeadStats stats;
  StatsInfo info;               // model identity, token count, input hash
  std::vector<int32_t> tokens;  // the token ids that were run (after max_tokens)
  int64_t windows = 0;
};

CalibrationResult calibrate_tokens(const Model& model, std::span<const int32_t> tokens, const CalibrateOptions& opt);
CalibrationResult calibrate_text(const Model& model, const std::string& text, const CalibrateOptions& opt);

}  // namespace triattn
