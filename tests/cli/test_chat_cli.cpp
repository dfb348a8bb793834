// `generate --chat` and the `chat` REPL end to end on the real TinyStories model: the
// rendered prompt is exactly the template's text, turn 1 of a chat equals generate --chat,
// later turns feed only the new tokens (and restart when the template rewrites history),
// TriAttention pruning works across turns, and bad inputs fail with a message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/cli_run.h"

namespace triattn::test {
namespace {

const std::string kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The tinystories HF model with `chat_template` in its tokenizer_config.json.
struct StoriesWithTemplate {
  ScratchDir dir;
  explicit StoriesWithTemplate(const std::string& tpl) {
    copy_dir_files(kStoriesDir, dir.path());
    nlohmann::json cfg = nlohmann::json::parse(slurp(dir / "tokenizer_config.json"));
    cfg["chat_template"] = tpl;
    write_file(dir / "tokenizer_config.json", cfg.dump(2));
  }
  std::string path() const { return dir.path().string(); }
};

struct TurnStats {
  int turn;
  int64_t fed;
  bool whole;
  int64_t generated;
  std::string finish;
  int64_t context, kv, prune_events;
};

// The per-turn lines `chat` writes on stderr.
std::vector<TurnStats> turn_stats(const std::string& err) {
  static const std::regex re(
      R"(\[turn (\d+)\] fed (\d+) (new|\(whole conversation\)) tokens .*\| reply (\d+) tok at \S+ tok/s \((\w+)\) \| )"
      R"(context (\d+) tok \| KV (\d+) tok/head .* prune events (\d+))");
  std::vector<TurnStats> v;
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    v.push_back({std::stoi(m[1]), std::stoll(m[2]), m[3] != "new", std::stoll(m[4]), m[5], std::stoll(m[6]),
                 std::stoll(m[7]), std::stoll(m[8])});
  }
  return v;
}

// Reply tokens that went into the cache: all sampled ones but an end-of-generation token.
int64_t reply_fed(const TurnStats& t) { return t.generated - (t.finish == "stop" ? 1 : 0); }

int64_t count_ids(const std::string& model, const std::string& text, bool bos) {
  ScratchDir d;
  write_file(d / "text", text);
  std::vector<std::string> args = {"tokenize", "-m", model, "--ids", "--special", "-f", (d / "text").string()};
  if (!bos) args.push_back("--no-bos");
  const RunResult r = run_triattn(args);
  EXPECT_EQ(r.rc, 0) << r.err;
  std::istringstream ids(r.out);
  int64_t n = 0;
  std::string id;
  while (ids >> id) ++n;
  return n;
}

nlohmann::json generate_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"generate", "--json", "--temp", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult r = run_triattn(args);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(GenerateChat, RendersTheModelsTemplateExactly) {
  StoriesWithTemplate m(kChatMl);
  const RunResult r = run_triattn({"generate", "-m", m.path(), "--chat", "--system", "Tell a story.", "-p",
                                   "Once upon a time,", "-n", "4", "--temp", "0", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("no chat template"), std::string::npos) << r.err;  // the model's own was used
  const auto j = nlohmann::json::parse(r.out);
  const std::string expected =
      "<|im_start|>system\nTell a story.<|im_end|>\n<|im_start|>user\nOnce upon a time,<|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(j["prompt_text"], expected);
  const auto ids = j["prompt_token_ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);                               // the model's BOS, added once
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  EXPECT_EQ(static_cast<int64_t>(ids.size()), count_ids(m.path(), expected, true));
  EXPECT_EQ(j["prompt_tokens"], ids.size());
}

TEST(GenerateChat, TemplateWritingBosGetsNoSecondBos) {
  StoriesWithTemplate m("{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% endfor %}");
  const auto j = generate_json({"-m", m.path(), "--chat", "-p", "Once upon a time,", "-n", "2"});
  EXPECT_EQ(j["prompt_text"], "<|start_story|>Once upon a time,");
  EXPECT_EQ(j["prompt_token_ids"], nlohmann::json::parse("[1, 80, 147, 201, 282, 57, 8]"));
}

TEST(GenerateChat, ModelWithoutTemplateFallsBackToChatMl) {
  const RunResult r = run_triattn({"generate", "-m", kStoriesGguf, "--chat", "-p", "Hi", "-n", "2", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("no chat template; using ChatML"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt_text"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(GenerateChat, PlainPromptTextIsThePrompt) {
  const auto j = generate_json({"-m", kStoriesGguf, "-p", "Once upon a time,", "-n", "2"});
  EXPECT_EQ(j["prompt_text"], "Once upon a time,");
  EXPECT_EQ(j["prompt_token_ids"], nlohmann::json::parse("[1, 80, 147, 201, 282, 57, 8]"));
}

TEST(GenerateChat, NoThinkReachesTheTemplate) {
  StoriesWithTemplate m("{% for message in messages %}{{ message['content'] }}{% endfor %}"
                        "{% if enable_thinking is defined and enable_thinking is false %}[no think]{% endif %}");
  EXPECT_EQ(generate_json({"-m", m.path(), "--chat", "-p", "x", "-n", "1"})["prompt_text"], "x");
  EXPECT_EQ(generate_json({"-m", m.path(), "--chat", "--no-think", "-p", "x", "-n", "1"})["prompt_text"],
            "x[no think]");
}

TEST(ChatRepl, TwoTurnsSecondFeedsOnlyNewTokens) {
  StoriesWithTemplate m(kChatMl);
  const RunResult r = run_triattn({"chat", "-m", m.path(), "-n", "12", "--temp", "0"}, "Once upon a time,\nThe dog\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 2u) << r.err;
  EXPECT_EQ(r.err.find("re-feeding"), std::string::npos) << r.err;

  // Turn 1 is the whole first prompt and its reply is what generate --chat gives.
  const auto g = generate_json({"-m", m.path(), "--chat", "-p", "Once upon a time,", "-n", "12"});
  EXPECT_EQ(turns[0].fed, static_cast<int64_t>(g["prompt_token_ids"].size()));
  const std::string reply1 = g["text"];
  EXPECT_EQ(r.out.substr(0, reply1.size() + 1), reply1 + "\n");
  EXPECT_EQ(turns[0].context, turns[0].fed + reply_fed(turns[0]));

  // Turn 2 feeds only what the template added after the first reply, on top of the cache.
  EXPECT_FALSE(turns[1].whole);
  EXPECT_EQ(turns[1].fed,
            count_ids(m.path(), "<|im_end|>\n<|im_start|>user\nThe dog<|im_end|>\n<|im_start|>assistant\n", false));
  EXPECT_EQ(turns[1].context, turns[0].context + turns[1].fed + reply_fed(turns[1]));
  EXPECT_GT(turns[1].generated, 0);
  // Two replies, each ended by a newline.
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_GT(r.out.size(), reply1.size() + 2);
}

TEST(ChatRepl, MultiLineMessageAndCommands) {
  StoriesWithTemplate m(kChatMl);
  // "a\" continues onto "b"; /reset starts over; /nope is refused; /quit ends before "ignored".
  const RunResult r = run_triattn({"chat", "-m", m.path(), "-n", "3", "--temp", "0"},
                                  "a\\\nb\n\n/reset\n/nope\nc\n/quit\nignored\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 2u) << r.err;
  const auto g = generate_json({"-m", m.path(), "--chat", "-p", "a\nb", "-n", "1"});
  EXPECT_EQ(turns[0].fed, static_cast<int64_t>(g["prompt_token_ids"].size()));
  EXPECT_NE(r.err.find("unknown command '/nope'"), std::string::npos) << r.err;
  // After /reset the numbering and the cache start over.
  EXPECT_EQ(turns[1].turn, 1);
  EXPECT_EQ(turns[1].fed, count_ids(m.path(), "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n", true));
  EXPECT_EQ(turns[1].context, turns[1].fed + reply_fed(turns[1]));
}

TEST(ChatRepl, TemplateRewritingHistoryRefeedsEverything) {
  // Shows only the latest message: turn 2's text does not extend turn 1's.
  StoriesWithTemplate m("{% for message in messages %}{% if loop.last %}<{{ message['role'] }}>{{ message['content'] }}"
                        "{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}");
  const RunResult r = run_triattn({"chat", "-m", m.path(), "-n", "4", "--temp", "0"}, "Once\nThe dog\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 2u) << r.err;
  EXPECT_FALSE(turns[0].whole);
  EXPECT_TRUE(turns[1].whole);
  EXPECT_NE(r.err.find("re-feeding the whole conversation"), std::string::npos) << r.err;
  EXPECT_EQ(turns[1].fed, count_ids(m.path(), "<user>The dog<assistant>", true));
  EXPECT_EQ(turns[1].context, turns[1].fed + reply_fed(turns[1]));
}

TEST(ChatRepl, TriAttentionPrunesAcrossTurns) {
  ScratchDir d;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "Once upon a time, there was a little dog named Max. He liked to play in the park. ";
  write_file(d / "calib.txt", text);
  const std::string stats = (d / "stats.safetensors").string();
  const RunResult c = run_triattn({"calibrate", "-m", kStoriesGguf, "--input", (d / "calib.txt").string(), "-o", stats});
  ASSERT_EQ(c.rc, 0) << c.err;
  const RunResult r = run_triattn({"chat", "-m", kStoriesGguf, "-n", "30", "--temp", "0", "--kv-policy", "triattention",
                                   "--stats", stats, "--kv-budget", "24", "--divide-length", "8", "--window", "8"},
                                  "Once upon a time,\nThe dog\nA cat\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 3u) << r.err;
  for (size_t i = 1; i < turns.size(); ++i) {
    EXPECT_FALSE(turns[i].whole);
    EXPECT_EQ(turns[i].context, turns[i - 1].context + turns[i].fed + reply_fed(turns[i]));
  }
  EXPECT_GT(turns.back().context, 24 + 8);  // the conversation outgrew the budget...
  EXPECT_GT(turns.back().prune_events, 0);  // ...so the policy pruned
  for (const auto& t : turns) EXPECT_LE(t.kv, 24 + 8);
}

// Commands are whole lines matched exactly: /help lists them, /system starts a conversation
// with a system message, anything else beginning with / is refused (// sends a message that
// begins with /).
TEST(ChatRepl, CommandsAreMatchedExactly) {
  StoriesWithTemplate m(kChatMl);
  const RunResult r = run_triattn({"chat", "-m", m.path(), "-n", "2", "--temp", "0"},
                                  "/help\n/quitx\n/reset now\n/system Be brief.\nhi\n//x\n/quit\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("/system TEXT"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown command '/quitx'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown command '/reset now'"), std::string::npos) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 2u) << r.err;
  EXPECT_EQ(turns[0].fed, count_ids(m.path(),
                                    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                                    "<|im_start|>assistant\n",
                                    true));
  EXPECT_EQ(turns[1].fed,
            count_ids(m.path(), "<|im_end|>\n<|im_start|>user\n/x<|im_end|>\n<|im_start|>assistant\n", false));
}

// Under full attention a turn that would pass the context is refused with a message and the
// conversation goes on (it used to warn and produce garbage past the context).
TEST(ChatRepl, ATurnPastTheContextIsRefusedAndTheSessionGoesOn) {
  StoriesWithTemplate m(kChatMl);
  const RunResult r = run_triattn({"chat", "-m", m.path(), "-n", "8", "--temp", "0", "--ignore-eos", "--ctx", "40"},
                                  "Once upon a time there was a dog\nand a cat and a bird and a fish and a frog\n"
                                  "/reset\nhi\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("past its context of 40"), std::string::npos) << r.err;
  const auto turns = turn_stats(r.err);
  ASSERT_EQ(turns.size(), 2u) << r.err;  // the refused turn has no figures
  EXPECT_EQ(turns[1].turn, 1);
  for (const auto& t : turns) EXPECT_LE(t.context, 40);
}

// Ctrl-C during a reply stops that reply; the session goes on to the next message.
TEST(ChatRepl, InterruptStopsTheReplyNotTheSession) {
  ScratchDir d;
  const std::string fifo = (d / "in").string(), out = (d / "out").string(), err = (d / "err").string();
  // A reply that would run for minutes (no end token, a context far past the model's), cut
  // short by SIGINT once its first 40 bytes are out (not after a fixed time: on a loaded
  // machine the reply may not have started by then); then /quit.
  const std::string script =
      // `out` exists before the chat opens it, so the wait below never reads a missing file.
      "mkfifo " + sh_quote(fifo) + " && : > " + sh_quote(out) + " && (" + sh_quote(TRIATTN_BINARY) +
      " chat -m " + sh_quote(kStoriesGguf) +
      " -n 1000000 --ignore-eos --temp 0 --ctx 1000000 < " + sh_quote(fifo) + " > " + sh_quote(out) + " 2> " +
      sh_quote(err) + " & pid=$!; exec 3> " + sh_quote(fifo) +
      "; echo 'Once upon a time' >&3; i=0; while [ $(wc -c < " + sh_quote(out) +
      ") -lt 40 ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done; kill -INT $pid; sleep 0.5; "
      "echo '/quit' >&3; exec 3>&-; "
      "wait $pid; echo $? > " + sh_quote((d / "rc").string()) + ")";
  ASSERT_EQ(std::system(("timeout -k 5 60 sh -c " + sh_quote(script)).c_str()), 0);
  const std::string e = slurp(err);
  EXPECT_EQ(slurp(d / "rc"), "0\n") << e;
  EXPECT_NE(e.find("(reply interrupted)"), std::string::npos) << e;
  const auto turns = turn_stats(e);
  ASSERT_EQ(turns.size(), 1u) << e;
  EXPECT_EQ(turns[0].finish, "callback");
  EXPECT_GE(slurp(out).size(), 40u);
  EXPECT_GT(turns[0].generated, 1);
}

TEST(ChatCliErrors, BadInputsFailWithAMessage) {
  RunResult r = run_triattn({"chat"}, "hi\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;

  r = run_triattn({"chat", "-m", "/nonexistent/model.gguf"}, "hi\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;

  r = run_triattn({"generate", "-m", "/nonexistent/model.gguf", "--chat", "-p", "hi"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;

  StoriesWithTemplate broken("{% frobnicate %}{{ messages }}");
  for (const std::string cmd : {"chat", "generate"}) {
    r = cmd == "chat" ? run_triattn({"chat", "-m", broken.path()}, "hi\n")
                      : run_triattn({"generate", "-m", broken.path(), "--chat", "-p", "hi"});
    EXPECT_NE(r.rc, 0) << cmd;
    EXPECT_NE(r.err.find("chat template does not parse"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("tokenizer_config.json"), std::string::npos) << cmd << ": " << r.err;
  }

  r = run_triattn({"generate", "-m", kStoriesGguf, "--no-think", "-p", "hi"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--chat"), std::string::npos) << r.err;

  r = run_triattn({"chat", "-m", kStoriesGguf, "--chat-template", "/nonexistent/t.jinja"}, "hi\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("/nonexistent/t.jinja"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace triattn::test
