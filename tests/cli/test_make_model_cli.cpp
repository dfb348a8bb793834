// `triattn make-model` as a user runs it: no --type for either format (q8_0 for GGUF, f32 for
// HF, both shown by --help), grouped-query shapes from --kv-heads, and bad values refused
// with a message that leaves no file behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_run.h"
#include "model/model.h"

namespace triattn::test {
namespace {

TEST(MakeModelCli, DefaultTypesKvHeadsAndErrors) {
  TempDir dir;
  const auto run = [&](const std::vector<std::string>& args) {
    std::vector<std::string> a = {"make-model"};
    a.insert(a.end(), args.begin(), args.end());
    return run_triattn(a);
  };
  RunResult r = run({"--preset", "tiny-llama", "--format", "hf", "-o", dir.file("hf")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE((r.out + r.err).find(", f32"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(Model::load(dir.file("hf"))->weight_type_name(), "f32");
  r = run({"--preset", "tiny-llama", "-o", dir.file("m.gguf")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Model::load(dir.file("m.gguf"))->weight_type_name(), "q8_0");
  r = run({"--help"});
  ASSERT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("q8_0 for gguf, f32 for hf"), std::string::npos) << r.out;
  // --kv-heads: grouped-query shapes with fewer KV heads (a divisor of the query heads).
  r = run({"--preset", "tiny-qwen3", "--kv-heads", "1", "-o", dir.file("mqa.gguf")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Model::load(dir.file("mqa.gguf"))->config().n_kv_heads, 1);
  r = run({"--preset", "tiny-qwen3", "--kv-heads", "3", "-o", dir.file("bad.gguf")});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("is not a multiple of n_kv_heads (3)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.gguf")));
  r = run({"--preset", "tiny-llama", "--format", "onnx", "-o", dir.file("x")});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--format 'onnx' must be gguf or hf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace triattn::test
