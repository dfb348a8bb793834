// `triattn info` and `triattn --version`: what a user asks of a model before running it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"

namespace triattn::test {
namespace {

TEST(InfoCli, DescribesTheModelAsText) {
  const RunResult r = run_triattn({"info", "-m", shared_path("models/tinystories-656k")});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* s : {"architecture  llama", "2 layers", "head_dim 16", "context       512 tokens",
                        "BOS 1 '<|start_story|>' (added)", "EOS 2 '<|end_story|>'", "chat template built-in ChatML"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " in:\n" << r.out;
}

TEST(InfoCli, TokenTextsWithNewlinesStayOnTheirLine) {
  // llama2.c's vocabulary spells BOS and EOS with newlines around them.
  const RunResult r = run_triattn({"info", "-m", shared_path("models/stories260k/stories260K.bin")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("BOS 1 '\\n<s>\\n' (added), EOS 2 '\\n</s>\\n'"), std::string::npos) << r.out;
  // Every line starts with its field's name: no token text broke one.
  size_t lines = 0;
  for (size_t at = 0; at < r.out.size(); at = r.out.find('\n', at) + 1, ++lines)
    EXPECT_NE(r.out[at], ' ') << "a line starts inside a field at byte " << at << ":\n" << r.out;
  EXPECT_GE(lines, 6u);
}

TEST(InfoCli, JsonHasShapesTypesAndSpecialTokens) {
  const RunResult r =
      run_triattn({"info", "-m", shared_path("models/tinystories-656k/TinyStories-656K-Q8_0.gguf"), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["layers"], 2);
  EXPECT_EQ(j["n_heads"], 8);
  EXPECT_EQ(j["n_kv_heads"], 4);
  EXPECT_EQ(j["context_length"], 512);
  EXPECT_EQ(j["weight_type"], "q8_0");
  EXPECT_EQ(j["kv_bytes_per_token_f16"], 2 * 2 * 4 * 16 * 2);
  EXPECT_TRUE(j["kv_bytes_per_token_q8_0"].is_null()) << "head_dim 16 is not whole q8_0 blocks";
  // bytelm-2k: 4 layers x 2 KV heads, head_dim 64 = two blocks of 34 bytes (f16: 128).
  const RunResult b = run_triattn({"info", "-m", shared_path("models/bytelm-2k"), "--json"});
  ASSERT_EQ(b.rc, 0) << b.err;
  const auto jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(jb["kv_bytes_per_token_f16"], 2 * 4 * 2 * 128);
  EXPECT_EQ(jb["kv_bytes_per_token_q8_0"], 2 * 4 * 2 * 68);
  EXPECT_EQ(j["tokenizer"]["bos"]["id"], 1);
  EXPECT_EQ(j["tokenizer"]["end_of_generation"][0]["text"], "<|end_story|>");
  EXPECT_TRUE(j["chat_template"]["fallback"].get<bool>());
}

TEST(InfoCli, VersionNamesTheBuild) {
  const RunResult r = run_triattn({"--version"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("triattn ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find('('), std::string::npos) << r.out;
  const RunResult help = run_triattn({"--help"});
  EXPECT_NE(help.out.find("info"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace triattn::test
