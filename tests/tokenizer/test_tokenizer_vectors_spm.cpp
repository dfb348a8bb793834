// llama.cpp's tokenizer test vectors for SentencePiece vocabularies (ids produced by the HF
// reference tokenizers, no BOS). File layout: every input is followed by
// "\n__ggml_vocab_test__\n"; the .out file has one line of space-separated ids per input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace triattn {
namespace {

const std::string kDir = std::string(TRIATTN_SHARED_DIR) + "/tokenizers/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    const size_t hit = text.find(sep, pos);
    if (hit == std::string::npos) break;
    out.push_back(text.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  EXPECT_EQ(pos, text.size()) << "text after the last separator";
  return out;
}

std::vector<std::vector<int32_t>> read_outputs(const std::string& text) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    int32_t id;
    while (ids >> id) v.push_back(id);
    out.push_back(v);
  }
  return out;
}

void run_vectors(const std::string& name) {
  auto gguf = GgufFile::open(kDir + name);
  auto tok = load_tokenizer_gguf(*gguf);
  const auto inputs = split_inputs(slurp(kDir + name + ".inp"));
  const auto expected = read_outputs(slurp(kDir + name + ".out"));
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(inputs.size(), expected.size());
  size_t pass = 0, round_trips = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tok->encode(inputs[i], /*add_bos=*/false, /*parse_special=*/false);
    if (ids == expected[i]) {
      ++pass;
    } else {
      ADD_FAILURE() << name << " input #" << i << " '" << inputs[i] << "' encodes differently";
    }
    // Every input round-trips exactly: the dummy-prefix space is the only one decode drops,
    // and all characters are representable through <0xNN> byte fallback.
    const std::string back = tok->decode(ids);
    if (back == inputs[i]) {
      ++round_trips;
    } else {
      ADD_FAILURE() << name << " input #" << i << " decodes to '" << back << "'";
    }
  }
  std::printf("[vectors] %s: %zu/%zu encode exactly (%.1f%%), %zu/%zu round-trip\n", name.c_str(),
              pass, inputs.size(), 100.0 * pass / inputs.size(), round_trips, inputs.size());
}

TEST(SpmVectors, LlamaSpm) { run_vectors("ggml-vocab-llama-spm.gguf"); }
TEST(SpmVectors, Phi3) { run_vectors("ggml-vocab-phi-3.gguf"); }

}  // namespace
}  // namespace triattn
