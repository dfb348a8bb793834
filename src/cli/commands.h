#pragma once
// One function per subcommand, each in its own cmd_<name>.cpp. args excludes the program
// name and the subcommand. Returns the process exit code; throws Error for user errors.
#include <string>
#include <vector>

namespace triattn::cli {

int cmd_generate(const std::vector<std::string>& args);
int cmd_chat(const std::vector<std::string>& args);
int cmd_info(const std::vector<std::string>& args);
int cmd_tokenize(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_serve(const std::vector<std::string>& args);
int cmd_bench_serve(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_bench_grammar(const std::vector<std::string>& args);  // constrained decoding's mask cost
int cmd_analyze(const std::vector<std::string>& args);   // Q/K concentration report
int cmd_eval(const std::vector<std::string>& args);      // quality under eviction (ppl, agree, needle, dfs, math)
int cmd_policies(const std::vector<std::string>& args);  // the KV policies and their parameters
int cmd_logits(const std::vector<std::string>& args);      // dev: logits for given tokens
int cmd_make_model(const std::vector<std::string>& args);  // random-weight models
int cmd_scores(const std::vector<std::string>& args);      // dev: TriAttention key scores
int cmd_keep_overlap(const std::vector<std::string>& args);  // dev: --stats auto's keep sets against a file's
int cmd_stats(const std::vector<std::string>& args);       // statistics files: info, convert between formats

}  // namespace triattn::cli
