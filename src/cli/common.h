#pragma once
// Pieces shared by the subcommands: argument parsing with CLI11, the options that several
// commands take (model, threads, KV settings, sampling), and prompt assembly.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/kv_setup.h"
#include "engine/sampler.h"
#include "model/model.h"

namespace triattn::cli {

// Parses args (program and subcommand names excluded). Returns -1 to go on, or an exit code
// (0 after --help) to return immediately.
int parse(CLI::App& app, const std::vector<std::string>& args);

void add_threads_option(CLI::App& app, int& threads);

// KV options of DESIGN §3. Environment variables (TRIATTN_RUNTIME_*) are read first, so
// flags override them. Call finish_kv_options after parsing.
struct KvOptions {
  KvSettings settings;
  std::string pruning_mode = "per_head";
  std::string cache_type = "f16";
};
void add_kv_options(CLI::App& app, KvOptions& kv);
void finish_kv_options(KvOptions& kv);

void add_sampling_options(CLI::App& app, SamplerParams& s);

// Reads a whole text file ("-" = stdin); Error naming the path when unreadable.
std::string read_text_file(const std::string& path);

// Parses "1,2,3" into ids; Error on anything else.
std::vector<int32_t> parse_token_list(const std::string& s);

}  // namespace triattn::cli
