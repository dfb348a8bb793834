#include "cli/common.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>

#include "cli/kernel_environment.h"
#include "cli/kv_environment.h"
#include "cli/kv_knob_options.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/thread_pool.h"
#include "engine/step.h"
#include "kv/keep_set.h"
#include "kv/kv_cache.h"
#include "model/kv_shape.h"

namespace triattn::cli {

int parse(CLI::App& app, const std::vector<std::string>& args) {
  // A flag given twice takes its last value, as llama.cpp's do: `scripts/demo.sh -n 400`
  // appends to a command line that already has -n. Set here, after every option is added,
  // so no command can forget it.
  for (CLI::Option* o : app.get_options())
    if (o->get_expected_max() == 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    fail(e.what(), " (see --help)");  // main() prefixes the command's name
  }
  return -1;
}

void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("-t,--threads", threads, "worker threads (0 = all cores)")
      ->capture_default_str()
      ->check(
          [](const std::string& v) -> std::string {
            try {
              ThreadPool::check_thread_count(std::stoll(v), "-t");
            } catch (const std::exception& e) {
              return e.what();
            }
            return "";
          },
          "THREADS");
}

void add_kv_recall_options(CLI::App& app, KvRecallSettings& recall) {
  app.add_option("--kv-recall-quota", recall.quota, "with recall: most rows one recall event brings back per (layer, KV head)")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--kv-cold-memory", [&recall](int64_t mib) { recall.cold_bytes = mib < 0 ? -1 : mib << 20; },
         "with recall: MiB the cold store of one sequence may hold (the least useful rows go beyond it) "
         "[default: " + std::to_string(recall.cold_bytes >> 20) + "]");
}

void add_kv_options(CLI::App& app, KvOptions& kv) {
  KvSettings& s = kv.settings;
  // Unset sink and mode mean each policy's own default (PolicyDescription; `triattn policies`).
  if (s.params.mode) kv.pruning_mode = std::string(pruning_mode_name(*s.params.mode));
  std::string policies;
  for (const PolicyDescription& p : kv_policy_list()) policies += (policies.empty() ? "" : ", ") + p.name;
  app.add_option("--kv-policy", s.policy, "KV cache policy: " + policies + " (`triattn policies` describes them)")
      ->capture_default_str();
  add_kv_knob_options(app, kv);  // the budget rules and the policies' own knobs, from their descriptions
  app.add_option("--stats", s.stats_path,
                 "TriAttention statistics: a file from `triattn calibrate`, or auto to measure them from each "
                 "sequence's own queries (" + online_stats_policies() + ") [TRIATTN_RUNTIME_SPARSE_STATS_PATH]")
      ->capture_default_str();
  app.add_option("--kv-type", kv.cache_type, "KV cache element type: f16, f32 or q8_0 (8-bit blocks of 32 with an f16 scale: 0.53x the bytes of f16)")->capture_default_str();
  app.add_option("--prefill-chunk", s.prefill_chunk, "most prompt tokens per forward step")->capture_default_str();
  app.add_flag("--kv-recall", s.recall.on,
               "keep evicted rows in a compact cold store and bring back the ones recent queries attend to "
               "(at every pruning event and before a prompt's last token)");
  add_kv_recall_options(app, s.recall);
  app.add_option("--ctx", s.context_length,
                 "context limit in tokens (0 = the model's): the full policy stops there, a compressing one "
                 "may pass it (announced)")
      ->capture_default_str();
}

void finish_kv_options(const CLI::App& app, KvOptions& kv) {
  if (!kv.pruning_mode.empty()) {  // empty: the policy's default (or TRIATTN_RUNTIME_PRUNING_MODE)
    auto mode = pruning_mode_from_name(kv.pruning_mode);
    if (!mode) fail("--pruning-mode '", kv.pruning_mode, "' is not one of ", pruning_mode_names());
    kv.settings.params.mode = *mode;
  }
  apply_kv_environment(kv.settings, [&](const char* flag) { return app.count(flag) > 0; });
  const PolicyDescription* policy = find_kv_policy(kv.settings.policy);
  if (kv.settings.stats_path == kStatsAuto && !kv.per_request && policy && !policy->online_stats)
    fail("--stats auto: the '", kv.settings.policy, "' policy ",
         policy->needs_stats ? "cannot measure its statistics itself (give a file from `triattn calibrate`)"
                             : "uses no statistics",
         "; auto is for ", online_stats_policies());
  kv.settings.cache_type = parse_kv_type(kv.cache_type);
  if (!kv.settings.recall.on && (app.count("--kv-recall-quota") || app.count("--kv-cold-memory")))
    fail(app.count("--kv-recall-quota") ? "--kv-recall-quota" : "--kv-cold-memory", " needs --kv-recall");
  if (kv.settings.prefill_chunk <= 0 || kv.settings.prefill_chunk > kMaxBudgetTokens)
    fail("--prefill-chunk must be between 1 and ", kMaxBudgetTokens, ", got ", kv.settings.prefill_chunk);
  if (kv.settings.context_length < 0 || kv.settings.context_length > INT32_MAX)
    fail("--ctx must be between 0 (the model's context length) and ", INT32_MAX, ", got ",
         kv.settings.context_length);
}

LogitBias parse_logit_bias(const std::string& item) {
  const char* first = item.data();
  const char* last = first + item.size();
  const char* eq = std::find(first, last, '=');
  LogitBias b{};
  const auto id = std::from_chars(first, eq, b.id);
  const auto bias = eq == last ? std::from_chars_result{eq, std::errc::invalid_argument} : std::from_chars(eq + 1, last, b.bias);
  if (id.ec != std::errc{} || id.ptr != eq || b.id < 0 || bias.ec != std::errc{} || bias.ptr != last)
    fail("--logit-bias '", item, "' is not TOKEN_ID=BIAS (e.g. 42=-100)");
  return b;
}

void add_sampling_options(CLI::App& app, SamplerParams& s, const char* seed_help) {
  app.add_option("--temp", s.temperature, "temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", s.repeat_last_n, "tokens considered by the penalty (-1 = all, 0 = off)")
      ->capture_default_str();
  app.add_option("--frequency-penalty", s.frequency_penalty,
                 "subtracted from a token's logit per time it was generated (-2..2, 0 = off)")
      ->capture_default_str();
  app.add_option("--presence-penalty", s.presence_penalty,
                 "subtracted from the logit of a token generated at least once (-2..2, 0 = off)")
      ->capture_default_str();
  app.add_option_function<std::vector<std::string>>(
      "--logit-bias",
      [&s](const std::vector<std::string>& items) {
        for (const std::string& item : items) s.logit_bias.push_back(parse_logit_bias(item));
      },
      "TOKEN_ID=BIAS: add BIAS (-100..100) to that token's logit (repeatable)");
  app.add_option("--seed", s.seed, seed_help);
}

bool finish_sampling_options(const CLI::App& app, SamplerParams& s) {
  validate(s);
  if (app.count("--seed") > 0) return false;
  std::random_device rd;
  s.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return true;
}

std::shared_ptr<const Model> load_model(const std::string& path, const LoadOptions& options) {
  LoadOptions o = options;
  o.repack = o.repack && repack_environment();
  if (const KernelChoiceMode mode = kernel_choice_environment(); mode != KernelChoiceMode::Isa && !o.before_repack)
    o.before_repack = [mode, threads = o.threads](const ModelWeights& w) {
      choose_kernels(w, threads, mode, kernel_cache_path());
    };
  auto model = Model::load(path, o);
  print_warnings(model->warnings());
  return model;
}

void note_context(const Model& model, const KvSettings& s) {
  const int64_t trained = model.config().context_length;
  if (s.context_length > 0 && trained > 0 && s.context_length > trained)
    std::cerr << "note: --ctx " << s.context_length << " is larger than the model's context length (" << trained
              << " tokens): positions past it may lower quality\n";
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "warning: " << w << "\n";
}

DType parse_kv_type(const std::string& name) {
  auto type = dtype_from_name(name);
  if (!type || !is_kv_type(*type))
    fail("--kv-type '", name, "' must be f16, f32 or q8_0");
  return *type;
}

FreshRun run_fresh(const Model& model, std::span<const int32_t> ids, DType kv_type, ForwardItem::Logits logits,
                   int threads) {
  // Full attention, the whole input in one step; the check commands may pass the context.
  KvSettings s;
  s.cache_type = kv_type;
  s.prefill_chunk = std::max<int64_t>(1, static_cast<int64_t>(ids.size()));
  s.context_length = std::max<int64_t>(static_cast<int64_t>(ids.size()), model.config().context_length);
  const PolicyFactory policies(model, s);
  FreshRun r{std::make_unique<Sequence>(model, policies), {}};
  r.seq->reserve_for(static_cast<int64_t>(ids.size()));
  ThreadPool pool(threads);
  Forward forward(model, &pool);
  EngineStep step(forward);
  StepItem item;
  item.seq = r.seq.get();
  item.tokens = ids;
  item.logits = logits;
  step.run(std::span<StepItem>(&item, 1));
  if (item.error) std::rethrow_exception(item.error);
  r.logits = std::move(step.logits(0));
  return r;
}

std::string read_text_file(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  return read_file(path);
}

std::vector<int32_t> parse_token_list(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // from_chars reports out-of-range values instead of wrapping them (4294967297 used to
    // become token 1): every id must fit int32, the vocabulary check comes later.
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 0 || v > INT32_MAX)
      fail("token list: '", item, "' is not a token id (a whole number from 0 to ", INT32_MAX, ")");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) fail("token list is empty");
  return ids;
}

}  // namespace triattn::cli
