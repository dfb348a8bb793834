// triattn eval <task>: quality under KV eviction, every configuration (policy × budget, full
// attention as the reference) on one loaded model, in parallel. Tasks: ppl, agree, needle,
// dfs, math (src/eval). Each writes results.json, results.csv and SVG plots into -o DIR and
// prints its table (Markdown) on stdout.
#include <iostream>
#include <nlohmann/json.hpp>

#include "calib/atomic_write.h"
#include "calib/stats_embedded.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/kv_knob_options.h"
#include "cli/prompt.h"
#include "core/error.h"
#include "eval/agree_eval.h"
#include "eval/answer_eval.h"
#include "eval/dfs_task.h"
#include "eval/jsonl.h"
#include "eval/math_answer.h"
#include "eval/needle_eval.h"
#include "eval/ppl_eval.h"
#include "eval/report.h"

namespace triattn::cli {

namespace {

using nlohmann::json;
using namespace triattn::eval;

const char* const kTasks =
    "tasks:\n"
    "  ppl     teacher-forced perplexity of a text under eviction (--text FILE)\n"
    "  agree   greedy agreement with full attention and KL divergence (--prompts FILE)\n"
    "  needle  retrieval of a planted answer, by its depth in the prompt (--data FILE.jsonl)\n"
    "  dfs     recursion-state benchmark: the DFS call stack after k steps (generated; --url for a server)\n"
    "  math    \\boxed{} answers of AIME/MATH-style problems (--data FILE.jsonl; --url for a server)\n"
    "Run `triattn eval TASK --help` for a task's options.\n";

// The options every task shares: the model, the configurations and the knobs they share.
struct Common {
  std::string model_path, out_dir, policies = "all", stats;
  std::vector<int64_t> budgets;
  KvSettings kv;
  std::string pruning_mode, kv_type = "f16", reference_kv_type;
  int threads = 0;
  bool quiet = false;
};

void add_common(CLI::App& app, Common& c, bool model_required) {
  auto* m = app.add_option("-m,--model", c.model_path, "model: .gguf file, HF directory or llama2.c .bin");
  if (model_required) m->required();
  app.add_option("-o,--output", c.out_dir, "directory for results.json, results.csv and the SVG plots")->required();
  std::string names;
  for (const PolicyInfo& p : kv_policy_list()) names += (names.empty() ? "" : ", ") + p.name;
  app.add_option("--policies", c.policies,
                 "comma-separated KV policies (" + names + ") or all (none with recall); NAME+recall: the evicting "
                 "policy NAME with the cold tier and query-aware recall. Full attention always runs as the reference. "
                 "Default all: policies that need --stats are skipped when it is not given")
      ->capture_default_str();
  app.add_option("--budgets", c.budgets, "comma-separated budgets B (tokens per layer and KV head)")->delimiter(',');
  app.add_option("--stats", c.kv.stats_path,
                 "TriAttention statistics (`triattn calibrate`), or auto: measured from each sequence's own queries");
  for (const PolicyKnob& k : kv_policy_knobs())  // the one knob of --stats auto
    if (k.flag == "--auto-stats-min")
      add_kv_knob_option(app, k, c.kv.params, c.pruning_mode, kv_knob_readers(k) + ": " + k.description, false);
  // The budget rules as the other commands describe them, B aside (--budgets); eval reads no
  // TRIATTN_RUNTIME_* variable.
  for (const PolicyKnob& k : kv_shared_params())
    if (k.flag != "--kv-budget") add_kv_knob_option(app, k, c.kv.params, c.pruning_mode, k.description, false);
  app.add_option("--kv-type", c.kv_type, "KV cache element type: f16, f32 or q8_0")->capture_default_str();
  app.add_option("--reference-kv-type", c.reference_kv_type,
                 "KV type of the reference full-attention run (default: --kv-type); with it, full attention "
                 "in --kv-type runs too: --kv-type q8_0 --reference-kv-type f16 measures what q8_0 costs");
  app.add_option("--prefill-chunk", c.kv.prefill_chunk, "most prompt tokens per forward step")->capture_default_str();
  add_kv_recall_options(app, c.kv.recall);  // for the NAME+recall configurations
  add_threads_option(app, c.threads);
  app.add_flag("-q,--quiet", c.quiet, "no progress bar");
}

// The knobs a server can take too: pruning mode and sink only when given (each policy has
// its own defaults), the KV type.
void finish_shared_knobs(const CLI::App& app, Common& c) {
  c.kv.cache_type = parse_kv_type(c.kv_type);
  if (!c.pruning_mode.empty()) {
    auto mode = pruning_mode_from_name(c.pruning_mode);
    if (!mode) fail("--pruning-mode '", c.pruning_mode, "' is not one of ", pruning_mode_names());
    c.kv.params.mode = *mode;
  }
}

// Checks the shared options; returns the configurations.
std::vector<EvalConfig> finish_common(const CLI::App& app, Common& c) {
  finish_shared_knobs(app, c);
  if (c.kv.prefill_chunk < 1) fail("--prefill-chunk must be at least 1");
  std::vector<PolicyChoice> names = parse_policies(c.policies);
  // A model that carries its statistics (calibrate --into) runs them without --stats.
  if (app.count("--policies") == 0 && c.kv.stats_path.empty() &&
      (c.model_path.empty() || !find_embedded_stats(c.model_path))) {
    std::vector<PolicyChoice> kept;
    for (const PolicyChoice& n : names) {
      const PolicyInfo* p = find_kv_policy(n.name);
      if (p && p->needs_stats) {
        std::cerr << "eval: skipping policy '" << n.label() << "' (it needs --stats from `triattn calibrate`)\n";
        continue;
      }
      kept.push_back(n);
    }
    names = kept;
  }
  if (app.count("--policies") == 0 && c.kv.stats_path == kStatsAuto)
    std::erase_if(names, [](const PolicyChoice& n) {
      const PolicyInfo* p = find_kv_policy(n.name);
      const bool skip = p && p->needs_stats && !p->online_stats;
      if (skip) std::cerr << "eval: skipping policy '" << n.label() << "' (--stats auto: it needs a statistics file)\n";
      return skip;
    });
  if (c.kv.stats_path == kStatsAuto &&
      std::none_of(names.begin(), names.end(), [](const PolicyChoice& n) {
        const PolicyInfo* p = find_kv_policy(n.name);
        return p && p->online_stats;
      }))
    fail("--stats auto: none of the policies (", c.policies, ") measures statistics itself; auto is for ",
         online_stats_policies());
  std::optional<DType> reference_kv;
  if (!c.reference_kv_type.empty()) reference_kv = parse_kv_type(c.reference_kv_type);
  prepare_output_dir(c.out_dir, "results.json", "results file");
  return make_configs(names, check_budgets(c.budgets), reference_kv);
}

json run_info(const Common& c, const std::string& model_desc, const std::vector<EvalConfig>& configs) {
  json cfgs = json::array();
  for (const EvalConfig& e : configs) cfgs.push_back(e.label());
  return {{"model", c.model_path}, {"model_config", model_desc}, {"settings", settings_json(c.kv)},
          {"configurations", cfgs}, {"threads", c.threads}};
}

void finish_report(const Common& c, const TaskReport& rep) {
  write_report(c.out_dir, rep);
  std::cout << markdown_table(rep.table) << std::flush;
  std::cerr << "eval: wrote results.json, results.csv";
  for (const auto& [name, plot] : rep.plots) std::cerr << ", " << name;
  std::cerr << " to " << c.out_dir << "\n";
}

struct Loaded {
  std::shared_ptr<const Model> model;
  std::unique_ptr<ConfigFactories> configs;
};

Loaded load(const Common& c, const std::vector<EvalConfig>& configs) {
  Loaded l;
  l.model = load_model(c.model_path, {.threads = c.threads});
  l.configs = std::make_unique<ConfigFactories>(*l.model, c.kv, configs);
  print_warnings(l.configs->warnings());
  return l;
}

int eval_ppl(const std::vector<std::string>& args) {
  CLI::App app{"Teacher-forced perplexity of a text under KV eviction (protocol: docs/design.md, Evaluation protocol)", "triattn eval ppl"};
  Common c;
  std::string text_path;
  int64_t max_tokens = 0;
  add_common(app, c, true);
  app.add_option("--text", text_path, "the text to score")->required();
  app.add_option("--max-tokens", max_tokens, "cut the tokens (BOS included) to N (0 = the model's context)")
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (max_tokens < 0) fail("--max-tokens must be >= 0");
  const auto configs = finish_common(app, c);
  const std::string text = read_text_file(text_path);
  Loaded l = load(c, configs);
  const int64_t ctx = l.model->config().context_length;
  int64_t limit = max_tokens > 0 ? max_tokens : ctx;
  if (max_tokens > 0 && ctx > 0 && max_tokens > ctx) {
    std::cerr << "eval: --max-tokens " << max_tokens << " is more than the model's context; cut to " << ctx << "\n";
    limit = ctx;
  }
  const std::vector<int32_t> tokens = ppl_tokens(l.model->tokenizer(), text, limit);
  std::cerr << "eval ppl: " << tokens.size() << " tokens, " << configs.size() << " configurations\n";
  const auto results = run_ppl(*l.model, *l.configs, tokens, c.threads, !c.quiet);
  json info = run_info(c, l.model->config().describe(), configs);
  info["text"] = text_path;
  info["tokens"] = tokens.size();
  finish_report(c, ppl_report(results, info));
  return 0;
}

int eval_agree(const std::vector<std::string>& args) {
  CLI::App app{"Greedy agreement with full attention, and KL divergence teacher-forced on full's tokens",
               "triattn eval agree"};
  Common c;
  std::string prompts_path;
  int64_t n = 64;
  add_common(app, c, true);
  app.add_option("--prompts", prompts_path, "prompts: one per line, or JSONL with a \"prompt\" field")->required();
  app.add_option("-n,--n-predict", n, "tokens generated per prompt (end-of-generation does not stop it)")
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (n < 1) fail("-n must be at least 1");
  const auto configs = finish_common(app, c);
  const auto prompts = read_prompts(prompts_path);
  Loaded l = load(c, configs);
  const auto results = run_agree(*l.model, *l.configs, prompts, n, c.threads, !c.quiet);
  json info = run_info(c, l.model->config().describe(), configs);
  info["prompts"] = prompts_path;
  info["n_predict"] = n;
  finish_report(c, agree_report(results, info));
  return 0;
}

int eval_needle(const std::vector<std::string>& args) {
  CLI::App app{"Needle retrieval: exact match of a planted answer, by where it sits in the prompt",
               "triattn eval needle"};
  Common c;
  std::string data;
  int64_t limit = 0;
  add_common(app, c, true);
  app.add_option("--data", data, "JSONL: {\"text\": prompt, \"answer\": string} per line")->required();
  app.add_option("--limit", limit, "use only the first N items (0 = all)")->capture_default_str();
  NeedleTurns turns;
  app.add_option("--turns", turns.turns,
                 "1: the prompt whole; 2: the document (up to its last line break), then the question (the last "
                 "line) as a second turn of the same sequence")
      ->capture_default_str();
  app.add_option("--gen", turns.gen, "with --turns 2: tokens generated greedily after the document, before the question")
      ->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (limit < 0) fail("--limit must be >= 0");
  check_needle_turns(turns);
  const auto configs = finish_common(app, c);
  auto items = read_needles(data);
  if (limit > 0 && static_cast<int64_t>(items.size()) > limit) items.resize(static_cast<size_t>(limit));
  if (turns.turns == 2)
    for (const NeedleItem& it : items) {  // refuse a bad item before loading the model
      try {
        split_needle_turns(it);
      } catch (const Error& e) {
        fail(data, ": ", e.what());
      }
    }
  Loaded l = load(c, configs);
  const auto results = run_needle(*l.model, *l.configs, items, c.threads, !c.quiet, turns);
  json info = run_info(c, l.model->config().describe(), configs);
  info["data"] = data;
  info["turns"] = turns.turns;
  info["gen"] = turns.gen;
  finish_report(c, needle_report(results, items, info));
  return 0;
}

// dfs and math: the engine or an OpenAI-compatible server.
struct AnswerCli {
  Common c;
  AnswerRunOptions run;
  RemoteOptions remote;
  std::string format = "auto";
  ChatPromptOptions chat;
};

void add_answer_options(CLI::App& app, AnswerCli& a) {
  add_common(app, a.c, false);
  app.add_option("--max-tokens", a.run.max_tokens, "tokens generated per reply")->capture_default_str();
  app.add_option("--temp", a.run.sampling.temperature, "temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-p", a.run.sampling.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--seed", a.run.sampling.seed, "seed: sample k uses seed + k (and dfs problems use it)")
      ->capture_default_str();
  app.add_option("--url", a.remote.url,
                 "an OpenAI-compatible server (http://HOST:PORT[/v1]) instead of -m: e.g. `triattn serve`; with "
                 "--policies, kv_policy/kv_budget are sent per request");
  app.add_option("--api-key", a.remote.api_key, "sent as Authorization: Bearer KEY (with --url)");
  app.add_option("--model-name", a.remote.model_name, "the request's \"model\" field (with --url)");
  app.add_option("--prompt-format", a.format,
                 "auto (chat template when the model has one; chat endpoint with --url), chat, or raw "
                 "(plain text: /v1/completions with --url)")
      ->capture_default_str();
  app.add_option("--chat-template", a.chat.template_path, "a Jinja chat template file to use instead of the model's");
}

PromptFormat parse_format(const std::string& f) {
  if (f == "auto") return PromptFormat::Auto;
  if (f == "chat") return PromptFormat::Chat;
  if (f == "raw") return PromptFormat::Raw;
  fail("--prompt-format '", f, "' must be auto, chat or raw");
}

int run_answer_task(const CLI::App& app, AnswerCli& a, const std::string& task, const std::vector<ScoredProblem>& problems,
                    const Scorer& scorer, const std::string& group_label, json extra) {
  a.run.threads = a.c.threads;
  a.run.progress = !a.c.quiet;
  validate(a.run.sampling);
  const PromptFormat format = parse_format(a.format);
  if (a.remote.url.empty() == a.c.model_path.empty()) fail("give either -m MODEL (the engine) or --url URL (a server)");
  json info;
  std::vector<AnswerResult> results;
  if (!a.remote.url.empty()) {
    // Against a server, configurations are only requested when --policies is given.
    finish_shared_knobs(app, a.c);
    if (!a.c.reference_kv_type.empty())
      fail("--reference-kv-type is for runs of the engine (-m); a server's KV type is its own");
    a.remote.format = format;
    a.remote.kv = a.c.kv;
    if (app.count("--policies") > 0)
      a.remote.configs = make_configs(parse_policies(a.c.policies), check_budgets(a.c.budgets));
    prepare_output_dir(a.c.out_dir, "results.json", "results file");
    if (a.c.threads == 0) a.run.threads = 4;  // requests in flight: the server decides how many it runs at once
    const auto backend = remote_backend(a.remote);
    info = run_info(a.c, "", backend->configs());
    info["backend"] = backend->describe();
    results = run_answers(*backend, problems, scorer, a.run, task);
  } else {
    const auto configs = finish_common(app, a.c);
    Loaded l = load(a.c, configs);
    const auto backend = engine_backend(*l.model, *l.configs, format, a.chat);
    info = run_info(a.c, l.model->config().describe(), configs);
    info["backend"] = backend->describe();
    results = run_answers(*backend, problems, scorer, a.run, task);
  }
  info.update(extra);
  info["sampling"] = {{"temperature", a.run.sampling.temperature}, {"top_p", a.run.sampling.top_p},
                      {"seed", a.run.sampling.seed}, {"samples", a.run.samples}, {"max_tokens", a.run.max_tokens}};
  finish_report(a.c, answer_report(task, results, problems, info, group_label));
  return 0;
}

int eval_dfs(const std::vector<std::string>& args) {
  CLI::App app{"Recursion-state benchmark: the DFS call stack after k steps on generated graphs (src/eval/dfs_task.h)",
               "triattn eval dfs"};
  AnswerCli a;
  a.run.max_tokens = 2048;
  a.run.sampling.temperature = 0;
  a.run.sampling.seed = 1;
  std::vector<int> steps = {6, 8, 10, 12, 14, 16, 18, 20};
  int per_step = 80;
  add_answer_options(app, a);
  app.add_option("--steps", steps, "step counts k (comma-separated)")->delimiter(',')->capture_default_str();
  app.add_option("--samples", per_step, "problems per step count")->capture_default_str();
  app.add_option("--tries", a.run.samples, "replies per problem (seeds; useful with --temp > 0)")->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (per_step < 1) fail("--samples must be at least 1");
  std::vector<ScoredProblem> problems;
  for (int k : steps)
    for (int i = 0; i < per_step; ++i) {
      const DfsProblem p = make_dfs_problem(k, a.run.sampling.seed, i);
      problems.push_back({p.prompt, p.answer, std::to_string(k), {{"steps", k}, {"nodes", p.n_nodes}, {"index", i}}});
    }
  return run_answer_task(app, a, "dfs", problems, dfs_correct, "steps",
                         {{"steps", steps}, {"problems_per_step", per_step}});
}

int eval_math(const std::vector<std::string>& args) {
  CLI::App app{"AIME/MATH-style problems: \\boxed{} answers compared after normalisation, averaged over seeds",
               "triattn eval math"};
  AnswerCli a;
  a.run.max_tokens = 4096;
  a.run.sampling.temperature = 0.6f;
  a.run.sampling.top_p = 0.95f;
  a.run.sampling.top_k = 0;
  a.run.sampling.min_p = 0;
  a.run.sampling.seed = 1;
  std::string data;
  int64_t limit = 0;
  add_answer_options(app, a);
  app.add_option("--data", data, "JSONL: {\"problem\": text, \"answer\": string} per line")->required();
  app.add_option("--samples", a.run.samples, "replies per problem, seeds seed..seed+K-1 (accuracy is their mean)")
      ->capture_default_str();
  app.add_option("--limit", limit, "use only the first N problems (0 = all)")->capture_default_str();
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (limit < 0) fail("--limit must be >= 0");
  std::vector<ScoredProblem> problems;
  for (const JsonlRecord& r : read_jsonl(data)) {
    const std::string problem = string_field(data, r, "problem"), answer = string_field(data, r, "answer");
    if (answer.empty()) fail(data, ":", r.line, ": field 'answer' is empty");
    problems.push_back({problem + "\n" + kMathInstruction, answer, "", {{"line", r.line}}});
    if (limit > 0 && static_cast<int64_t>(problems.size()) == limit) break;
  }
  return run_answer_task(app, a, "math", problems, math_correct, "", {{"data", data}});
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "Measure quality under KV eviction: triattn eval TASK -m MODEL ... -o DIR\n" << kTasks;
    if (args.empty()) fail("give a task (ppl, agree, needle, dfs, math)");
    return 0;
  }
  const std::string task = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (task == "ppl") return eval_ppl(rest);
  if (task == "agree") return eval_agree(rest);
  if (task == "needle") return eval_needle(rest);
  if (task == "dfs") return eval_dfs(rest);
  if (task == "math") return eval_math(rest);
  fail("unknown task '", task, "'\n", kTasks);
}

}  // namespace triattn::cli
