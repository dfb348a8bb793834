// triattn analyze: how concentrated a model's pre-RoPE queries and keys are, and how well
// TriAttention's trigonometric series predicts its attention over distance, as
// analysis.json + SVG figures + index.html; or, with --compare, how two calibrations of one
// model differ in their query centres.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "analyze/analysis_run.h"
#include "analyze/findings.h"
#include "analyze/head_choice.h"
#include "analyze/report_files.h"
#include "analyze/stats_compare.h"
#include "calib/atomic_write.h"
#include "calib/stats_file.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress_line.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace triattn::cli {

namespace {

int run_compare(const std::vector<std::string>& files, const std::string& out_dir) {
  const LoadedStats a = read_stats_any(files[0]), b = read_stats_any(files[1]);
  check_comparable(a, files[0], b, files[1]);
  if (!out_dir.empty()) prepare_output_dir(out_dir, "analysis.json", "analysis report");
  const StatsComparison c = compare_stats(*a.stats, *b.stats);
  std::cout << comparison_table(c, files[0], files[1]);
  if (!out_dir.empty()) {
    const std::string path = (std::filesystem::path(out_dir) / "compare.json").string();
    write_text_file(path, comparison_json(c, files[0], a, files[1], b).dump(1) + "\n");
    std::cout << "wrote " << path << "\n";
  }
  return 0;
}

}  // namespace

int cmd_analyze(const std::vector<std::string>& args) {
  CLI::App app{"Report how concentrated a model's pre-RoPE queries and keys are (R, r̄, distance curves) as "
               "analysis.json, SVG figures and a self-contained index.html; or compare two stats files",
               "triattn analyze"};
  std::string model_path, input, stats_path, heads, output;
  std::vector<std::string> compare;
  int64_t max_tokens = 4096, scatter_points = 512;
  int threads = 0;
  app.add_option("-m,--model", model_path, "model: .gguf, Hugging Face directory or llama2.c .bin");
  app.add_option("--input", input, "text to run the model over (BOS + text, windows of the context; \"-\" = stdin)");
  app.add_option("--stats", stats_path,
                 "stats file (triattn calibrate) for the centres and R figures (default: statistics of the input itself)");
  app.add_option("--max-tokens", max_tokens,
                 "use at most N tokens of the input, BOS included (0 = all; memory: N x layers x (heads + KV heads) x "
                 "head_dim x 4 bytes)")
      ->capture_default_str();
  app.add_option("--heads", heads,
                 "query heads for the distance curves and band scatters, LAYER:HEAD,... 0-based (default: head 0 of the "
                 "first, middle and last layer, and the most and least concentrated heads)");
  app.add_option("--scatter-points", scatter_points, "tokens shown in each band scatter (the first N)")->capture_default_str();
  app.add_option("-o,--output", output, "folder for analysis.json, the .svg figures and index.html (created if missing); "
                                        "with --compare, where compare.json goes (optional)");
  app.add_option("--compare", compare, "compare the query centres of two stats files of one model: --compare S1 S2")
      ->expected(2);
  add_threads_option(app, threads);
  if (int rc = parse(app, args); rc >= 0) return rc;

  if (!compare.empty()) {
    if (!model_path.empty() || !input.empty() || !stats_path.empty() || !heads.empty())
      fail("--compare takes two stats files and no -m/--input/--stats/--heads (e.g. triattn analyze --compare "
           "code.safetensors maths.safetensors)");
    return run_compare(compare, output);
  }
  if (model_path.empty()) fail("-m MODEL is required (or --compare S1 S2)");
  if (input.empty()) fail("--input FILE is required: the text to run the model over");
  if (output.empty()) fail("-o DIR is required: the folder the report is written to");
  if (max_tokens < 0) fail("--max-tokens ", max_tokens, " is negative (0 = the whole input)");
  if (scatter_points < 1) fail("--scatter-points ", scatter_points, " must be at least 1");

  if (std::filesystem::exists(output) && !std::filesystem::is_directory(output))
    fail(output, ": -o must be a folder for the report, and this is a file (choose a folder name)");
  const std::string text = read_text_file(input);
  auto model = load_model(model_path, {.threads = threads});
  const ModelConfig& c = model->config();
  std::cerr << "analyze: " << c.describe() << "\n";
  AnalyzeOptions opt;
  if (!heads.empty()) opt.heads = parse_head_list(heads, c.n_layers, c.n_heads);
  AnalysisStats stats;
  if (!stats_path.empty()) {
    std::vector<std::string> warnings;
    stats = load_analysis_stats(stats_path, *model, &warnings);
    print_warnings(warnings);
    opt.stats = &stats;
  }
  prepare_output_dir(output, "analysis.json", "analysis report");  // after every check of the arguments, before the run
  opt.max_tokens = max_tokens;
  opt.scatter_points = scatter_points;
  ThreadPool pool(threads);
  opt.pool = &pool;
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine progress;
  opt.progress = [&](int64_t done, int64_t total) {
    if (done == total || done % 512 == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char line[160];
      std::snprintf(line, sizeof line, "analyze: %lld / %lld tokens (%.0f tok/s, capture %.1f MiB)",
                    static_cast<long long>(done), static_cast<long long>(total), s > 0 ? done / s : 0.0,
                    capture_bytes(c, done) / 1048576.0);
      progress.update(line, done == total);
    }
  };
  const AnalysisRun run = run_analysis(*model, text, opt);
  progress.finish();
  const std::vector<std::string> written = write_analysis_report(output, run);

  const Analysis& a = run.analysis;
  std::printf("%s: %zu tokens, %d query heads\n", c.name.empty() ? model_path.c_str() : c.name.c_str(),
              run.source.tokens.size(), a.query_summary.heads);
  std::printf("query: mean band-mean R %.4f, weighted R %.4f, top-band R %.4f, weighted R > %.2f: %.1f%% of heads\n",
              a.query_summary.band_mean_R, a.query_summary.weighted_R, a.query_summary.top_band_R, kConcentratedR,
              100 * a.query_summary.fraction_above);
  std::printf("key:   mean band-mean R %.4f, weighted R %.4f, top-band R %.4f, weighted R > %.2f: %.1f%% of heads\n",
              a.key_summary.band_mean_R, a.key_summary.weighted_R, a.key_summary.top_band_R, kConcentratedR,
              100 * a.key_summary.fraction_above);
  std::printf("mean r̄ %.4f over %d query heads\n", a.rbar_mean, a.rbar_heads);
  std::printf("wrote %zu files to %s (open %s)\n", written.size(), output.c_str(), written.back().c_str());
  return 0;
}

}  // namespace triattn::cli
