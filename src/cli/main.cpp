// triattn: one binary, one subcommand per job (DESIGN §3).
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
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
    {"tokenize", triattn::cli::cmd_tokenize, "show the token ids of a text (vocabulary only, no weights)", false},
    {"calibrate", triattn::cli::cmd_calibrate, "measure per-head query statistics for TriAttention", false},
    {"bench", triattn::cli::cmd_bench, "measure speed, KV memory and scoring overhead per KV policy and depth", false},
    {"make-model", triattn::cli::cmd_make_model, "write a random-weight model of a real shape (GGUF or HF)", false},
    {"logits", triattn::cli::cmd_logits, "print the logits of a token sequence as JSON (for checks)", false},
    {"scores", triattn::cli::cmd_scores, "print TriAttention key scores after a prompt (for checks)", false},
};

void usage(std::ostream& os) {
  os << "triattn: LLM inference with TriAttention KV-cache compression\n\n"
        "usage: triattn <command> [options]   (triattn <command> --help for its options)\n\ncommands:\n";
  for (const Command& c : kCommands)
    if (!c.hidden) os << "  " << c.name << std::string(12 - std::strlen(c.name), ' ') << c.help << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(args);
    } catch (const triattn::Error& e) {
      std::cerr << "triattn " << name << ": error: " << e.what() << "\n";
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
