// Robustness of every reader against damaged files: the real GGUF, safetensors, llama2.c
// checkpoint and tokenizer, truncated at many offsets and with header bytes overwritten at
// deterministic pseudo-random positions. Each case must either open with all tensor data
// inside the file, or throw triattn::Error: never crash, hang or throw anything else.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "formats/format_test_util.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "formats/safetensors.h"

namespace triattn {
namespace {

using test::shared_path;
using test::TempDir;

struct Tally {
  int opened = 0;
  int refused = 0;
};

bool inside(const MappedFile& f, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return b >= f.data() && b <= f.data() + f.size() && n <= static_cast<size_t>(f.data() + f.size() - b);
}

// Open with one reader and check what a successful open promises.
void check_gguf(const std::string& path) {
  auto f = GgufFile::open(path);
  std::vector<std::pair<const uint8_t*, size_t>> spans;
  for (const auto& t : f->tensors()) {
    ASSERT_TRUE(inside(f->file(), t.data, t.nbytes)) << t.name;
    ASSERT_EQ(t.view().nbytes(), t.nbytes) << t.name;
    spans.emplace_back(static_cast<const uint8_t*>(t.data), t.nbytes);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) ASSERT_GE(spans[i].first, spans[i - 1].first + spans[i - 1].second);
}

void check_safetensors(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  for (const auto& t : f->tensors()) {
    ASSERT_TRUE(inside(f->file(), t.data, t.nbytes)) << t.name;
    ASSERT_EQ(t.view().nbytes(), t.nbytes) << t.name;
  }
}

void check_llama2c(const std::string& path) {
  auto ck = Llama2cCheckpoint::open(path);
  std::vector<const Llama2cTensor*> tensors = {&ck->tok_embeddings, &ck->rms_final, &ck->wcls};
  for (const auto& l : ck->layers)
    for (const Llama2cTensor* t : {&l.rms_att, &l.wq, &l.wk, &l.wv, &l.wo, &l.rms_ffn, &l.w1, &l.w2, &l.w3})
      tensors.push_back(t);
  for (const Llama2cTensor* t : tensors) ASSERT_TRUE(inside(ck->file(), t->data, t->nbytes()));
}

void check_vocab(const std::string& path) {
  auto v = Llama2cVocab::open(path);
  ASSERT_EQ(v.pieces.size(), v.scores.size());
  ASSERT_FALSE(v.pieces.empty());
}

// Runs one case; anything but success or triattn::Error is a test failure.
void run_case(const std::function<void(const std::string&)>& check, const std::string& path,
              const std::string& label, Tally& tally) {
  try {
    check(path);
    ++tally.opened;
  } catch (const Error&) {
    ++tally.refused;
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": threw a non-Error exception: " << e.what();
  } catch (...) {
    ADD_FAILURE() << label << ": threw a non-exception";
  }
}

// Truncations, largest first, so one copy of the file is shrunk in place (no rewrites):
// every length below `dense`, then `sparse` evenly spaced lengths up to the full size.
Tally truncations(const std::string& original, const std::function<void(const std::string&)>& check,
                  size_t dense, size_t sparse) {
  TempDir dir;
  const std::string path = dir.file("t.bin");
  std::filesystem::copy_file(original, path);
  const size_t size = std::filesystem::file_size(path);
  std::vector<size_t> lengths;
  for (size_t n = 0; n < std::min(dense, size); ++n) lengths.push_back(n);
  for (size_t k = 0; k < sparse && size > dense; ++k) lengths.push_back(dense + (size - dense) * k / sparse);
  lengths.push_back(size - 1);
  std::sort(lengths.rbegin(), lengths.rend());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  Tally tally;
  for (size_t n : lengths) {
    std::filesystem::resize_file(path, n);
    run_case(check, path, original + " truncated to " + std::to_string(n), tally);
    if (::testing::Test::HasFailure()) break;
  }
  return tally;
}

// Overwrites 1-8 bytes at positions chosen by `pick`, runs the case, restores the bytes.
Tally overwrites(const std::string& original, const std::function<void(const std::string&)>& check,
                 int cases, uint64_t seed, const std::function<size_t(test::Rng&)>& pick) {
  TempDir dir;
  const std::string path = dir.file("f.bin");
  std::filesystem::copy_file(original, path);
  const auto bytes = test::read_bytes(original);
  const int fd = ::open(path.c_str(), O_WRONLY);
  EXPECT_GE(fd, 0);
  test::Rng rng(seed);
  Tally tally;
  for (int c = 0; c < cases && !::testing::Test::HasFailure(); ++c) {
    const size_t pos = std::min(pick(rng), bytes.size() - 1);
    uint8_t patch[8];
    size_t len = 1;
    switch (rng.below(6)) {
      case 0: patch[0] = static_cast<uint8_t>(rng.next()); break;                       // random byte
      case 1: patch[0] = bytes[pos] ^ static_cast<uint8_t>(1u << rng.below(8)); break;  // one bit
      case 2: {                                                                          // random u64
        const uint64_t v = rng.next();
        std::memcpy(patch, &v, 8);
        len = 8;
        break;
      }
      case 3: std::memset(patch, 0xff, 8), len = 8; break;  // maximal length / count
      case 4: {                                             // plausible but wrong small value
        const uint64_t v = rng.below(1u << rng.below(24));
        std::memcpy(patch, &v, 8);
        len = 8;
        break;
      }
      default:  // keep digits digits, so JSON stays valid but numbers change
        patch[0] = (bytes[pos] >= '0' && bytes[pos] <= '9') ? static_cast<uint8_t>('0' + rng.below(10))
                                                             : static_cast<uint8_t>(rng.next());
    }
    len = std::min(len, bytes.size() - pos);
    EXPECT_EQ(::pwrite(fd, patch, len, static_cast<off_t>(pos)), static_cast<ssize_t>(len));
    run_case(check, path, original + " case " + std::to_string(c) + " at " + std::to_string(pos), tally);
    EXPECT_EQ(::pwrite(fd, bytes.data() + pos, len, static_cast<off_t>(pos)), static_cast<ssize_t>(len));
  }
  ::close(fd);
  return tally;
}

size_t find_bytes(const std::vector<uint8_t>& hay, const std::string& needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
  return static_cast<size_t>(it - hay.begin());
}

TEST(CorruptGguf, Truncations) {
  const std::string path = shared_path(test::kTinyGguf);
  // Every length through the first 2 KB of header, then through the rest of it and the data.
  const Tally a = truncations(path, check_gguf, 2048, 400);
  EXPECT_EQ(a.opened, 0);  // the tensor data fills the file: every cut loses some
  EXPECT_GT(a.refused, 2400);
}

TEST(CorruptGguf, HeaderOverwrites) {
  const std::string path = shared_path(test::kTinyGguf);
  const auto bytes = test::read_bytes(path);
  const size_t infos = find_bytes(bytes, "output_norm.weight") - 8;  // first tensor info
  const size_t data_start = 50848;
  ASSERT_LT(infos, data_start);
  // A third each: the fixed header, the tensor infos, anywhere in the metadata.
  const Tally t = overwrites(path, check_gguf, 600, 1, [&](test::Rng& r) -> size_t {
    switch (r.below(3)) {
      case 0: return r.below(64);
      case 1: return infos + r.below(data_start - infos);
      default: return r.below(data_start);
    }
  });
  EXPECT_GT(t.refused, 150);
  EXPECT_GT(t.opened, 20);  // bytes inside strings and padding change nothing structural
}

TEST(CorruptGguf, TokenizerVocabTruncationsAndOverwrites) {
  const std::string path = shared_path("tokenizers/ggml-vocab-llama-spm.gguf");
  const Tally a = truncations(path, check_gguf, 256, 40);
  EXPECT_EQ(a.opened, 0);
  const Tally b = overwrites(path, check_gguf, 40, 2, [](test::Rng& r) -> size_t { return r.below(4096); });
  EXPECT_GT(b.refused, 5);
}

TEST(CorruptSafetensors, Truncations) {
  const std::string path = shared_path(test::kTinySafetensors);
  const Tally a = truncations(path, check_safetensors, 2168 + 64, 200);  // all of the header
  EXPECT_EQ(a.opened, 0);
  EXPECT_GT(a.refused, 2400);
}

TEST(CorruptSafetensors, HeaderOverwrites) {
  const std::string path = shared_path(test::kTinySafetensors);
  const Tally t = overwrites(path, check_safetensors, 400, 3, [](test::Rng& r) -> size_t {
    return r.below(4) == 0 ? r.below(8) : r.below(2168);
  });
  EXPECT_GT(t.refused, 200);
}

TEST(CorruptLlama2c, Truncations) {
  const std::string path = shared_path(test::kStories);
  const Tally a = truncations(path, check_llama2c, 1024, 200);
  EXPECT_EQ(a.opened, 0);
  EXPECT_GT(a.refused, 1200);
}

TEST(CorruptLlama2c, HeaderOverwrites) {
  const std::string path = shared_path(test::kStories);
  const Tally t = overwrites(path, check_llama2c, 300, 4, [](test::Rng& r) -> size_t {
    return r.below(8) == 0 ? 28 + r.below(1000) : r.below(28);
  });
  EXPECT_GT(t.refused, 150);
}

// The int8 export: its 256-byte header (version, dims, shared byte, group size) and the
// int8/scale data after it.
TEST(CorruptLlama2c, Q80TruncationsAndHeaderOverwrites) {
  const std::string path = shared_path("models/stories260k/stories260K_q80.bin");
  const Tally a = truncations(path, check_llama2c, 512, 200);
  EXPECT_EQ(a.opened, 0);
  EXPECT_GT(a.refused, 700);
  const Tally t = overwrites(path, check_llama2c, 300, 6, [](test::Rng& r) -> size_t {
    return r.below(8) == 0 ? 256 + r.below(4000) : r.below(41);
  });
  EXPECT_GT(t.refused, 150);
}

TEST(CorruptLlama2c, VocabTruncationsAndOverwrites) {
  const std::string path = shared_path(test::kTok512);
  const Tally a = truncations(path, check_vocab, 1536, 300);
  // Cuts at record boundaries are valid shorter vocabularies; all others must be refused.
  EXPECT_GT(a.opened, 100);
  EXPECT_GT(a.refused, 1400);
  const Tally b = overwrites(path, check_vocab, 300, 5, [](test::Rng& r) -> size_t { return r.below(6227); });
  EXPECT_GT(b.refused, 30);
}

}  // namespace
}  // namespace triattn
