#pragma once
// Pieces shared by the subcommands: argument parsing with CLI11, the options that several
// commands take (model, threads, KV settings, sampling), and prompt assembly.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::cli {

// Parses args (program and subcommand names excluded). Returns -1 to go on, or an exit code
// (0 after --help) to return immediately.
int parse(CLI::App& app, const std::vector<std::string>& args);

void add_threads_option(CLI::App& app, int& threads);

// KV options of the command line (docs/design.md, "Command line") and --ctx. Call finish_kv_options after parsing: it applies the
// environment variables (TRIATTN_RUNTIME_*) to the knobs whose flags were not given
// (cli/kv_environment.h) and checks the values.
struct KvOptions {
  KvSettings settings;
  std::string pruning_mode;  // empty: each policy's default (PolicyDescription::default_mode)
  std::string cache_type = "f16";
  // serve: --kv-policy is only the requests' default, so --stats auto may serve other policies.
  bool per_request = false;
};
void add_kv_options(CLI::App& app, KvOptions& kv);
// --kv-recall-quota and --kv-cold-memory (MiB), for the commands that take recall.
void add_kv_recall_options(CLI::App& app, KvRecallSettings& recall);
void finish_kv_options(const CLI::App& app, KvOptions& kv);

void add_sampling_options(CLI::App& app, SamplerParams& s,
                          const char* seed_help = "sampling seed (default: a random one, printed)");
// One --logit-bias item, TOKEN_ID=BIAS (Error naming it when it is not; the range is validate's).
LogitBias parse_logit_bias(const std::string& item);
// After parsing: checks the values (Error naming the first bad one) and, unless --seed was
// given, draws a random seed. Returns true when the seed was drawn (callers print it, so a
// run can be repeated).
bool finish_sampling_options(const CLI::App& app, SamplerParams& s);

// Model::load (repacking unless TRIATTN_REPACK=0 or options say no), then the loader's warnings
// (unused tensors, unverifiable metadata) on stderr.
std::shared_ptr<const Model> load_model(const std::string& path, const LoadOptions& options);
// "warning: ..." lines on stderr (a loader's or a PolicyFactory's warnings()).
void print_warnings(const std::vector<std::string>& warnings);
// A note on stderr when --ctx asks for more than the model was trained on.
void note_context(const Model& model, const KvSettings& s);

// "f16" or "f32" for --kv-type; Error naming the value otherwise.
DType parse_kv_type(const std::string& name);

// Runs ids through the model on a fresh, uncompressed cache (one sequence, one forward call)
// and returns the cache and the logits asked for. For the checking commands.
struct FreshRun {
  std::unique_ptr<Sequence> seq;  // its cache: seq->cache()
  std::vector<float> logits;  // vocab floats per returned position
};
FreshRun run_fresh(const Model& model, std::span<const int32_t> ids, DType kv_type, ForwardItem::Logits logits,
                   int threads);

// Reads a whole text file ("-" = stdin); Error naming the path when unreadable.
std::string read_text_file(const std::string& path);

// Parses "1,2,3" into ids; Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& s);

}  // namespace triattn::cli
