#include "cli/calibrate_run.h"

#include <chrono>
#include <cstdio>
#include <fstream>

#include "calib/atomic_write.h"
#include "cli/progress_line.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace triattn::cli {

CalibrationResult run_calibration(const Model& model, const std::string& text, const CalibrateRunOptions& o,
                                  int threads) {
  ThreadPool pool(threads);
  CalibrateOptions opt;
  opt.max_tokens = o.max_tokens;
  opt.window = o.window;
  opt.chunk = o.chunk;
  opt.kv_type = o.kv_type;
  opt.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine progress;
  opt.progress = [&](int64_t done, int64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char line[128];
    std::snprintf(line, sizeof line, "calibrate: %lld / %lld tokens (%.0f tok/s)", static_cast<long long>(done),
                  static_cast<long long>(total), s > 0 ? done / s : 0.0);
    progress.update(line, done == total);
  };
  CalibrationResult r = calibrate_text(model, text, opt);
  progress.finish();
  if (r.info.token_count < kFewCalibrationTokens)
    std::fprintf(stderr,
                 "calibrate: warning: only %lld tokens of calibration input; statistics from fewer than %lld tokens "
                 "are noisy (use a few thousand tokens of text like the model's own)\n",
                 static_cast<long long>(r.info.token_count), static_cast<long long>(kFewCalibrationTokens));
  return r;
}

void write_token_dump(const std::string& path, const CalibrationResult& r) {
  if (path.empty()) return;
  write_file_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp);
    for (int32_t t : r.tokens) out << t << "\n";
    out.close();
    if (!out) fail(tmp, ": cannot write the token list");
  });
}

std::string describe_result(const CalibrationResult& r) {
  return std::to_string(r.info.token_count) + " tokens in " + std::to_string(r.windows) + " window(s), " +
         std::to_string(r.stats.n_layers) + " layers x " + std::to_string(r.stats.n_heads) + " query heads x " +
         std::to_string(r.stats.bands()) +
         (r.stats.pass_dims() > 0
              ? " rotated bands (+ " + std::to_string(r.stats.pass_dims()) + " unrotated coordinates)"
              : std::string(" bands")) +
         ", input " + r.info.input_hash;
}

}  // namespace triattn::cli
