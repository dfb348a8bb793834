#include "analyze/analysis_run.h"

#include "engine/calibrate.h"
#include "core/error.h"

namespace triattn {

AnalysisStats load_analysis_stats(const std::string& path, const Model& model, std::vector<std::string>* warnings) {
  LoadedStats l = read_stats_any(path);
  check_stats_match(l, model.config(), path);
  check_stats_identity(l, model, path, warnings);
  AnalysisStats a;
  a.path = path;
  a.info = l.info;
  a.has_key_stats = !l.stats->k_abs_mean.empty();
  if (l.official_pt) {  // the .pt records no KV head count; the model does
    auto s = std::make_shared<HeadStats>(*l.stats);
    s->n_kv_heads = model.config().n_kv_heads;
    a.stats = s;
  } else {
    a.stats = l.stats;
  }
  if (!a.has_key_stats && warnings)
    warnings->push_back(path + ": holds no key statistics (the official .pt format records queries only); the key "
                        "centres come from the input");
  return a;
}

int64_t capture_bytes(const ModelConfig& c, int64_t tokens) {
  return tokens * c.n_layers * (c.n_heads + c.n_kv_heads) * c.head_dim * static_cast<int64_t>(sizeof(float));
}

AnalysisRun run_analysis(const Model& model, const std::string& text, const AnalyzeOptions& opt) {
  const ModelConfig& c = model.config();
  if (opt.max_tokens < 0) fail("analyze: --max-tokens ", opt.max_tokens, " is negative (0 = the whole input)");
  const Tokenizer& tok = model.tokenizer();
  std::vector<int32_t> ids = tok.encode(text, tok.add_bos_default());  // like a prompt, as calibration
  if (opt.max_tokens > 0 && static_cast<int64_t>(ids.size()) > opt.max_tokens) ids.resize(opt.max_tokens);
  if (static_cast<int64_t>(ids.size()) < kMinAnalysisTokens)
    fail("analyze: the input gives ", ids.size(), " token(s)", opt.max_tokens > 0 ? " (after --max-tokens)" : "",
         "; at least ", kMinAnalysisTokens, " are needed (r̄ correlates a query with keys at distances 1, 2 and 4), ",
         "and thousands give useful statistics");

  std::vector<int> kv_layers;  // DeltaNet layers report nothing
  for (int l = 0; l < c.n_layers; ++l)
    if (!c.is_delta(l)) kv_layers.push_back(l);
  QkCapture capture(c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.rotary_dims(), kv_layers);
  CalibrateOptions copt;
  copt.pool = opt.pool;
  copt.progress = opt.progress;
  copt.also_observe = &capture;
  const CalibrationResult cal = calibrate_tokens(model, ids, copt);
  if (capture.tokens() != static_cast<int64_t>(ids.size()))
    fail("analyze: captured ", capture.tokens(), " tokens of ", ids.size());

  AnalysisRun run;
  AnalysisSource& src = run.source;
  src.model_path = model.path();
  src.model_name = c.name;
  src.architecture = c.arch;
  src.n_layers = c.n_layers, src.n_heads = c.n_heads, src.n_kv_heads = c.n_kv_heads, src.head_dim = c.head_dim;
  src.rotary_dim = c.rotary_dims();
  src.context_length = c.context_length;
  src.rope_theta = c.rope_theta;
  src.rope_scaling = describe_rope_scaling(c.rope_scaling);
  src.tokens = cal.tokens;
  src.windows = cal.windows;
  src.input_hash = cal.info.input_hash;

  // Queries (and keys, when the file has them) from the stats file; the rest from the input.
  HeadStats stats = cal.stats;
  src.stats_source = src.key_stats_source = "input";
  src.stats_tokens = cal.info.token_count;
  src.stats_input_hash = cal.info.input_hash;
  if (opt.stats) {
    const HeadStats& f = *opt.stats->stats;
    stats.q_mean_real = f.q_mean_real, stats.q_mean_imag = f.q_mean_imag, stats.q_abs_mean = f.q_abs_mean;
    if (opt.stats->has_key_stats) {
      stats.k_mean_real = f.k_mean_real, stats.k_mean_imag = f.k_mean_imag, stats.k_abs_mean = f.k_abs_mean;
      src.key_stats_source = opt.stats->path;
    }
    src.stats_source = opt.stats->path;
    src.stats_tokens = opt.stats->info.token_count;
    src.stats_input_hash = opt.stats->info.input_hash;
  }

  AnalysisInputs in;
  in.stats = &stats;
  in.capture = &capture;
  for (float w : c.rope_freqs()) in.omega.push_back(w);
  in.heads = opt.heads;
  in.scatter_points = opt.scatter_points;
  run.analysis = analyze_capture(in);
  return run;
}

}  // namespace triattn
