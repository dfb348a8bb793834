#pragma once
// Helpers shared by the calib tests: temp paths, error-message capture, configs and
// statistics of a given shape, rewriting a safetensors file with damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "core/error.h"
#include "calib/pickle_reader.h"
#include "calib/zip_reader.h"
#include "formats/safetensors.h"
#include "kv/policy.h"
#include "model/config.h"

namespace calib_test {

// A pickle stream held in a string, as the pickle tests write them.
inline triattn::PyRef load_pickle(const std::string& bytes) {
  return triattn::unpickle(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "test.pkl");
}

inline std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("triattn_calib_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A llama-shaped config (no weights): what stats files are checked against.
inline triattn::ModelConfig model_config(const std::string& name, int L, int H, int Hkv, int d) {
  triattn::ModelConfig c;
  c.arch = "llama";
  c.name = name;
  c.n_layers = L;
  c.n_heads = H;
  c.n_kv_heads = Hkv;
  c.head_dim = d;
  c.n_embd = H * d;
  c.n_ff = 4 * c.n_embd;
  c.vocab_size = 512;
  c.context_length = 512;
  return c;
}

// Plausible statistics of c's shape (abs means above the modulus of the means).
inline triattn::HeadStats random_stats(const triattn::ModelConfig& c, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  triattn::HeadStats s;
  s.n_layers = c.n_layers, s.n_heads = c.n_heads, s.n_kv_heads = c.n_kv_heads, s.head_dim = c.head_dim;
  const size_t nq = static_cast<size_t>(c.n_layers) * c.n_heads * c.head_dim / 2;
  const size_t nk = static_cast<size_t>(c.n_layers) * c.n_kv_heads * c.head_dim / 2;
  for (size_t i = 0; i < nq; ++i) {
    s.q_mean_real.push_back(n(gen));
    s.q_mean_imag.push_back(n(gen));
    s.q_abs_mean.push_back(std::hypot(s.q_mean_real.back(), s.q_mean_imag.back()) + 0.5f);
  }
  for (size_t i = 0; i < nk; ++i) {
    s.k_mean_real.push_back(n(gen));
    s.k_mean_imag.push_back(n(gen));
    s.k_abs_mean.push_back(std::hypot(s.k_mean_real.back(), s.k_mean_imag.back()) + 0.25f);
  }
  return s;
}

using triattn::test::error_of;

// Copies the safetensors file src to dst, letting `meta` edit the metadata and `values` edit
// each f32 tensor's values (return false to drop the tensor). For damaged-file tests.
inline void rewrite_safetensors(
    const std::string& src, const std::string& dst, const std::function<void(std::map<std::string, std::string>&)>& meta,
    const std::function<bool(const std::string& name, std::vector<float>& values)>& values = nullptr) {
  auto f = triattn::SafetensorsFile::open(src);
  std::map<std::string, std::string> m = f->metadata();
  if (meta) meta(m);
  triattn::SafetensorsWriter w;
  for (const auto& [k, v] : m) w.set_metadata(k, v);
  for (const auto& t : f->tensors()) {
    if (t.type != triattn::DType::F32 || !values) {
      w.add(t.name, t.type, t.shape, t.data, t.nbytes);
      continue;
    }
    std::vector<float> v(t.nbytes / 4);
    std::memcpy(v.data(), t.data, t.nbytes);
    if (values(t.name, v)) w.add(t.name, t.type, t.shape, v.data(), t.nbytes);
  }
  f.reset();
  w.write(dst);
}

// Rewrites the bytes `from`, found in exactly one entry whose name contains `entries`, to
// `to` (same length), and that entry's CRC-32 in both zip headers, so that only the check
// under test can object. For .pt fixtures.
inline void patch_zip_bytes(const std::string& path, const std::string& entries, const std::string& from,
                            const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  std::string payload;
  int found = 0;
  {
    triattn::ZipArchive zip(path);
    for (const auto& n : zip.names()) {
      if (n.find(entries) == std::string::npos) continue;
      const auto bytes = zip.read(n);
      const std::string p(bytes.begin(), bytes.end());
      if (p.find(from) != std::string::npos) payload = p, ++found;
    }
  }
  ASSERT_EQ(found, 1) << "the bytes must be in exactly one entry";
  std::string file;
  {
    std::ifstream in(path, std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = file.find(payload);
  ASSERT_NE(at, std::string::npos);
  std::string patched = payload;
  patched.replace(payload.find(from), to.size(), to);
  auto le = [](uint32_t v) {
    return std::string{static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 24)};
  };
  const auto crc = [](const std::string& s) {
    return triattn::crc32(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  };
  const std::string old_crc = le(crc(payload)), new_crc = le(crc(patched));
  file.replace(at, patched.size(), patched);
  int replaced = 0;
  for (size_t p = file.find(old_crc); p != std::string::npos; p = file.find(old_crc, p + 4), ++replaced)
    file.replace(p, 4, new_crc);
  ASSERT_EQ(replaced, 2) << "local and central headers";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
}

}  // namespace calib_test
