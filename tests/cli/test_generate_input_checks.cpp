// Bad input to `triattn generate` and its sibling commands: each is refused with a message
// that names the problem (exit 1, never a crash, a hang or rc 0 with garbage). The
// checks, by class: sampling parameters, thread counts, KV budget knobs and their
// environment variables, token ids, what is not a regular file, an unwritable stdout,
// repeated flags and the error prefix.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace triattn::test {
namespace {


// rc 1 and a message holding `what`, under the command's one prefix.
void expect_refused(const std::vector<std::string>& args, const std::string& what) {
  const RunResult r = run_triattn(args);
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "expected '" << what << "' in: " << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

std::vector<std::string> gen(std::vector<std::string> extra) {
  std::vector<std::string> a = {"generate", "-m", kStoriesDir, "-p", "Once upon a time,", "-n", "4"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(GenerateInputChecks, SamplingParametersOutOfRange) {
  expect_refused(gen({"--min-p", "1.5"}), "min_p");
  expect_refused(gen({"--min-p", "1.5", "--top-k", "0"}), "min_p");
  expect_refused(gen({"--top-p", "-0.2"}), "top_p");
  expect_refused(gen({"--top-p", "nan"}), "top_p");
  expect_refused(gen({"--temp", "-1"}), "temperature");
  expect_refused(gen({"--temp", "inf"}), "temperature");
  expect_refused(gen({"--top-k", "-5"}), "top_k");
  expect_refused(gen({"--repeat-penalty", "0"}), "repeat_penalty");
  expect_refused(gen({"--repeat-last-n", "-7"}), "repeat_last_n");
  expect_refused(gen({"--frequency-penalty", "2.5"}), "frequency_penalty");
  expect_refused(gen({"--presence-penalty", "-3"}), "presence_penalty");
  for (const char* item : {"5", "=1", "5=", "x=1", "5=y", "-1=2", "5=1x"}) expect_refused(gen({"--logit-bias", item}), "--logit-bias");
  expect_refused(gen({"--logit-bias", "5=101"}), "logit_bias");
  expect_refused(gen({"--logit-bias", "5=1", "--logit-bias", "5=2"}), "logit_bias names token 5 twice");
  expect_refused(gen({"--logit-bias", "100000=1"}), "outside the vocabulary");
}

// --logit-bias reaches the sampler: -100 on the token greedy decoding takes first removes it.
TEST(GenerateInputChecks, LogitBiasChangesGreedyOutput) {
  const auto first_token = [](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--temp", "0", "--json"});
    const RunResult r = run_triattn(gen(extra));
    EXPECT_EQ(r.rc, 0) << r.err;
    return nlohmann::json::parse(r.out)["tokens"].at(0).get<int>();
  };
  const int first = first_token({});
  EXPECT_NE(first_token({"--logit-bias", std::to_string(first) + "=-100"}), first);
}

// A temperature whose 1/T overflows behaves as greedy (it used to always pick the last
// candidate through NaN probabilities).
TEST(GenerateInputChecks, TinyTemperatureGeneratesTheGreedyText) {
  const RunResult greedy = run_triattn(gen({"-n", "30", "--temp", "0", "--json", "--ignore-eos"}));
  const RunResult tiny = run_triattn(gen({"-n", "30", "--temp", "1e-45", "--json", "--ignore-eos", "--seed", "3"}));
  ASSERT_EQ(greedy.rc, 0) << greedy.err;
  ASSERT_EQ(tiny.rc, 0) << tiny.err;
  EXPECT_EQ(nlohmann::json::parse(tiny.out)["tokens"], nlohmann::json::parse(greedy.out)["tokens"]);
}

TEST(GenerateInputChecks, ThreadCountsAreBounded) {
  expect_refused(gen({"-t", "100000"}), "is not a thread count");
  expect_refused(gen({"-t", "-1"}), "is not a thread count");
  expect_refused({"logits", "-m", kStoriesDir, "--tokens", "1,2", "-t", "4294967297"}, "-t");
  const RunResult ok = run_triattn(gen({"-t", "1", "--temp", "0"}));
  EXPECT_EQ(ok.rc, 0) << ok.err;
}

TEST(GenerateInputChecks, KvBudgetKnobsOutOfRange) {
  // Needs no statistics: the knobs are checked before the statistics are looked for.
  for (const char* b : {"0", "9223372036854775807", "9223372036854775000"})
    expect_refused(gen({"--kv-policy", "triattention", "--kv-budget", b}), "--kv-budget");
  expect_refused(gen({"--kv-policy", "triattention", "--divide-length", "0"}), "--divide-length");
  expect_refused(gen({"--kv-policy", "triattention", "--kv-budget", "64", "--sink", "64"}), "--sink");
  expect_refused(gen({"--prefill-chunk", "0"}), "--prefill-chunk");
  expect_refused(gen({"--ctx", "-3"}), "--ctx");
}

// A variable is read only when its flag is not given and the policy uses it; a variable that
// is read is checked like its flag.
TEST(GenerateInputChecks, EnvironmentVariablesFollowTheirFlags) {
  setenv("TRIATTN_RUNTIME_KV_BUDGET", "lots", 1);
  const RunResult full = run_triattn(gen({"--temp", "0"}));  // full attention: no knob used
  const RunResult flagged = run_triattn(gen({"--kv-policy", "triattention", "--kv-budget", "64"}));
  setenv("TRIATTN_RUNTIME_KV_BUDGET", "9223372036854775807", 1);
  const RunResult huge = run_triattn(gen({"--kv-policy", "triattention"}));
  unsetenv("TRIATTN_RUNTIME_KV_BUDGET");
  EXPECT_EQ(full.rc, 0) << full.err;
  // The flag won over the malformed variable; what fails is the missing statistics.
  EXPECT_EQ(flagged.rc, 1);
  EXPECT_NE(flagged.err.find("--stats"), std::string::npos) << flagged.err;
  EXPECT_EQ(flagged.err.find("TRIATTN_RUNTIME_KV_BUDGET"), std::string::npos) << flagged.err;
  EXPECT_EQ(huge.rc, 1);
  EXPECT_NE(huge.err.find("TRIATTN_RUNTIME_KV_BUDGET"), std::string::npos) << huge.err;
}

// Ids are checked, not wrapped modulo 2^32 (4294967297 used to evaluate token 1).
TEST(GenerateInputChecks, TokenIdsAreNotWrapped) {
  expect_refused({"logits", "-m", kStoriesDir, "--tokens", "4294967297"}, "'4294967297' is not a token id");
  expect_refused({"logits", "-m", kStoriesDir, "--tokens", "1,-2"}, "'-2' is not a token id");
  expect_refused({"logits", "-m", kStoriesDir, "--tokens", "1,,2"}, "is not a token id");
  expect_refused({"logits", "-m", kStoriesDir, "--tokens", "99999"}, "99999");  // outside the vocabulary
}

TEST(GenerateInputChecks, OnlyRegularFilesAreRead) {
  ScratchDir dir;
  const std::vector<std::string> from_file = {"generate", "-m", kStoriesDir, "-n", "4", "-f"};
  auto with_file = [&](const std::string& f) {
    std::vector<std::string> a = from_file;
    a.push_back(f);
    return a;
  };
  expect_refused(with_file(dir.path().string()), "is a directory");
  expect_refused(gen({"--chat", "--chat-template", dir.path().string()}), "is a directory");
  expect_refused({"tokenize", "-m", kStoriesDir, "-f", dir.path().string()}, "is a directory");
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A FIFO nobody writes to used to block forever (run_triattn's timeout gives rc 124).
  expect_refused(with_file(fifo), "FIFO");
  expect_refused({"generate", "-m", fifo, "-p", "x"}, fifo);
  expect_refused({"tokenize", "-m", fifo, "x"}, fifo);
}

TEST(GenerateInputChecks, AnUnwritableStdoutFails) {
  for (const std::vector<std::string>& a : {gen({"--json"}), gen({})}) {
    const RunResult r = run_triattn(a, "", "/dev/full");
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << r.err;
  }
}

// The last of a repeated flag wins (the README's `scripts/demo.sh --json -n 400` appends to a
// command line that has -n), and CLI errors carry the command's prefix once.
TEST(GenerateInputChecks, RepeatedFlagsTakeTheLastAndErrorsHaveOnePrefix) {
  const RunResult r = run_triattn(gen({"-n", "9", "--temp", "0", "--ignore-eos", "--json", "--json"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 9u);
  const RunResult bad = run_triattn(gen({"--no-such-flag"}));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.err.find("triattn generate: error: "), 0u) << bad.err;
  EXPECT_EQ(bad.err.find("triattn generate", 5), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace triattn::test
