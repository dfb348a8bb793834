#include "cli/calibrate_into.h"

#include <filesystem>
#include <iostream>

#include "calib/atomic_write.h"
#include "calib/calibrate_paths.h"
#include "calib/stats_embedded.h"
#include "calib/stats_file.h"
#include "calib/stats_formats.h"
#include "calib/stats_file_kind.h"
#include "calib/stats_into.h"
#include "cli/calibrate_run.h"
#include "cli/common.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/stats_names.h"

namespace triattn::cli {

namespace fs = std::filesystem;

namespace {

bool same_model_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// A stats file checked against the model it is about to be stored in: its shape and RoPE,
// and its weights fingerprint (statistics of another model are refused here, not at load).
LoadedStats checked_stats_file(const std::string& path, const Model& model) {
  LoadedStats l = read_stats_any(path);
  if (l.official_pt)
    fail("--stats ", path, ": the ", stats_format_info(l.format).description,
         " records no model identity, which the model file must carry; "
         "calibrate with `triattn calibrate --into ", model.path(), " --input TEXT` instead");
  check_stats_match(l, model.config(), path);
  std::vector<std::string> warnings;
  check_stats_identity(l, model, path, &warnings);
  print_warnings(warnings);
  return l;
}

}  // namespace

int calibrate_into(const CalibrateIntoArgs& a) {
  std::error_code ec;
  const bool hf = fs::is_directory(a.into, ec);
  if (!hf && sniff_stats_file(a.into).kind != StatsFileKind::Gguf)
    fail("--into ", a.into, ": not a GGUF file or a Hugging Face model directory, the two that can carry "
         "statistics; write a separate stats file with -o instead");
  if (!a.model.empty() && !same_model_path(a.model, a.into))
    fail("-m ", a.model, " and --into ", a.into, " name different models; --into is the model calibrated (leave -m out)");
  if (a.input.empty() == a.stats.empty())
    fail("--into takes its statistics from --input TEXT (calibrating now) or --stats FILE (stored as they are): "
         "give one of them");
  if (!a.stats.empty() && !a.dump_tokens.empty()) fail("--dump-tokens goes with --input, not --stats");

  // Every refusal that needs no model comes before the (long) run.
  std::string target;  // the file written
  if (hf) {
    target = (fs::path(a.into) / kHfStatsFileName).string();
    if (!a.output.empty())
      fail("-o ", a.output, ": an HF directory takes its statistics in place, as ", target,
           "; leave -o out (copy the directory first to keep the original as it is)");
    if (fs::exists(target, ec) && !a.replace)
      fail(a.into, ": already holds TriAttention statistics (", kHfStatsFileName, "); give --replace to overwrite them");
    if (!fs::exists(target, ec)) check_calibrate_paths({a.into, a.input, target, a.dump_tokens});
    else check_output_writable(target, "stats file");
  } else {
    target = a.output;
    if (target.empty())
      fail("--into ", a.into, " needs -o NEW.gguf: the model with statistics is written as a new file");
    if (same_model_path(target, a.into))
      fail("-o ", target, " is the --into model itself; write the model with statistics to a new file (the original "
           "stays as it was)");
    if (gguf_has_stats(*GgufFile::open(a.into)) && !a.replace)
      fail(a.into, ": already holds TriAttention statistics (", kGgufStatsPrefix,
           "* keys or tensors); give --replace to overwrite them");
    check_calibrate_paths({a.into, a.input, target, a.dump_tokens});
  }
  if (!a.stats.empty() && same_model_path(a.stats, target))
    fail("--stats ", a.stats, " and the output ", target, " are the same file; give the stats file another name");

  auto model = load_model(a.into, {.threads = a.threads});
  std::cerr << "calibrate: " << model->config().describe() << "\n";
  HeadStats stats;
  StatsInfo info;
  std::string summary;
  if (!a.stats.empty()) {
    const LoadedStats l = checked_stats_file(a.stats, *model);
    stats = *l.stats;
    info = l.info;
    summary = "statistics of " + a.stats + " (" + std::to_string(info.token_count) + " tokens, input " +
              info.input_hash + ")";
  } else {
    const CalibrationResult r = run_calibration(*model, read_text_file(a.input),
                                                {a.max_tokens, a.window, a.chunk, a.kv_type}, a.threads);
    write_token_dump(a.dump_tokens, r);
    stats = r.stats;
    info = r.info;
    summary = describe_result(r);
  }
  if (hf) write_stats_beside_hf(a.into, stats, info, a.replace);
  else embed_stats_in_gguf(a.into, target, stats, info, a.replace);
  std::cout << "wrote " << target << ": " << summary << "\n";
  return 0;
}

}  // namespace triattn::cli
