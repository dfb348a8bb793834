// triattn chat: an interactive conversation on stdin/stdout. Replies stream to stdout;
// notices and per-turn statistics go to stderr, so `... | triattn chat -m M > replies.txt`
// keeps only the replies. The "> " marker is shown only when stdin is a terminal.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
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
  if (seq.recalls())
    std::fprintf(stderr, "[turn %d] recall: %lld rows recalled in %.2f ms, cold store peak %.2f MiB\n", turn_no,
                 static_cast<long long>(s.recalled_rows), s.recall_ms, s.kv_cold_peak_bytes / 1048576.0);
}

// Ctrl-C: during a reply it stops the reply (the conversation goes on); at the prompt the
// default action ends the program. The handler only sets a flag.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

struct SigintDuringReply {
  struct sigaction old {};
  SigintDuringReply() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
  }
  ~SigintDuringReply() { sigaction(SIGINT, &old, nullptr); }
};

constexpr const char* kHelp =
    "commands (alone on a line):\n"
    "  /help           this list\n"
    "  /reset          forget the conversation (the system message stays)\n"
    "  /system TEXT    set the system message and start a new conversation (/system alone clears it)\n"
    "  /quit, /exit    end (as does end of input)\n"
    "a line ending in \\ continues on the next; Ctrl-C stops a reply; start a message with // to send one "
    "beginning with /\n";

}  // namespace

int cmd_chat(const std::vector<std::string>& args) {
  CLI::App app{"Chat with a model (reads messages from stdin)", "triattn chat"};
  std::string model_path, system;
  GenerateOptions reply;
  reply.n_predict = 256;
  bool ignore_eos = false;
  int threads = 0;
  ChatPromptOptions chat_opt;
  SamplerParams sp;
  KvOptions kv;
  app.add_option("-m,--model", model_path, "model: .gguf file, HF directory or llama2.c .bin")->required();
  app.add_option("-n,--n-predict", reply.n_predict, "most tokens per reply")->capture_default_str();
  app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-generation tokens");
  app.add_option("--system", system, "system message");
  add_chat_template_options(app, chat_opt);
  add_threads_option(app, threads);
  add_sampling_options(app, sp);
  add_kv_options(app, kv);
  app.footer(std::string("Type a message and press Enter.\n") + kHelp);
  if (int rc = parse(app, args); rc >= 0) return rc;
  finish_kv_options(app, kv);
  const bool random_seed = finish_sampling_options(app, sp);
  if (reply.n_predict <= 0) fail("-n must be positive");
  reply.stop_at_eog = !ignore_eos;

  auto model = load_model(model_path, {.threads = threads});
  note_context(*model, kv.settings);
  const ChatPrompt prompt(model->tokenizer(), model->path(), chat_opt, &std::cerr);
  ThreadPool pool(threads);
  Forward forward(*model, &pool);
  PolicyFactory policies(*model, kv.settings);
  print_warnings(policies.warnings());
  auto session = std::make_unique<ChatSession>(*model, forward, policies, prompt, sp, reply, system, &std::cerr);
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    std::cerr << "chat with " << model_path << " (template: " << prompt.origin() << ", KV policy "
              << kv.settings.policy << "). /help lists the commands; /quit or Ctrl-D ends.\n";
  }
  if (random_seed && sp.temperature > 0) std::cerr << "seed " << sp.seed << " (repeat with --seed " << sp.seed << ")\n";
  int turn_no = 0;
  for (;;) {
    if (interactive) std::cout << "> " << std::flush;
    std::optional<std::string> msg = read_message(std::cin, interactive);
    if (!msg) break;
    if ((*msg)[0] == '/' && msg->compare(0, 2, "//") != 0) {
      // A command is the whole line: its name, then (for /system) an argument.
      const size_t space = msg->find(' ');
      const std::string name = msg->substr(0, space), arg = space == std::string::npos ? "" : msg->substr(space + 1);
      if ((name == "/quit" || name == "/exit") && arg.empty()) break;
      if (name == "/help" && arg.empty()) {
        std::cerr << kHelp;
      } else if (name == "/reset" && arg.empty()) {
        session->reset();
        turn_no = 0;
        std::cerr << "(conversation reset)\n";
      } else if (name == "/system") {
        system = arg;
        session = std::make_unique<ChatSession>(*model, forward, policies, prompt, sp, reply, system, &std::cerr);
        turn_no = 0;
        std::cerr << (arg.empty() ? "(system message cleared; new conversation)\n"
                                  : "(system message set; new conversation)\n");
      } else {
        std::cerr << "unknown command '" << *msg << "' (/help lists them; start with // to send a message beginning with /)\n";
      }
      continue;
    }
    if (msg->compare(0, 2, "//") == 0) msg->erase(0, 1);
    if (is_blank(*msg)) continue;
    ChatTurn t;
    try {
      const SigintDuringReply sigint;
      t = session->turn(*msg, [](const std::string& text) {
        std::cout << text << std::flush;
        return std::cout && !g_interrupted.load();
      });
    } catch (const Error& e) {
      // A refused turn (the context is full, the template rejected the message) leaves the
      // conversation as it was.
      std::cerr << "error: " << e.what() << "\n";
      continue;
    }
    ++turn_no;
    std::cout << "\n" << std::flush;
    if (!std::cout) fail("cannot write to standard output");
    if (t.finish_reason == "callback") std::cerr << "(reply interrupted)\n";
    print_turn_stats(turn_no, t, session->sequence(), kv.settings.policy);
  }
  if (interactive) std::cout << "\n";
  return 0;
}

}  // namespace triattn::cli
