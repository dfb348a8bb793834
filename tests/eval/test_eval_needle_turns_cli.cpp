// `triattn eval needle --turns 2 --gen G` end to end on bytelm-2k (a few short passkey
// prompts cut from its needle set): with full attention and G = 0 the second turn gives
// exactly the single-turn outputs and KV peaks (the byte tokenizer splits a prompt at a line
// boundary the same way, and the question continues the same cache); G = 8 generates exactly
// 8 tokens between document and question, and both are reported; an evicting policy stays
// within its bound over both turns; NAME+recall is a configuration of its own; bad
// --turns/--gen and items without a question are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/eval_cli_util.h"

namespace triattn::test {
namespace {

const std::string kByteLm = shared_path("models/bytelm-2k");

// The first n items of needle_eval.jsonl whose needle lies at most 400 bytes before the
// question, cut to start at a line boundary about 100 bytes before the needle: prompts of a
// few hundred tokens that still end with "passkey ID-k = ".
// texts: the prompts written, when given.
std::string turns_short_needles(const ScratchDir& dir, size_t n, std::vector<std::string>* texts = nullptr) {
  std::ifstream in(kByteLm + "/needle_eval.jsonl");
  EXPECT_TRUE(in) << kByteLm << "/needle_eval.jsonl is missing (../shared/models/bytelm-2k)";
  std::string line, out;
  size_t kept = 0;
  while (kept < n && std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("distance").get<int64_t>() > 400) continue;
    const std::string text = j.at("text");
    const size_t needle = j.at("needle_offset").get<size_t>();
    const size_t cut = needle < 100 ? 0 : text.rfind('\n', needle - 100) + 1;
    out += nlohmann::json{{"text", text.substr(cut)}, {"answer", j.at("answer")}}.dump() + "\n";
    if (texts) texts->push_back(text.substr(cut));
    ++kept;
  }
  EXPECT_EQ(kept, n);
  return dir.write("short.jsonl", out);
}

RunResult turns_needle(const std::string& data, const std::filesystem::path& out,
                       const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"eval", "needle", "-m", kByteLm, "--data", data, "-t", "2", "-q",
                                   "-o", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_triattn(args);
}

TEST(EvalNeedleTurns, SecondTurnWithoutGenerationEqualsOneTurn) {
  ScratchDir dir;
  const std::string data = turns_short_needles(dir, 3);
  const RunResult one = turns_needle(data, dir / "one", {"--policies", "full"});
  ASSERT_EQ(one.rc, 0) << one.err;
  const RunResult two = turns_needle(data, dir / "two", {"--policies", "full", "--turns", "2", "--gen", "0"});
  ASSERT_EQ(two.rc, 0) << two.err;
  const auto j1 = read_results(dir / "one"), j2 = read_results(dir / "two");
  EXPECT_EQ(j1.at("turns"), 1);
  EXPECT_EQ(j2.at("turns"), 2);
  EXPECT_EQ(j2.at("gen"), 0);
  const auto& s1 = result_of(j1, "full").at("samples");
  const auto& s2 = result_of(j2, "full").at("samples");
  ASSERT_EQ(s1.size(), 3u);
  ASSERT_EQ(s2.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s2[i].at("output"), s1[i].at("output")) << "item " << i;
    EXPECT_EQ(s2[i].at("correct"), s1[i].at("correct")) << "item " << i;
    EXPECT_EQ(s2[i].at("kv_peak_tokens"), s1[i].at("kv_peak_tokens")) << "item " << i;
    EXPECT_EQ(s2[i].at("first_turn_output"), "") << "item " << i;
    EXPECT_EQ(s2[i].at("first_turn_tokens"), 0) << "item " << i;
    EXPECT_FALSE(s1[i].contains("first_turn_output"));
  }
  EXPECT_GT(result_of(j1, "full").at("accuracy").get<double>(), 0.5) << "short passkey prompts: " << j1.dump().substr(0, 600);
}

TEST(EvalNeedleTurns, GenerationBetweenTurnsAndBoundedPolicies) {
  ScratchDir dir;
  std::vector<std::string> texts;
  const std::string data = turns_short_needles(dir, 2, &texts);
  const RunResult r = turns_needle(data, dir / "gen", {"--policies", "snapkv+recall,snapkv", "--budgets", "64",
                                                       "--divide-length", "8", "--turns", "2", "--gen", "8"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = read_results(dir / "gen");
  EXPECT_EQ(j.at("turns"), 2);
  EXPECT_EQ(j.at("gen"), 8);
  EXPECT_EQ(j.at("configurations"), (nlohmann::json{"full", "snapkv+recall@64", "snapkv@64"}));
  const auto& full = result_of(j, "full").at("samples");
  ASSERT_EQ(full.size(), 2u);
  for (size_t i = 0; i < full.size(); ++i) {
    // Full attention holds every token: BOS, the prompt's bytes and the 8 generated between
    // the turns (and then the answer's).
    EXPECT_GE(full[i].at("kv_peak_tokens").get<int64_t>(), static_cast<int64_t>(texts[i].size()) + 1 + 8) << i;
    EXPECT_EQ(full[i].at("first_turn_tokens"), 8) << "end-of-generation does not stop them";
    EXPECT_TRUE(full[i].at("first_turn_output").is_string());
  }
  for (const char* p : {"snapkv+recall", "snapkv"}) {
    const auto& res = result_of(j, p, 64);
    EXPECT_LE(res.at("kv_peak_tokens").get<int64_t>(), 64 + 8) << p;
    EXPECT_GT(res.at("kv_peak_tokens").get<int64_t>(), 32) << p;
    EXPECT_EQ(res.at("samples").size(), 2u) << p;
  }
  EXPECT_NE(r.out.find("| snapkv+recall |"), std::string::npos) << r.out;
  const std::string svg = slurp(dir / "gen" / "needle_vs_budget.svg");
  EXPECT_NE(svg.find("snapkv+recall"), std::string::npos);
  EXPECT_NE(svg.find("question in turn 2, after 8 generated tokens"), std::string::npos);
}

TEST(EvalNeedleTurns, BadTurnsAndItemsAreRefused) {
  ScratchDir dir;
  const std::string data = turns_short_needles(dir, 1);
  const RunResult three = turns_needle(data, dir / "a", {"--policies", "full", "--turns", "3"});
  EXPECT_EQ(three.rc, 1);
  EXPECT_NE(three.err.find("--turns 3: 1 (the prompt whole) or 2"), std::string::npos) << three.err;
  const RunResult gen = turns_needle(data, dir / "b", {"--policies", "full", "--gen", "8"});
  EXPECT_EQ(gen.rc, 1);
  EXPECT_NE(gen.err.find("--gen 8 needs --turns 2"), std::string::npos) << gen.err;
  const std::string no_question = dir.write("nq.jsonl", "{\"text\": \"a\\nb\\n\", \"answer\": \"1\"}\n");
  const RunResult nq = turns_needle(no_question, dir / "c", {"--policies", "full", "--turns", "2"});
  EXPECT_EQ(nq.rc, 1);
  EXPECT_NE(nq.err.find(no_question + ": needle item on line 1"), std::string::npos) << nq.err;
  const RunResult full_recall = turns_needle(data, dir / "d", {"--policies", "full+recall"});
  EXPECT_EQ(full_recall.rc, 1);
  EXPECT_NE(full_recall.err.find("evicts nothing, so there is nothing to recall"), std::string::npos) << full_recall.err;
  const RunResult foo = turns_needle(data, dir / "e", {"--policies", "streaming+foo", "--budgets", "64"});
  EXPECT_EQ(foo.rc, 1);
  EXPECT_NE(foo.err.find("unknown suffix '+foo'"), std::string::npos) << foo.err;
}

}  // namespace
}  // namespace triattn::test
