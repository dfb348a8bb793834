// triattn: one binary, one subcommand per job (docs/design.md, Contracts).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/kernel_environment.h"
#include "core/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>&);
  const char* help;
  bool hidden;
};

const Command kCommands[] = {
    {"generate", triattn::cli::cmd_generate, "generate text from a prompt (optionally with KV compression)", false},
    {"chat", triattn::cli::cmd_chat, "interactive conversation with the model's chat template", false},
    {"info", triattn::cli::cmd_info, "describe a model: architecture, shapes, types, context, template, special tokens",
     false},
    {"serve", triattn::cli::cmd_serve, "serve the model over an OpenAI-compatible HTTP API", false},
    {"tokenize", triattn::cli::cmd_tokenize, "show the token ids of a text (vocabulary only, no weights)", false},
    {"calibrate", triattn::cli::cmd_calibrate, "measure per-head query statistics for TriAttention", false},
    {"stats", triattn::cli::cmd_stats, "describe a statistics file, or convert it between formats (.pt, .npz, TRIA)",
     false},
    {"bench", triattn::cli::cmd_bench, "measure speed, KV memory and scoring overhead per KV policy and depth", false},
    {"analyze", triattn::cli::cmd_analyze, "report how concentrated a model's pre-RoPE queries and keys are", false},
    {"eval", triattn::cli::cmd_eval, "measure quality under KV eviction: ppl, agree, needle, dfs, math", false},
    {"policies", triattn::cli::cmd_policies, "list the KV policies, their parameters and defaults", false},
    {"bench-grammar", triattn::cli::cmd_bench_grammar, "measure the grammar mask per token (constrained decoding)", false},
    {"bench-serve", triattn::cli::cmd_bench_serve, "load a running server with concurrent requests and measure it",
     false},
    {"make-model", triattn::cli::cmd_make_model, "write a random-weight model of a real shape (GGUF or HF)", false},
    {"logits", triattn::cli::cmd_logits, "print the logits of a token sequence as JSON (for checks)", false},
    {"scores", triattn::cli::cmd_scores, "print TriAttention key scores after a prompt (for checks)", false},
    {"keep-overlap", triattn::cli::cmd_keep_overlap,
     "compare --stats auto's keep sets with a statistics file's at each pruning event (for checks)", false},
};

void usage(std::ostream& os) {
  os << "triattn: LLM inference with TriAttention KV-cache compression\n\n"
        "usage: triattn <command> [options]   (triattn <command> --help for its options; triattn --version)\n\n"
        "commands:\n";
  size_t width = 0;  // the longest name, then two spaces
  for (const Command& c : kCommands) width = std::max(width, std::strlen(c.name) + 2);
  for (const Command& c : kCommands)
    if (!c.hidden) os << "  " << c.name << std::string(width - std::strlen(c.name), ' ') << c.help << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-V") == 0) {
    std::cout << "triattn " << TRIATTN_VERSION << " (" << TRIATTN_COMMIT << ")\n";
    return 0;
  }
  const std::string name = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    const std::string prefix = "triattn " + name + ": error: ";
    try {
      triattn::cli::apply_isa_environment();
      const int rc = c.run(args);
      // Output that never arrived is a failure (`generate --json > /dev/full` used to exit 0).
      std::cout.flush();
      if (!std::cout || std::fflush(stdout) != 0) {
        std::cerr << prefix << "cannot write to standard output (disk full, or the reader went away)\n";
        return 1;
      }
      return rc;
    } catch (const triattn::Error& e) {
      std::cerr << prefix << e.what() << "\n";
      return 1;
    } catch (const std::bad_alloc&) {
      // Inputs are checked before they allocate; what is left is a request larger than the
      // machine (a huge budget, context or model), which is the user's to change, not a bug.
      std::cerr << prefix << "out of memory: the model or settings need more memory than this machine has\n";
      return 1;
    } catch (const std::filesystem::filesystem_error& e) {
      std::cerr << prefix << e.what() << "\n";  // names the operation and the path
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "triattn " << name << ": internal error: " << e.what() << "\n";
      return 3;
    }
  }
  std::cerr << "triattn: unknown command '" << name << "'\n\n";
  usage(std::cerr);
  return 2;
}
