// triattn chat: an interactive conversation on stdin/stdout. Replies stream to stdout;
// notices and per-turn statistics go to stderr, so `... | triattn chat -m M > replies.txt`
// keeps only the replies. The "> " marker is shown only when stdin is a terminal.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/chat_session.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/prompt.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace triattn::cli {

namespace {

// One message: a line, or several when each but the last ends with a backslash.
// std::nullopt at end of input with nothing read.
std::optional<std::string> read_message(std::istream& in, bool interactive) {
  std::string msg, line;
  bool any = false;
  while (std::getline(in, line)) {
    any = true;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.back() != '\\') {
      msg += line;
      return msg;
    }
    line.pop_back();
    msg += line + "\n";
    if (interactive) std::cout << ". " << std::flush;
  }
  if (!any) return std::nullopt;
  return msg;
}

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

void print_turn_stats(int turn_no, const ChatTurn& t, Sequence& seq, const std::string& policy) {
  seq.update_stats();
  const RunStats& s = seq.stats();
  const double prefill = t.prefill_seconds > 0 ? t.fed_tokens / t.prefill_seconds : 0;
  const int64_t steps = t.generated_tokens > 0 ? t.generated_tokens - 1 : 0;
  const double decode = t.decode_seconds > 0 ? steps / t.decode_seconds : 0;
  std::fprintf(stderr,
               "[turn %d] fed %lld %s tokens at %.1f tok/s | reply %lld tok at %.1f tok/s (%s) | context %lld tok | "
               "KV %lld tok/head (peak %lld, %.2f MiB) | policy %s, prune events %lld\n",
               turn_no, static_cast<long long>(t.fed_tokens), t.refed_all ? "(whole conversation)" : "new", prefill,
               static_cast<long long>(t.generated_tokens), decode, t.finish_reason.c_str(),
               static_cast<long long>(seq.cache().n_processed()), static_cast<long long>(seq.cache().max_size()),
               static_cast<long long>(s.kv_peak_tokens), s.kv_peak_bytes / 1048576.0, policy.c_str(),
               static_cast<long long>(s.prune_events));
}

}  // namespace

int cmd_chat(const std::vector<std::string>& args) {
  CLI::App app{"Chat with a model (reads messages from stdin)", "triattn chat"};
  std::string model_path, system;
  int64_t n_predict = 256;
  int threads = 0;
  ChatPromptOptions chat_opt;
  SamplerParams sp;
  KvOptions kv;
  app.add_option("-m,--model", model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  app.add_option("-n,--n-predict", n_predict, "most tokens per reply")->capture_default_str();
  app.add_option("--system", system, "system message");
  add_chat_template_options(app, chat_opt);
  add_threads_option(app, threads);
  add_sampling_options(app, sp);
  add_kv_options(app, kv);
  app.footer(
      "Type a message and press Enter; end a line with \\ to continue the message on the next line.\n"
      "Commands: /reset (forget the conversation), /quit (or end of input).");
  if (int rc = parse(app, args); rc >= 0) return rc;
  finish_kv_options(kv);
  if (n_predict <= 0) fail("-n must be positive");

  auto model = Model::load(model_path, {.threads = threads});
  const ChatPrompt prompt(model->tokenizer(), model->path(), chat_opt, &std::cerr);
  ThreadPool pool(threads);
  Forward forward(*model, &pool);
  PolicyFactory policies(*model, kv.settings);
  ChatSession session(*model, forward, policies, prompt, sp, n_predict, system, &std::cerr);

  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    std::cerr << "chat with " << model_path << " (template: " << prompt.origin() << ", KV policy "
              << kv.settings.policy << "). /reset forgets, /quit or Ctrl-D ends; a trailing \\ continues a line.\n";
  }
  int turn_no = 0;
  for (;;) {
    if (interactive) std::cout << "> " << std::flush;
    const std::optional<std::string> msg = read_message(std::cin, interactive);
    if (!msg || *msg == "/quit" || *msg == "/exit") break;
    if (*msg == "/reset") {
      session.reset();
      turn_no = 0;
      std::cerr << "(conversation reset)\n";
      continue;
    }
    if (msg->size() > 1 && (*msg)[0] == '/' && msg->find_first_of(" \n") == std::string::npos) {
      std::cerr << "unknown command " << *msg << " (commands: /reset, /quit)\n";
      continue;
    }
    if (is_blank(*msg)) continue;
    ++turn_no;
    const ChatTurn t = session.turn(*msg, [](const std::string& text) {
      std::cout << text << std::flush;
      return true;
    });
    std::cout << "\n" << std::flush;
    print_turn_stats(turn_no, t, session.sequence(), kv.settings.policy);
  }
  if (interactive) std::cout << "\n";
  return 0;
}

}  // namespace triattn::cli
