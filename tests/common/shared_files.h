#pragma once
// The data in ../shared that many tests read, and whole-file reads and writes for fixtures.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace triattn::test {

inline std::string shared_path(const std::string& rel) { return std::string(TRIATTN_SHARED_DIR) + "/" + rel; }

// The real TinyStories-656K model: as a Hugging Face directory, and as its Q8_0 GGUF.
inline const std::string kStoriesDir = shared_path("models/tinystories-656k");
inline const std::string kStoriesGguf = shared_path("models/tinystories-656k/TinyStories-656K-Q8_0.gguf");

// The whole file; "" when it cannot be read (callers check what they expect).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

}  // namespace triattn::test
