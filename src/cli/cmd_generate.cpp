// triattn generate: one prompt, one sequence; text streamed to stdout and a summary on
// stderr, or one JSON object with --json.
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/prompt.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"

namespace triattn::cli {

int cmd_generate(const std::vector<std::string>& args) {
  CLI::App app{"Generate text from a prompt", "triattn generate"};
  std::string model_path, prompt, prompt_file;
  int64_t n_predict = 128;
  int threads = 0;
  bool json = false, chat = false, ignore_eos = false;
  std::vector<std::string> stop;
  std::string grammar_file, schema_file;
  PromptOptions popt;
  SamplerParams sp;
  KvOptions kv;
  app.add_option("-m,--model", model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-f,--file", prompt_file, "read the prompt from a file ('-' = stdin)");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->capture_default_str();
  app.add_flag("--chat", chat, "wrap the prompt as a user message in the model's chat template");
  app.add_option("--system", popt.system, "system message (with --chat)");
  add_chat_template_options(app, popt.chat_opt);
  app.add_flag("--json", json, "print one JSON object (text, tokens, prompt_text, prompt_token_ids, stats)");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-generation tokens");
  app.add_option("--stop", stop, "stop before this text (repeatable; not included in the output)");
  app.add_option("--grammar", grammar_file, "constrain the output to this GBNF grammar (a file)");
  app.add_option("--json-schema", schema_file, "constrain the output to JSON valid against this schema (a file)");
  add_threads_option(app, threads);
  add_sampling_options(app, sp);
  add_kv_options(app, kv);
  if (int rc = parse(app, args); rc >= 0) return rc;
  finish_kv_options(app, kv);
  const bool random_seed = finish_sampling_options(app, sp);
  if (!prompt.empty() && !prompt_file.empty()) fail("give the prompt with -p or -f, not both");
  if (!prompt_file.empty()) prompt = read_text_file(prompt_file);
  // Positions are 32-bit: a larger -n (or one past 64 bits, which the parser saturates) could
  // never finish and would only fail, billions of tokens later, at the last position.
  if (n_predict < 0 || n_predict > std::numeric_limits<int32_t>::max())
    fail("-n must be between 0 and ", std::numeric_limits<int32_t>::max(), " (the most positions a sequence holds), got ",
         n_predict);
  if (!grammar_file.empty() && !schema_file.empty()) fail("give --grammar or --json-schema, not both");
  if (!chat && (popt.chat_opt.no_think || !popt.chat_opt.template_path.empty()))
    fail("--no-think and --chat-template need --chat");

  auto model = load_model(model_path, {.threads = threads});
  note_context(*model, kv.settings);
  popt.chat = chat;
  const BuiltPrompt built = build_prompt(*model, prompt, popt);
  const std::vector<int32_t>& prompt_ids = built.ids;
  ThreadPool pool(threads);
  Forward forward(*model, &pool);
  PolicyFactory policies(*model, kv.settings);
  print_warnings(policies.warnings());
  Sequence seq(*model, policies, [](const std::string& text) { std::cerr << "note: " << text << "\n"; });
  Sampler sampler(sp);
  GenerateOptions gopt;
  gopt.n_predict = n_predict;
  gopt.stop_at_eog = !ignore_eos;
  gopt.stop = stop;
  if (!grammar_file.empty() || !schema_file.empty()) {
    const std::string what = grammar_file.empty() ? schema_file : grammar_file;
    std::string gbnf;
    try {
      gbnf = grammar_file.empty()
                 ? grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(read_text_file(schema_file)))
                 : read_text_file(grammar_file);
    } catch (const nlohmann::json::exception& e) {
      fail(what, ": not JSON: ", e.what());
    }
    auto vocab = std::make_shared<const grammar::VocabTrie>(grammar::VocabTrie::from_tokenizer(
        model->tokenizer(), static_cast<size_t>(model->config().vocab_size)));
    auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf));
    grammar::check_spellable(*g, *vocab);
    gopt.grammar = std::make_shared<grammar::TokenMasker>(g, vocab);
  }
  const bool sampling = sp.temperature > 0;
  if (sampling && random_seed && !json) std::cerr << "seed " << sp.seed << " (repeat with --seed " << sp.seed << ")\n";

  TextCallback stream;
  if (!json) {
    // A chat prompt is template markup: show only the reply.
    if (!chat) std::cout << model->tokenizer().decode(prompt_ids) << std::flush;
    // A stdout that cannot be written (closed pipe, full disk) ends the generation.
    stream = [](const std::string& text) {
      std::cout << text << std::flush;
      return static_cast<bool>(std::cout);
    };
  }
  GenerateResult r = generate(*model, forward, seq, prompt_ids, gopt, sampler, stream);
  const RunStats& s = r.stats;
  if (json) {
    nlohmann::json out = {{"text", r.text},
                          {"tokens", r.tokens},
                          {"prompt_tokens", s.prompt_tokens},
                          {"prompt_text", built.text},
                          {"prompt_token_ids", prompt_ids},
                          {"finish_reason", r.finish_reason},
                          {"kv_policy", kv.settings.policy},
                          {"stats", s.to_json()}};
    if (sampling) out["seed"] = sp.seed;
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << std::endl;  // flushed before the summary line on stderr
    std::fprintf(stderr,
                 "[%s] prompt %lld tok at %.1f tok/s | generated %lld tok at %.1f tok/s | KV peak %lld tok/head, "
                 "%.2f MiB | prune events %lld | scoring %.2f ms\n",
                 kv.settings.policy.c_str(), static_cast<long long>(s.prompt_tokens), s.prefill_tok_s(),
                 static_cast<long long>(s.generated_tokens), s.decode_tok_s(),
                 static_cast<long long>(s.kv_peak_tokens), s.kv_peak_bytes / 1048576.0,
                 static_cast<long long>(s.prune_events), s.scoring_ms);
    if (kv.settings.recall.on)
      std::fprintf(stderr, "[recall] %lld rows recalled in %.2f ms | cold store peak %.2f MiB\n",
                   static_cast<long long>(s.recalled_rows), s.recall_ms, s.kv_cold_peak_bytes / 1048576.0);
  }
  return 0;
}

}  // namespace triattn::cli
