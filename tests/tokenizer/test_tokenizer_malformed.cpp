// Malformed vocabularies raise triattn::Error naming the file and the problem; never a crash.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

#include "core/error.h"
#include "formats/gguf.h"
#include "core/read_file.h"
#include "tokenizer/tokenizer.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;

class Malformed : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("triattn_tok_malformed_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A GGUF with an SPM vocabulary of 3 tokens; `edit` may break it.
  std::string write_gguf(const std::function<void(GgufWriter&)>& edit) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
    w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0});
    w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3});
    edit(w);
    const std::string path = (dir_ / "vocab.gguf").string();
    w.write(path);
    return path;
  }
  void write_file(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  // Expects an Error whose message contains every one of `needles`.
  template <class F>
  void expect_error(F&& f, std::initializer_list<std::string> needles) {
    try {
      f();
      ADD_FAILURE() << "no Error thrown";
    } catch (const Error& e) {
      for (const std::string& n : needles) {
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << " lacks " << n;
      }
    }
  }
  fs::path dir_;
};

TEST_F(Malformed, WellFormedBaseLoads) {
  // The fixture's unbroken file must load, or the error tests below prove nothing.
  auto g = GgufFile::open(write_gguf([](GgufWriter&) {}));
  EXPECT_EQ(load_tokenizer_gguf(*g)->vocab_size(), 3);
}

TEST_F(Malformed, GgufWithoutTokens) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  const std::string path = (dir_ / "vocab.gguf").string();
  w.write(path);
  auto g = GgufFile::open(path);
  expect_error([&] { load_tokenizer_gguf(*g); }, {"vocab.gguf", "tokenizer.ggml.tokens"});
}

TEST_F(Malformed, GgufScoresOfWrongLength) {
  auto g = GgufFile::open(write_gguf([](GgufWriter& w) { w.set_f32_array("tokenizer.ggml.scores", {0, 0}); }));
  expect_error([&] { load_tokenizer_gguf(*g); }, {"vocab.gguf", "scores"});
}

TEST_F(Malformed, GgufTokenTypesOfWrongLength) {
  auto g = GgufFile::open(write_gguf([](GgufWriter& w) { w.set_i32_array("tokenizer.ggml.token_type", {1}); }));
  expect_error([&] { load_tokenizer_gguf(*g); }, {"vocab.gguf", "token_type"});
}

TEST_F(Malformed, GgufBosOutOfRange) {
  auto g = GgufFile::open(write_gguf([](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", 7); }));
  expect_error([&] { load_tokenizer_gguf(*g); }, {"vocab.gguf", "BOS", "7"});
}

TEST_F(Malformed, GgufUnknownTokenizerModel) {
  auto g = GgufFile::open(write_gguf([](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "rwkv"); }));
  expect_error([&] { load_tokenizer_gguf(*g); }, {"vocab.gguf", "rwkv"});
}

TEST_F(Malformed, TruncatedTokenizerJson) {
  const std::string good = read_file(std::string(TRIATTN_SHARED_DIR) +
                                          "/models/tinystories-656k/tokenizer.json");
  write_file("tokenizer.json", good.substr(0, good.size() / 2));
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "JSON"});
  write_file("tokenizer.json", good);  // and the untruncated copy loads from the same place
  EXPECT_EQ(load_tokenizer_hf_dir(dir_.string())->vocab_size(), 2048);
}

TEST_F(Malformed, TokenizerJsonStructuralProblems) {
  const std::string norm = R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"})";
  write_file("tokenizer.json", R"({"model": {"type": "BPE"}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "vocab"});
  write_file("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "Unigram"});
  write_file("tokenizer.json",
             "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "merge #0"});
  write_file("tokenizer.json",
             "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": -4}, "merges": []}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "-4"});
  write_file("tokenizer.json",
             "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
  write_file("tokenizer_config.json", R"({"bos_token": "<s>"})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer_config.json", "<s>"});
  write_file("tokenizer_config.json", R"({"bos_token": )");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer_config.json", "JSON"});
}

TEST_F(Malformed, TokenizerJsonFieldsOfTheWrongType) {
  // Each once escaped as the JSON library's bare type_error ("type must be string, but is
  // object"), naming no file; the first came from fuzz_tokenizer_json
  // (tests/data/fuzz_regressions/fuzz_tokenizer_json/crash-model-type-object).
  const std::string norm = R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"})";
  for (const std::string& text : {
           std::string(R"({"model": {"type": {"a": 0}, "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel"}})"),
           "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": "yes"}})",
           "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},)" +
               R"( "added_tokens": [{"id": 1, "content": "<s>", "special": "no"}]})",
           "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},)" +
               R"( "post_processor": {"type": ["TemplateProcessing"]}})"}) {
    SCOPED_TRACE(text);
    write_file("tokenizer.json", text);
    expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json"});
  }
}

TEST_F(Malformed, VocabularyIdsFarPastTheTokens) {
  // A few bytes naming id 16,000,000 once sized 16M-entry tables (found by fuzz_vocab_merges,
  // tests/data/fuzz_regressions/fuzz_vocab_merges/oom-sparse-vocab-ids). Holes are allowed,
  // up to kMaxVocabHoles past the tokens listed.
  write_file("merges.txt", "#version: 0.2\n");
  write_file("vocab.json", R"({"a": 0, "b": 16000000})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"vocab.json", "16000000", "out of range"});
  write_file("vocab.json", R"({"a": 0, "b": 65537})");
  EXPECT_EQ(load_tokenizer_hf_dir(dir_.string())->vocab_size(), 65538);
  write_file("vocab.json", R"({"a": 0, "b": 65538})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"vocab.json", "65538"});
  // Added tokens: one bound for the whole list.
  write_file("vocab.json", R"({"a": 0, "b": 1})");
  write_file("tokenizer_config.json", R"({"added_tokens_decoder": {"9000000": {"content": "<x>", "special": true}}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"9000000"});
  fs::remove(dir_ / "tokenizer_config.json");
  fs::remove(dir_ / "vocab.json");
  // The SentencePiece-style tokenizer.json.
  const std::string norm = R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"})";
  write_file("tokenizer.json", "{" + norm + R"(, "model": {"type": "BPE", "vocab": {"a": 0, "b": 16000000}, "merges": []}})");
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json", "16000000", "out of range"});
}

TEST_F(Malformed, MissingTokenizerFiles) {
  expect_error([&] { load_tokenizer_hf_dir(dir_.string()); }, {"tokenizer.json"});
  expect_error([&] { load_tokenizer_llama2c((dir_ / "nope.bin").string()); }, {"nope.bin"});
}

TEST_F(Malformed, TruncatedLlama2cVocab) {
  const std::string good = read_file(std::string(TRIATTN_SHARED_DIR) + "/models/stories260k/tok512.bin");
  write_file("tok512.bin", good.substr(0, good.size() - 3));
  expect_error([&] { load_tokenizer_llama2c((dir_ / "tok512.bin").string()); }, {"tok512.bin"});
}

}  // namespace
}  // namespace triattn
