// triattn calibrate: measure the per-head pre-RoPE query statistics TriAttention scores with
// (docs/design.md, The algorithm; the stats file: Contracts). Runs once per model, offline.
#include <iostream>

#include "calib/calibrate_paths.h"
#include "calib/stats_file.h"
#include "cli/calibrate_into.h"
#include "cli/calibrate_run.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"

namespace triattn::cli {

int cmd_calibrate(const std::vector<std::string>& args) {
  CLI::App app{"Measure per-head query statistics for TriAttention and write them to a stats file",
               "triattn calibrate"};
  std::string model_path, input, output, dump_tokens, kv_type = "f32";
  int64_t max_tokens = 0, window = 0, chunk = 512;
  int threads = 0;
  std::string into, stats_in;
  bool replace = false;
  app.add_option("-m,--model", model_path, "model: .gguf, Hugging Face directory or llama2.c .bin");
  app.add_option("--input", input, "calibration text file (\"-\" = stdin)");
  app.add_option("-o,--output", output,
                 "stats file to write (safetensors); with --into a .gguf, the new model file");
  app.add_option("--into", into,
                 "store the statistics in the model: MODEL.gguf is copied to -o with them added; an HF directory "
                 "gets DIR/triattention.safetensors in place");
  app.add_option("--stats", stats_in, "with --into: store this stats file (checked against the model) instead of "
                 "calibrating");
  app.add_flag("--replace", replace, "with --into: replace statistics the model already holds");
  app.add_option("--max-tokens", max_tokens, "use at most N tokens of the input (0 = all)")->capture_default_str();
  app.add_option("--window", window, "tokens per window, each on a fresh KV cache (0 = the model's context length)")
      ->capture_default_str();
  app.add_option("--chunk", chunk, "tokens per forward step within a window")->capture_default_str();
  app.add_option("--kv-type", kv_type, "KV cache element type during calibration: f32, f16 or q8_0")->capture_default_str();
  app.add_option("--dump-tokens", dump_tokens, "also write the token ids used, one per line (for reference checks)");
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;

  const DType cache_type = parse_kv_type(kv_type);
  if (!into.empty()) return calibrate_into({into, model_path, input, output, stats_in, dump_tokens, replace,
                                            cache_type, max_tokens, window, chunk, threads});
  if (model_path.empty() || input.empty() || output.empty())
    fail("calibrate needs -m MODEL, --input TEXT and -o STATS (or --into MODEL to store the statistics in the model)");
  if (!stats_in.empty() || replace) fail("--stats and --replace go with --into");
  // Before anything is loaded: no output over an input, every output writable.
  check_calibrate_paths({model_path, input, output, dump_tokens});
  auto model = load_model(model_path, {.threads = threads});
  std::cerr << "calibrate: " << model->config().describe() << "\n";
  const CalibrationResult r = run_calibration(*model, read_text_file(input), {max_tokens, window, chunk, cache_type},
                                              threads);
  write_stats_file(output, r.stats, r.info);
  write_token_dump(dump_tokens, r);
  std::cout << "wrote " << output << ": " << describe_result(r) << "\n";
  return 0;
}

}  // namespace triattn::cli
