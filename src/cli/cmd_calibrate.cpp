// triattn calibrate: measure the per-head pre-RoPE query statistics TriAttention scores with
// (docs/design.md, The algorithm; the stats file: Contracts). Runs once per model, offline.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "calib/atomic_write.h"
#include "engine/calibrate.h"
#include "calib/calibrate_paths.h"
#include "calib/stats_file.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress_line.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace triattn::cli {

int cmd_calibrate(const std::vector<std::string>& args) {
  CLI::App app{"Measure per-head query statistics for TriAttention and write them to a stats file",
               "triattn calibrate"};
  std::string model_path, input, output, dump_tokens, kv_type = "f32";
  int64_t max_tokens = 0, window = 0, chunk = 512;
  int threads = 0;
  app.add_option("-m,--model", model_path, "model: .gguf, Hugging Face directory or llama2.c .bin")->required();
  app.add_option("--input", input, "calibration text file (\"-\" = stdin)")->required();
  app.add_option("-o,--output", output, "stats file to write (safetensors)")->required();
  app.add_option("--max-tokens", max_tokens, "use at most N tokens of the input (0 = all)")->capture_default_str();
  app.add_option("--window", window, "tokens per window, each on a fresh KV cache (0 = the model's context length)")
      ->capture_default_str();
  app.add_option("--chunk", chunk, "tokens per forward step within a window")->capture_default_str();
  app.add_option("--kv-type", kv_type, "KV cache element type during calibration: f32, f16 or q8_0")->capture_default_str();
  app.add_option("--dump-tokens", dump_tokens, "also write the token ids used, one per line (for reference checks)");
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;

  const DType cache_type = parse_kv_type(kv_type);
  // Before anything is loaded: no output over an input, every output writable.
  check_calibrate_paths({model_path, input, output, dump_tokens});
  const std::string text = read_text_file(input);
  auto model = load_model(model_path, {.threads = threads});
  std::cerr << "calibrate: " << model->config().describe() << "\n";

  ThreadPool pool(threads);
  CalibrateOptions opt;
  opt.max_tokens = max_tokens;
  opt.window = window;
  opt.chunk = chunk;
  opt.kv_type = cache_type;
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
  const CalibrationResult r = calibrate_text(*model, text, opt);
  progress.finish();
  if (r.info.token_count < kFewCalibrationTokens)
    std::fprintf(stderr,
                 "calibrate: warning: only %lld tokens of calibration input; statistics from fewer than %lld tokens "
                 "are noisy (use a few thousand tokens of text like the model's own)\n",
                 static_cast<long long>(r.info.token_count), static_cast<long long>(kFewCalibrationTokens));

  write_stats_file(output, r.stats, r.info);
  if (!dump_tokens.empty()) {
    write_file_atomically(dump_tokens, [&](const std::string& tmp) {
      std::ofstream out(tmp);
      for (int32_t t : r.tokens) out << t << "\n";
      out.close();
      if (!out) fail(tmp, ": cannot write the token list");
    });
  }
  std::cout << "wrote " << output << ": " << r.info.token_count << " tokens in " << r.windows << " window(s), "
            << r.stats.n_layers << " layers x " << r.stats.n_heads << " query heads x " << r.stats.bands()
            << (r.stats.pass_dims() > 0 ? " rotated bands (+ " + std::to_string(r.stats.pass_dims()) + " unrotated coordinates)" : std::string(" bands"))
            << ", input " << r.info.input_hash << "\n";
  return 0;
}

}  // namespace triattn::cli
