#pragma once
// Helpers for the byte-level BPE tests: the llama.cpp-style .inp/.out vector files.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace triattn::test {

inline std::string bpe_shared(const std::string& rel) { return std::string(TRIATTN_SHARED_DIR) + "/" + rel; }

inline std::string bpe_slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct BpeVector {
  std::string input;
  std::vector<int32_t> expected;
};

// .inp: every input is followed by "\n__ggml_vocab_test__\n"; .out: one line of ids each.
inline std::vector<BpeVector> read_bpe_vectors(const std::string& base) {
  const std::string inp = bpe_slurp(base + ".inp"), out = bpe_slurp(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<BpeVector> v;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    v.push_back(BpeVector{inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (auto& t : v) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) t.expected.push_back(id);
  }
  return v;
}

}  // namespace triattn::test
