// Every byte-level vocabulary in shared/tokenizers against its reference vectors (produced
// by the models' own HF tokenizers): ids must match exactly and decoding must give the
// input back byte for byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "formats/gguf.h"
#include "tokenizer/test_bpe_util.h"
#include "tokenizer/bpe_tokenizer.h"

namespace triattn {
namespace {

using test::bpe_shared;

struct VocabCase {
  const char* name;  // vector file stem: ggml-vocab-<name>.gguf.{inp,out}
  std::function<std::unique_ptr<Tokenizer>()> load;
};

std::unique_ptr<Tokenizer> from_gguf(const std::string& name) {
  auto g = GgufFile::open(bpe_shared("tokenizers/ggml-vocab-" + name + ".gguf"));
  return make_bpe_tokenizer_gguf(*g);
}

const VocabCase kCases[] = {
    {"gpt-2", [] { return from_gguf("gpt-2"); }},
    {"falcon", [] { return from_gguf("falcon"); }},
    {"starcoder", [] { return from_gguf("starcoder"); }},
    {"deepseek-llm", [] { return from_gguf("deepseek-llm"); }},
    {"deepseek-coder", [] { return from_gguf("deepseek-coder"); }},
    {"qwen2", [] { return make_bpe_tokenizer_vocab_merges(bpe_shared("tokenizers/qwen2"), "qwen2"); }},
    {"deepseek-r1-qwen",
     [] { return make_bpe_tokenizer_vocab_merges(bpe_shared("tokenizers/qwen2"), "deepseek-r1-qwen"); }},
    {"llama-bpe", [] { return make_bpe_tokenizer_tiktoken(bpe_shared("tokenizers/llama3/tokenizer.model")); }},
};

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (auto id : ids) s += std::to_string(id) + " ";
  return s;
}

class BpeVectors : public ::testing::TestWithParam<VocabCase> {};

TEST_P(BpeVectors, MatchReferenceAndRoundTrip) {
  const VocabCase& c = GetParam();
  const auto vectors = test::read_bpe_vectors(bpe_shared(std::string("tokenizers/ggml-vocab-") + c.name + ".gguf"));
  ASSERT_GE(vectors.size(), 40u) << "vector files missing or unreadable for " << c.name;
  const auto tok = c.load();
  size_t pass = 0, round_trip = 0;
  for (const auto& v : vectors) {
    const auto ids = tok->encode(v.input, /*add_bos=*/false, /*parse_special=*/false);
    if (ids == v.expected) {
      ++pass;
    } else {
      ADD_FAILURE() << c.name << ": input '" << v.input << "'\n  expected " << show(v.expected)
                    << "\n  got      " << show(ids);
    }
    const std::string back = tok->decode(ids);
    if (back == v.input) {
      ++round_trip;
    } else {
      ADD_FAILURE() << c.name << ": decode does not round-trip '" << v.input << "' (got '" << back << "')";
    }
  }
  std::printf("[ vectors  ] %-16s %zu/%zu ids match, %zu/%zu round-trip\n", c.name, pass, vectors.size(),
              round_trip, vectors.size());
  EXPECT_EQ(pass, vectors.size());
}

INSTANTIATE_TEST_SUITE_P(AllByteLevel, BpeVectors, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace triattn
