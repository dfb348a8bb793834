#pragma once
// Helpers for the formats tests: a unique temporary directory per test, whole-file byte I/O,
// a deterministic PRNG, and paths of the shared real model files.
#include <gtest/gtest.h>

#include "common/temp_dir.h"
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace triattn::test {

inline std::string shared_path(const std::string& rel) { return std::string(TRIATTN_SHARED_DIR) + "/" + rel; }
inline const std::string kTinyGguf = "models/tinystories-656k/TinyStories-656K-Q8_0.gguf";
inline const std::string kTinyDir = "models/tinystories-656k";
inline const std::string kTinySafetensors = "models/tinystories-656k/model.safetensors";
inline const std::string kStories = "models/stories260k/stories260K.bin";
inline const std::string kTok512 = "models/stories260k/tok512.bin";

using triattn::test::TempDir;  // common/temp_dir.h

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const uint8_t* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
  ASSERT_TRUE(out.good()) << path;
}
inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  write_bytes(path, b.data(), b.size());
}

// splitmix64: tiny, deterministic, good enough to pick corruption positions and test data.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  std::vector<uint8_t> bytes(size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(next());
    return b;
  }
};

// Little-endian byte building for hand-made files.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};

}  // namespace triattn::test
