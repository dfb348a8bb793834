// triattn bench: throughput, memory and scoring overhead of each KV policy at several cache
// depths, beside the machine's measured memory bandwidth (the decode roofline).
//   pp: a prefill of --pp tokens from an empty cache (matrix-matrix speed).
//   prompt: with --prompt N,..., the time to first token of an N-token prompt (a prefill
//       from an empty cache in the steps the policy allows: under a compressing policy in
//       chunks of beta, pruned to B between them).
//   tg: --tg decode steps after the cache holds `depth` tokens. The depth is filled with
//       synthetic cache contents (cli/bench_synthetic_kv.h) through the policy's own pruning,
//       because a real prefill of 32K tokens would take far longer than the measurement.
//       With --batch N, N such sequences decode together, one token each per forward call
//       (the server's batched step), and tok/s is their sum.
// Every figure is the median over --reps repetitions (interleaved across policies and depths,
// so a noisy neighbour on a shared machine hits all of them alike), with its spread. Within a
// repetition the depths go in the order given, and at each depth every policy in turn.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "calib/stats_embedded.h"
#include "cli/bench_bandwidth.h"
#include "cli/bench_calibration.h"
#include "cli/bench_measure.h"
#include "cli/bench_synthetic_kv.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/kernel_environment.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace triattn::cli {

namespace {

struct BenchOptions {
  std::string model_path;
  int threads = 0;
  int reps = 3;
  std::vector<int64_t> depths{0, 4096, 16384};
  std::vector<std::string> policies{"full", "triattention"};
  std::vector<int> batches{1};
  std::vector<int64_t> prompts;  // --prompt: time to first token at these lengths
  int64_t pp = 512, tg = 128;
  int64_t probe_mib = 1024;
  int probe_runs = 5;
  int64_t sample_tokens = 64;
  uint64_t seed = 1;
  bool json = false;
  bool phases = false;
};

// One (policy, depth, batch) cell: every repetition's raw figures.
struct Cell {
  std::vector<double> pp_tok_s, tg_tok_s, scoring_share, recall_share;
  std::vector<DecodeMeasure> decode;
};

// Elements of the matrices every token is multiplied by (the FLOP count of a prefill token,
// ignoring attention and the output projection, which prefill computes for the last token only);
// of a MoE layer's experts, the n_expert_used a token is routed to.
int64_t matmul_params(const Model& m) {
  const ModelConfig& c = m.config();
  int64_t n = 0;
  for (const LayerWeights& L : m.weights().layers) {
    for (const TensorView* t : L.matrices())
      if (!t->empty()) n += t->numel();
    for (const TensorView* t : L.expert_stacks())
      if (!t->empty()) n += t->numel() / c.n_expert * c.n_expert_used;
  }
  return n;
}

// Weight bytes one decode step reads for `batch` sequences: every dense weight once and, of a
// MoE model's experts, the share the batch's tokens select: n_expert_used / n_expert for one
// sequence (the active parameters), 1 - (1 - used / n)^batch expected for a batch if routing
// were uniform (an estimate: real routing is uneven).
double step_weight_bytes(const Model& m, int batch) {
  const double experts = static_cast<double>(m.expert_weight_bytes());
  const double dense = static_cast<double>(m.weight_bytes()) - experts;
  if (experts == 0) return dense;
  const double p = static_cast<double>(m.config().n_expert_used) / m.config().n_expert;
  return dense + experts * (1 - std::pow(1 - p, batch));
}

// Bytes one decode step reads in each phase of ForwardPhases: the weights of its matrices
// (each once per step, whatever the batch) and, for attention, `kv` (every sequence's K+V);
// -1 where it is not a fixed amount (a MoE layer's FFN, the serial "other").
std::vector<double> phase_bytes(const Model& m, double kv) {
  std::vector<double> b(ForwardPhases::kCount, 0.0);
  auto add = [&](int phase, const TensorView& t) {
    if (b[phase] >= 0 && !t.empty()) b[phase] += static_cast<double>(t.nbytes());
  };
  for (const LayerWeights& L : m.weights().layers) {
    for (const TensorView* t : {&L.wq, &L.wk, &L.wv, &L.dn_qkv, &L.dn_z, &L.dn_beta, &L.dn_alpha})
      add(ForwardPhases::kQkv, *t);
    add(ForwardPhases::kOutput, L.wo);
    add(ForwardPhases::kOutput, L.dn_out);
    if (L.w_gate.empty() && L.w_up.empty()) {
      b[ForwardPhases::kFfnIn] = -1;
    } else {
      add(ForwardPhases::kFfnIn, L.w_gate);
      add(ForwardPhases::kFfnIn, L.w_up);
    }
    add(ForwardPhases::kFfnDown, L.w_down);
  }
  add(ForwardPhases::kLogits, m.weights().output);
  b[ForwardPhases::kAttention] = kv;
  b[ForwardPhases::kOther] = -1;
  return b;
}

const PolicyInfo* find_policy(const std::string& name) {
  for (const PolicyInfo& p : kv_policy_list())
    if (p.name == name) return &p;
  return nullptr;
}

void validate_bench_flags(const BenchOptions& o) {
  if (o.reps < 1) fail("--reps must be at least 1");
  if (o.pp < 0) fail("--pp must be >= 0 (0 skips the prefill measurement)");
  if (o.tg < 1) fail("--tg must be at least 1");
  for (int64_t n : o.prompts)
    if (n < 1 || n > (int64_t{1} << 20)) fail("--prompt: ", n, " tokens; each prompt must hold 1 to 1048576");
  if (o.depths.empty()) fail("--depths is empty");
  for (int64_t d : o.depths)
    if (d < 0) fail("--depths: depth ", d, " is negative");
  if (o.policies.empty()) fail("--policies is empty");
  if (o.batches.empty()) fail("--batch is empty");
  for (int b : o.batches)
    if (b < 1 || b > 256) fail("--batch: ", b, " sequences; each batch must hold 1 to 256");
  for (const std::string& p : o.policies)
    if (!find_policy(p)) {
      std::string known;
      for (const PolicyInfo& i : kv_policy_list()) known += (known.empty() ? "" : ", ") + i.name;
      fail("--policies: unknown policy '", p, "' (known: ", known, ")");
    }
  if (o.probe_mib < 1) fail("--probe-mib must be at least 1");
  if (o.probe_runs < 1) fail("--probe-runs must be at least 1");
  if (o.sample_tokens < 1) fail("--sample-tokens must be at least 1");
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  CLI::App app{"Measure prefill and decode speed, KV memory and scoring overhead per KV policy and cache depth",
               "triattn bench"};
  BenchOptions o;
  KvOptions kv;
  app.add_option("-m,--model", o.model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  add_threads_option(app, o.threads);
  app.add_option("--depths", o.depths, "cache depths for the decode measurement (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--policies", o.policies, "KV policies to compare (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batch", o.batches, "sequences decoding together, per measurement (comma-separated; tok/s summed)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--reps", o.reps, "repetitions of every measurement (median and sd reported)")->capture_default_str();
  app.add_option("--pp", o.pp, "prefill tokens timed from an empty cache (0 = skip)")->capture_default_str();
  app.add_option("--prompt", o.prompts,
                 "prompt lengths whose time to first token is measured per policy (comma-separated; none by default)")
      ->delimiter(',');
  app.add_option("--tg", o.tg, "decode steps timed at each depth")->capture_default_str();
  app.add_option("--probe-mib", o.probe_mib, "buffer size of the memory bandwidth probe (MiB)")->capture_default_str();
  app.add_option("--probe-runs", o.probe_runs, "runs of the bandwidth probe before each repetition (the best of all is reported)")->capture_default_str();
  app.add_option("--sample-tokens", o.sample_tokens, "real prefill tokens whose keys/values seed the synthetic depth")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the random prompt and synthetic cache")->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object instead of a table");
  app.add_flag("--phases", o.phases,
               "also time the decode steps by phase of the forward pass (qkv, attention, output, ffn in, ffn down, logits, other): "
               "ms per step and GB/s of each");
  add_kv_options(app, kv);
  app.remove_option(app.get_option("--kv-policy"));  // --policies replaces it
  if (int rc = parse(app, args); rc >= 0) return rc;
  // The environment's knobs apply when a compressing policy is measured.
  for (const std::string& p : o.policies)
    if (p != "full") kv.settings.policy = p;
  finish_kv_options(app, kv);
  validate_bench_flags(o);
  // Synthetic depths are measurements, not generations: past the model's context they are
  // warned about below, not refused by the context rule.
  if (app.count("--ctx") == 0) kv.settings.context_length = INT32_MAX;

  auto model = load_model(o.model_path, {.threads = o.threads});
  const ModelConfig& cfg = model->config();
  for (int64_t n : o.prompts)
    if (cfg.context_length > 0 && n > cfg.context_length)
      std::fprintf(stderr, "bench: warning: a %lld-token prompt exceeds the model's context length %lld\n",
                   static_cast<long long>(n), static_cast<long long>(cfg.context_length));
  for (int64_t d : o.depths)
    if (cfg.context_length > 0 && d + o.tg > cfg.context_length)
      std::fprintf(stderr, "bench: warning: depth %lld + %lld decode steps exceeds the model's context length %lld\n",
                   static_cast<long long>(d), static_cast<long long>(o.tg), static_cast<long long>(cfg.context_length));
  ThreadPool pool(o.threads);
  Forward forward(*model, &pool);

  std::fprintf(stderr, "bench: %s (%s), %d threads\n", o.model_path.c_str(), cfg.describe().c_str(),
               pool.size());
  // The memory bandwidth is probed before every repetition, keeping the best: on a shared
  // machine one probe taken while a neighbour streams memory can read far low, and every "% of probe" would be inflated by it.
  BandwidthProbe probe;
  auto probe_again = [&] {
    std::fprintf(stderr, "bench: probing memory bandwidth...\n");
    const BandwidthProbe p = measure_read_bandwidth(pool, static_cast<size_t>(o.probe_mib) << 20, o.probe_runs);
    probe.bytes = p.bytes;
    probe.threads = p.threads;
    probe.best_gbs = std::max(probe.best_gbs, p.best_gbs);
    probe.runs += p.runs;
  };

  // TriAttention (and any policy that scores with statistics) needs calibration.
  std::string calibration = "none needed";
  bool needs_stats = false;
  for (const std::string& p : o.policies) needs_stats |= find_policy(p)->needs_stats;
  if (needs_stats) {
    std::vector<std::string> own_warnings;
    if (kv.settings.stats_path == kStatsAuto) {
      calibration = "measured by each sequence (--stats auto)";
    } else if (!kv.settings.stats_path.empty()) {
      calibration = "stats file " + kv.settings.stats_path;
    } else if ((kv.settings.params.stats = load_embedded_stats(*model, &own_warnings))) {
      print_warnings(own_warnings);
      calibration = "the statistics stored in the model";
    } else {
      std::fprintf(stderr, "bench: no --stats given: calibrating on the built-in text...\n");
      const BuiltinCalibration c = calibrate_builtin(*model, pool);
      kv.settings.params.stats = c.stats;
      calibration = "built-in text (" + std::to_string(c.tokens) + " tokens, no --stats given)";
    }
  }
  std::map<std::string, std::unique_ptr<PolicyFactory>> factories;
  for (const std::string& p : o.policies) {
    KvSettings s = kv.settings;
    s.policy = p;
    factories[p] = std::make_unique<PolicyFactory>(*model, s);
    print_warnings(factories[p]->warnings());
  }

  std::mt19937_64 rng(o.seed);
  std::vector<int32_t> prompt(static_cast<size_t>(o.pp));
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(cfg.vocab_size));
  const int32_t first_token = static_cast<int32_t>(rng() % static_cast<uint64_t>(cfg.vocab_size));
  SyntheticKv filler(*model, forward, o.sample_tokens, o.seed);

  // The --prompt texts: random tokens, one draw per length, the same for every policy.
  std::map<int64_t, std::vector<int32_t>> long_prompts;
  for (int64_t n : o.prompts) {
    std::vector<int32_t>& t = long_prompts[n];
    t.resize(static_cast<size_t>(n));
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint64_t>(cfg.vocab_size));
  }

  std::map<std::tuple<std::string, int64_t, int>, Cell> cells;
  // (policy, prompt length): every repetition's time to first token.
  std::map<std::pair<std::string, int64_t>, std::vector<PrefillMeasure>> prompt_cells;
  std::map<std::string, std::vector<double>> pp_by_policy;
  for (int rep = 0; rep < o.reps; ++rep) {
    probe_again();
    for (const std::string& p : o.policies) {
      if (o.pp <= 0) break;
      const double s = time_prefill(*model, forward, *factories[p], prompt).seconds;
      pp_by_policy[p].push_back(s > 0 ? static_cast<double>(o.pp) / s : 0);
      std::fprintf(stderr, "bench: rep %d/%d %s pp%lld %.2f tok/s\n", rep + 1, o.reps, p.c_str(),
                   static_cast<long long>(o.pp), pp_by_policy[p].back());
    }
    for (int64_t n : o.prompts)
      for (const std::string& p : o.policies) {
        const PrefillMeasure m = time_prefill(*model, forward, *factories[p], long_prompts[n]);
        prompt_cells[{p, n}].push_back(m);
        std::fprintf(stderr, "bench: rep %d/%d %s prompt %lld: first token after %.2f s, KV peak %.1f MiB\n",
                     rep + 1, o.reps, p.c_str(), static_cast<long long>(n), m.seconds,
                     static_cast<double>(m.kv_peak_bytes) / 1048576.0);
      }
    // Depth outermost, policies inside: the policies compared at one depth run back to back,
    // after the same preceding work. (Policies outermost made the second policy's depth-0
    // run follow the first one's 32K-token run and its 3.6 GB free, which measured up to 18%
    // slower than the same run on its own.)
    for (int64_t d : o.depths)
      for (int b : o.batches)
        for (const std::string& p : o.policies) {
          const DecodeMeasure m = time_decode(*model, forward, *factories[p], filler, d, o.tg, first_token, b, o.phases);
          Cell& c = cells[{p, d, b}];
          c.pp_tok_s.push_back(o.pp > 0 ? pp_by_policy[p].back() : 0);
          c.tg_tok_s.push_back(m.tok_s());
          c.scoring_share.push_back(m.scoring_share());
          c.recall_share.push_back(m.recall_share());
          c.decode.push_back(m);
          std::fprintf(stderr, "bench: rep %d/%d %s depth %lld batch %d tg%lld %.2f tok/s, scoring %.2f%%, recall %.2f%%\n",
                       rep + 1, o.reps, p.c_str(), static_cast<long long>(d), b, static_cast<long long>(o.tg), m.tok_s(),
                       100 * m.scoring_share(), 100 * m.recall_share());
        }
  }

  const double weight_bytes = static_cast<double>(model->active_weight_bytes());  // per token of one sequence
  const double flops_per_token = 2.0 * static_cast<double>(matmul_params(*model));
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string& p : o.policies)
    for (int64_t d : o.depths)
      for (int b : o.batches) {
        const Cell& c = cells[{p, d, b}];
        const Spread pp = spread(c.pp_tok_s), tg = spread(c.tg_tok_s), sc = spread(c.scoring_share),
                     rc = spread(c.recall_share);
        double kv_read = 0;
        size_t peak_bytes = 0;
        int64_t peak_tokens = 0, prunes = 0;
        for (const DecodeMeasure& m : c.decode) {
          kv_read += m.kv_read_bytes / static_cast<double>(c.decode.size());
          peak_bytes = std::max(peak_bytes, m.kv_peak_bytes);
          peak_tokens = std::max(peak_tokens, m.kv_peak_tokens);
          prunes = std::max(prunes, m.prune_events);
        }
        // A step reads the weights once for the whole batch (a MoE model: the experts its
        // tokens select) and each sequence's own cache.
        const double bw = (step_weight_bytes(*model, b) / b + kv_read) * tg.median / 1e9;
        // Phases: every repetition's steps together (seconds per forward call, i.e. per step
        // of the whole batch).
        nlohmann::json phases = nlohmann::json::object();
        if (o.phases) {
          ForwardPhases sum;
          double calls = 0;
          for (const DecodeMeasure& m : c.decode) {
            for (int i = 0; i < ForwardPhases::kCount; ++i) sum.seconds[i] += m.phases.seconds[i];
            calls += static_cast<double>(m.steps) / m.batch;
          }
          const std::vector<double> bytes = phase_bytes(*model, kv_read * b);
          double total = 0;
          for (double x : sum.seconds) total += x;
          for (int i = 0; i < ForwardPhases::kCount; ++i) {
            const double sec = calls > 0 ? sum.seconds[i] / calls : 0;
            phases[ForwardPhases::name(i)] = {{"ms_per_step", 1e3 * sec},
                                              {"share", total > 0 ? sum.seconds[i] / total : 0},
                                              {"bytes_per_step", bytes[i] >= 0 ? nlohmann::json(bytes[i]) : nlohmann::json()},
                                              {"gbs", bytes[i] >= 0 && sec > 0 ? nlohmann::json(bytes[i] / sec / 1e9)
                                                                               : nlohmann::json()}};
          }
        }
        runs.push_back({{"policy", p},
                        {"depth", d},
                        {"batch", b},
                        {"pp_tok_s", pp.median},
                        {"pp_tok_s_sd", pp.sd},
                        {"gflops", flops_per_token * pp.median / 1e9},
                        {"tg_tok_s", tg.median},
                        {"tg_tok_s_sd", tg.sd},
                        {"kv_peak_bytes", peak_bytes},
                        {"kv_peak_tokens", peak_tokens},
                        {"kv_bytes_per_token", kv_read},
                        {"scoring_share", sc.median},
                        {"recall_share", rc.median},
                        {"prune_events", prunes},
                        {"bandwidth_gbs", bw},
                        {"bandwidth_share", probe.best_gbs > 0 ? bw / probe.best_gbs : 0},
                        {"weight_bytes", model->weight_bytes()},
                        {"step_weight_bytes", step_weight_bytes(*model, b)},
                        {"synthetic_depth", true},
                        {"reps", o.reps}});
        if (o.phases) runs.back()["phases"] = phases;
      }

  nlohmann::json prompt_runs = nlohmann::json::array();
  for (const std::string& p : o.policies)
    for (int64_t n : o.prompts) {
      std::vector<double> seconds;
      size_t peak_bytes = 0;
      int64_t peak_tokens = 0, prunes = 0;
      for (const PrefillMeasure& m : prompt_cells[{p, n}]) {
        seconds.push_back(m.seconds);
        peak_bytes = std::max(peak_bytes, m.kv_peak_bytes);
        peak_tokens = std::max(peak_tokens, m.kv_peak_tokens);
        prunes = std::max(prunes, m.prune_events);
      }
      const Spread t = spread(seconds);
      prompt_runs.push_back({{"policy", p},
                             {"prompt_tokens", n},
                             {"ttft_s", t.median},
                             {"ttft_s_sd", t.sd},
                             {"tok_s", t.median > 0 ? static_cast<double>(n) / t.median : 0},
                             {"kv_peak_bytes", peak_bytes},
                             {"kv_peak_tokens", peak_tokens},
                             {"prune_events", prunes},
                             {"reps", o.reps}});
    }

  const KvSettings& s = kv.settings;
  if (o.json) {
    nlohmann::json out = {
        {"model",
         {{"path", o.model_path},
          {"description", cfg.describe()},
          {"weight_type", model->weight_type_name()},
          {"weight_bytes", model->weight_bytes()},
          {"active_weight_bytes", model->active_weight_bytes()},
          {"matmul_params", matmul_params(*model)}}},
        {"machine",
         {{"bandwidth_gbs", probe.best_gbs},
          {"threads", pool.size()},
          {"cpu", cpu_model_name()},
          {"kernels", isa_choice()},
          {"kernel_choices", kernel_choice_lines()},
          {"probe_bytes", probe.bytes},
          {"probe_runs", probe.runs}}},
        {"settings",
         {{"pp_tokens", o.pp},
          {"tg_tokens", o.tg},
          {"reps", o.reps},
          {"kv_type", kv.cache_type},
          {"kv_budget", s.params.budget},
          {"divide_length", s.params.divide_length},
          {"window", s.params.window},
          {"pruning_mode", std::string(pruning_mode_name(resolve_policy_params(s.policy, s.params).mode))},
          {"synthetic_depth", true},
          {"synthetic_sample_tokens", filler.sample_tokens()},
          {"calibration", calibration}}},
        {"runs", runs}};
    if (!o.prompts.empty()) out["prompts"] = prompt_runs;
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::printf("model     %s\n          %s, weights %s, %.1f MiB read per token", o.model_path.c_str(),
              cfg.describe().c_str(), model->weight_type_name().c_str(), weight_bytes / 1048576.0);
  if (model->expert_weight_bytes() > 0)
    std::printf(" (active parameters: %d of %d experts; all weights %.1f MiB)", cfg.n_expert_used, cfg.n_expert,
                static_cast<double>(model->weight_bytes()) / 1048576.0);
  std::printf("\n");
  std::printf("machine   %s, %d threads, read bandwidth %.1f GB/s (%zu MiB probe, best of %d)\n",
              cpu_model_name().c_str(), pool.size(), probe.best_gbs, probe.bytes >> 20, probe.runs);
  std::printf("kernels   %s\n", isa_choice().c_str());
  for (const std::string& line : kernel_choice_lines()) std::printf("          %s\n", line.c_str());
  std::printf("settings  KV %s, B=%lld, beta=%lld, W=%lld, %s; calibration: %s\n", kv.cache_type.c_str(),
              static_cast<long long>(s.params.budget), static_cast<long long>(s.params.divide_length),
              static_cast<long long>(s.params.window), std::string(pruning_mode_name(resolve_policy_params(s.policy, s.params).mode)).c_str(),
              calibration.c_str());
  std::printf("          pp%lld from an empty cache; tg%lld after the cache holds `depth` tokens of synthetic KV\n"
              "          (sampled from a real %lld-token prefill, pruned by the policy as a real prefill would be);\n"
              "          medians of %d reps (sd); tg tok/s summed over the batch;\n"
              "          GB/s = (weights / batch + KV read per sequence-step) x tok/s (MoE: the experts selected,\n"
              "          estimated for a batch as if routing were uniform)\n\n",
              static_cast<long long>(o.pp), static_cast<long long>(o.tg), static_cast<long long>(filler.sample_tokens()),
              o.reps);
  std::printf("%-18s %7s %5s %10s %8s %18s %10s %10s %8s %8s %6s\n", "policy", "depth", "batch", "pp tok/s",
              "GFLOP/s", "tg tok/s (sd)", "KVpk MiB", "KVrd MiB", "score %", "GB/s", "% bw");
  for (const nlohmann::json& r : runs) {
    char tg[32];
    std::snprintf(tg, sizeof tg, "%.2f (%.2f)", r["tg_tok_s"].get<double>(), r["tg_tok_s_sd"].get<double>());
    std::printf("%-18s %7lld %5d %10.1f %8.1f %18s %10.1f %10.1f %8.2f %8.2f %6.1f\n",
                r["policy"].get<std::string>().c_str(), static_cast<long long>(r["depth"].get<int64_t>()),
                r["batch"].get<int>(),
                r["pp_tok_s"].get<double>(), r["gflops"].get<double>(), tg,
                r["kv_peak_bytes"].get<double>() / 1048576.0, r["kv_bytes_per_token"].get<double>() / 1048576.0,
                100 * r["scoring_share"].get<double>(), r["bandwidth_gbs"].get<double>(),
                100 * r["bandwidth_share"].get<double>());
  }
  if (o.phases) {
    std::printf("\nDecode steps by phase of the forward pass (ms per step of the batch, share of the forward\n"
                "calls' time, GB/s of the bytes the phase reads: its matrices' weights, attention's K+V):\n");
    for (const nlohmann::json& r : runs) {
      std::printf("\n%s, depth %lld, batch %d\n", r["policy"].get<std::string>().c_str(),
                  static_cast<long long>(r["depth"].get<int64_t>()), r["batch"].get<int>());
      std::printf("  %-10s %10s %8s %10s %8s\n", "phase", "ms/step", "share %", "MiB/step", "GB/s");
      for (int i = 0; i < ForwardPhases::kCount; ++i) {
        const nlohmann::json& ph = r["phases"][ForwardPhases::name(i)];
        char mib[32] = "-", gbs[32] = "-";
        if (!ph["bytes_per_step"].is_null()) std::snprintf(mib, sizeof mib, "%.1f", ph["bytes_per_step"].get<double>() / 1048576.0);
        if (!ph["gbs"].is_null()) std::snprintf(gbs, sizeof gbs, "%.1f", ph["gbs"].get<double>());
        std::printf("  %-10s %10.3f %8.1f %10s %8s\n", ForwardPhases::name(i), ph["ms_per_step"].get<double>(),
                    100 * ph["share"].get<double>(), mib, gbs);
      }
    }
  }
  if (!prompt_runs.empty()) {
    std::printf("\nTime to first token (a prompt of N random tokens from an empty cache; medians of %d reps (sd)):\n\n",
                o.reps);
    std::printf("%-18s %8s %18s %10s %10s %8s\n", "policy", "prompt", "TTFT s (sd)", "tok/s", "KVpk MiB", "prunes");
    for (const nlohmann::json& r : prompt_runs) {
      char t[32];
      std::snprintf(t, sizeof t, "%.3f (%.3f)", r["ttft_s"].get<double>(), r["ttft_s_sd"].get<double>());
      std::printf("%-18s %8lld %18s %10.1f %10.1f %8lld\n", r["policy"].get<std::string>().c_str(),
                  static_cast<long long>(r["prompt_tokens"].get<int64_t>()), t, r["tok_s"].get<double>(),
                  r["kv_peak_bytes"].get<double>() / 1048576.0, static_cast<long long>(r["prune_events"].get<int64_t>()));
    }
  }
  return 0;
}

}  // namespace triattn::cli
