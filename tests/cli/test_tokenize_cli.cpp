// `triattn tokenize` end to end: ids and piece listing on real vocabularies, with weights
// (TinyStories GGUF / HF directory) and without (vocab-only GGUF, vocab.json + merges.txt,
// tiktoken). Vocabulary-only inputs are checked against the shared llama.cpp vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "cli/cli_run.h"
#include "tokenizer/test_bpe_util.h"

namespace triattn::test {
namespace {


std::string ids_line(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "\n";
}

// Runs `tokenize --ids --no-bos -f FILE` for a few vectors of a llama.cpp vector file: the
// longest ones (most merges, pre-tokenizer splits), then mid-sized ones. Vector i is run on
// models[i % models.size()] (several spellings of one vocabulary's path).
void check_vectors(const std::vector<std::string>& models, const std::string& vector_base, size_t n_vectors) {
  auto vectors = read_bpe_vectors(shared_path(vector_base));
  ASSERT_GT(vectors.size(), n_vectors);
  std::stable_sort(vectors.begin(), vectors.end(),
                   [](const BpeVector& a, const BpeVector& b) { return a.input.size() > b.input.size(); });
  ScratchDir dir;
  for (size_t i = 0; i < n_vectors; ++i) {
    const size_t k = i < n_vectors / 2 ? i : vectors.size() / 2 + i;  // long ones, then mid-sized
    const auto file = dir / ("input" + std::to_string(i));
    write_file(file, vectors[k].input);
    const std::string& model = models[i % models.size()];
    const RunResult r = run_triattn({"tokenize", "-m", model, "--ids", "--no-bos", "-f", file.string()});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, ids_line(vectors[k].expected)) << model << " input: " << vectors[k].input;
  }
}

TEST(TokenizeCli, StoriesGgufIdsWithBos) {
  const RunResult r = run_triattn({"tokenize", "-m", kStoriesGguf, "--ids", "Once upon a time,"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "1 80 147 201 282 57 8\n");
}

TEST(TokenizeCli, ArgumentsAreJoinedBySpaces) {
  const RunResult r = run_triattn({"tokenize", "-m", kStoriesGguf, "--ids", "Once", "upon", "a", "time,"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "1 80 147 201 282 57 8\n");
}

TEST(TokenizeCli, NoBosDropsOnlyTheBos) {
  const RunResult r = run_triattn({"tokenize", "-m", kStoriesGguf, "--ids", "--no-bos", "Once upon a time,"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "80 147 201 282 57 8\n");
}

TEST(TokenizeCli, HfDirectoryMatchesGguf) {
  const RunResult r = run_triattn({"tokenize", "-m", kStoriesDir, "--ids", "Once upon a time,"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "1 80 147 201 282 57 8\n");
}

TEST(TokenizeCli, PieceListingOneTokenPerLine) {
  const RunResult r = run_triattn({"tokenize", "-m", kStoriesGguf, "Once upon"});
  ASSERT_EQ(r.rc, 0) << r.err;
  // BOS shows its text; SentencePiece's ▁ shows as a space, inside quotes so it is visible
  // (this vocabulary's merges cross word boundaries: "ce▁" is one token).
  EXPECT_EQ(r.out, "1\t'<|start_story|>'\n80\t' '\n147\t'On'\n201\t'ce '\n189\t'up'\n111\t'on'\n");
}

TEST(TokenizeCli, ControlBytesAreEscaped) {
  // GPT-2: "\n" is its own byte-level token, "\t" too; the listing must stay one line each.
  const RunResult r = run_triattn({"tokenize", "-m", shared_path("tokenizers/ggml-vocab-gpt-2.gguf"), "a\n\tb'\\"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, pieces;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    pieces += line.substr(tab + 2, line.size() - tab - 3);  // between the quotes
  }
  EXPECT_GE(n, 3);
  EXPECT_EQ(pieces, "a\\n\\tb\\'\\\\");
}

TEST(TokenizeCli, VocabOnlyGgufMatchesVectors) {
  check_vectors({shared_path("tokenizers/ggml-vocab-gpt-2.gguf")}, "tokenizers/ggml-vocab-gpt-2.gguf", 4);
}

TEST(TokenizeCli, SpmVocabOnlyGgufMatchesVectors) {
  check_vectors({shared_path("tokenizers/ggml-vocab-llama-spm.gguf")}, "tokenizers/ggml-vocab-llama-spm.gguf", 4);
}

TEST(TokenizeCli, VocabMergesDirectoryMatchesVectors) {
  check_vectors({shared_path("tokenizers/qwen2"), shared_path("tokenizers/qwen2/vocab.json")},
                "tokenizers/ggml-vocab-qwen2.gguf", 2);
}

TEST(TokenizeCli, TiktokenMatchesVectors) {
  // The directory and the tokenizer.model file itself.
  check_vectors({shared_path("tokenizers/llama3"), shared_path("tokenizers/llama3/tokenizer.model")},
                "tokenizers/ggml-vocab-llama-bpe.gguf", 2);
}

TEST(TokenizeCli, SpecialFlagParsesSpecialTokens) {
  const std::string qwen = shared_path("tokenizers/qwen2");
  const RunResult plain = run_triattn({"tokenize", "-m", qwen, "--ids", "<|im_start|>user"});
  const RunResult special = run_triattn({"tokenize", "-m", qwen, "--ids", "--special", "<|im_start|>user"});
  ASSERT_EQ(plain.rc, 0) << plain.err;
  ASSERT_EQ(special.rc, 0) << special.err;
  EXPECT_EQ(special.out, "151644 872\n");  // <|im_start|>, "user"
  EXPECT_GT(std::count(plain.out.begin(), plain.out.end(), ' '), 2) << plain.out;  // spelled out in pieces
}

TEST(TokenizeCli, LlamaCheckpointUsesTokenizerBesideIt) {
  const RunResult r = run_triattn({"tokenize", "-m", shared_path("models/stories260k/stories260K.bin"), "--ids", "Once"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const RunResult tok = run_triattn({"tokenize", "-m", shared_path("models/stories260k/tok512.bin"), "--ids", "Once"});
  ASSERT_EQ(tok.rc, 0) << tok.err;
  EXPECT_EQ(r.out, tok.out);
  EXPECT_FALSE(r.out.empty());
}

TEST(TokenizeCli, BadInputsFailWithAMessage) {
  RunResult r = run_triattn({"tokenize", "--ids", "hello"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;

  r = run_triattn({"tokenize", "-m", "/nonexistent/model.gguf", "hello"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;

  ScratchDir dir;  // a directory without any tokenizer file
  r = run_triattn({"tokenize", "-m", dir.path().string(), "hello"});
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("no tokenizer"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace triattn::test
