// GGUF files through Model::load: metadata integers are checked at the width the file stores
// them (a u32 0xffffffff is 4294967295, not -1), messages state what is true, metadata that
// contradicts the tensors is refused, crafted sizes fail by name before any allocation, and
// tensors the loader does not use are reported as warnings.
#include <gtest/gtest.h>

#include "common/shared_files.h"
#include "common/temp_dir.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/maker.h"
#include "model/model.h"
#include "model_test_util.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;
using test::TempDir;


std::string make_gguf(const TempDir& dir, int layers = 2, const std::string& name = "m.gguf") {
  ModelConfig c = model_preset("tiny-llama");
  c.n_layers = layers;
  MakerOptions opt;
  opt.weight_type = DType::F32;
  const std::string path = dir.file(name);
  write_random_gguf(c, opt, path);
  return path;
}

using test::slurp;
// Offset of the bytes that follow the GGUF string `s` (u64 length, then the bytes).
size_t after_string(const std::string& bytes, const std::string& s) {
  std::string needle(8, '\0');
  const uint64_t n = s.size();
  std::memcpy(needle.data(), &n, 8);
  needle += s;
  const size_t at = bytes.find(needle);
  EXPECT_NE(at, std::string::npos) << s;
  return at == std::string::npos ? 0 : at + needle.size();
}

// A copy of `src` with the uint32 metadata value of `key` replaced.
std::string with_u32(const TempDir& dir, const std::string& src, const std::string& key, uint32_t value) {
  std::string b = slurp(src);
  const size_t at = after_string(b, key);
  uint32_t type = 0;
  std::memcpy(&type, b.data() + at, 4);
  EXPECT_EQ(type, static_cast<uint32_t>(GgufType::UINT32)) << key;
  std::memcpy(b.data() + at + 4, &value, 4);
  const std::string path = dir.file("patched.gguf");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
  return path;
}

// A copy of `src` with extra metadata and extra f32 [4] tensors.
std::string with_extras(const TempDir& dir, const std::string& src, const std::vector<std::string>& tensors,
                        const std::vector<std::pair<std::string, uint32_t>>& u32_keys = {}) {
  auto f = GgufFile::open(src);
  GgufWriter w;
  for (const auto& [k, v] : f->metadata()) w.set(k, v);
  for (const auto& [k, v] : u32_keys) w.set_u32(k, v);
  for (const GgufTensorInfo& t : f->tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.nbytes);
  const float four[4] = {1, 2, 3, 4};
  for (const std::string& name : tensors) w.add_tensor(name, DType::F32, {4}, four, sizeof four);
  const std::string path = dir.file("extras.gguf");
  w.write(path);
  return path;
}

TEST(LoadGgufMetadata, IntegersAreCheckedAsStoredNotAfterWrapping) {
  TempDir dir;
  const std::string src = make_gguf(dir);
  ASSERT_EQ(test::load_error_of(src), "");
  const auto err = [&](const std::string& key, uint32_t v) { return test::load_error_of(with_u32(dir, src, key, v)); };
  const std::string p = dir.file("patched.gguf") + ": ";
  EXPECT_EQ(err("llama.block_count", 0xffffffffu),
            p + "llama.block_count is 4294967295; it must be a whole number from 1 to 4096");
  EXPECT_EQ(err("llama.block_count", 0), p + "llama.block_count is 0; it must be a whole number from 1 to 4096");
  EXPECT_EQ(err("llama.embedding_length", 0xffffffffu),
            p + "llama.embedding_length is 4294967295; it must be a whole number from 1 to 1048576");
  EXPECT_EQ(err("llama.attention.head_count_kv", 0x80000000u),
            p + "llama.attention.head_count_kv is 2147483648; it must be a whole number from 1 to 16384");
  EXPECT_EQ(err("llama.context_length", 0), p + "llama.context_length is 0; it must be a whole number from 1 to 2147483647");
  EXPECT_EQ(err("llama.attention.key_length", 0xfffffff0u),
            p + "llama.attention.key_length is 4294967280; it must be a whole number from 1 to 16384");
}

TEST(LoadGgufMetadata, MessagesStateWhatIsTrue) {
  TempDir dir;
  const std::string src = make_gguf(dir);
  const std::string p = dir.file("patched.gguf") + ": ";
  // head_dim is 16: 64 is more, 8 is fewer; neither is written as "64 < 16".
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.rope.dimension_count", 64)),
            p + "llama.rope.dimension_count 64 is above head_dim 16 (RoPE cannot rotate more dimensions than a "
                "head has)");
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.rope.dimension_count", 8)),
            p + "llama.rope.dimension_count 8 is below head_dim 16 (partial RoPE is not supported with llama's "
                "interleaved q/k rows)");
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.attention.value_length", 8)),
            p + "llama.attention.value_length 8 differs from the key head size 16 (separate value head sizes are not "
                "supported)");
}

TEST(LoadGgufMetadata, MetadataThatContradictsTheTensorsIsRefused) {
  TempDir dir;
  const std::string four = make_gguf(dir, 4, "four.gguf");
  const std::string p = dir.file("patched.gguf") + ": ";
  EXPECT_EQ(test::load_error_of(with_u32(dir, four, "llama.block_count", 2)),
            p + "llama.block_count says 2 layers but the file holds tensors for 4 (blk.0-3)");
  EXPECT_EQ(test::load_error_of(with_u32(dir, four, "llama.block_count", 5)),
            p + "llama.block_count says 5 layers but the file holds tensors for 4 (blk.0-3)");
  EXPECT_EQ(test::load_error_of(with_u32(dir, four, "llama.embedding_length", 32)),
            p + "token_embd.weight has rows of 64 values but llama.embedding_length is 32");
  EXPECT_EQ(test::load_error_of(with_u32(dir, four, "llama.vocab_size", 1000)),
            p + "llama.vocab_size 1000 differs from the 512 rows of token_embd.weight");
  // Without key_length, head_dim is n_embd / n_heads, which must divide exactly.
  {
    auto f = GgufFile::open(four);
    GgufWriter w;
    for (const auto& [k, v] : f->metadata())
      if (k != "llama.attention.key_length") w.set(k, v);
    w.set_u32("llama.attention.head_count", 3);
    w.set_u32("llama.attention.head_count_kv", 3);
    for (const GgufTensorInfo& t : f->tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.nbytes);
    w.write(dir.file("heads.gguf"));
  }
  EXPECT_EQ(test::load_error_of(dir.file("heads.gguf")),
            dir.file("heads.gguf") + ": llama.embedding_length 64 is not a multiple of llama.attention.head_count 3"
                                     " and llama.attention.key_length is not given");
}

TEST(LoadGgufMetadata, UnsupportedTensorTypeIsNamed) {
  TempDir dir;
  std::string b = slurp(make_gguf(dir));
  // Tensor info: name, n_dims (u32), ne[2] (u64), ggml type (u32), offset.
  const size_t type_at = after_string(b, "blk.0.attn_q.weight") + 4 + 2 * 8;
  const uint32_t q2_k = 10;
  std::memcpy(b.data() + type_at, &q2_k, 4);
  const std::string path = dir.file("q2k.gguf");
  std::ofstream(path, std::ios::binary) << b;
  EXPECT_EQ(test::load_error_of(path), path + ": tensor 'blk.0.attn_q.weight' has ggml type q2_k (10), which triattn does not "
                                   "support (supported: f32, f16, q4_0, q8_0, q4_k, q5_k, q6_k, i32, bf16, mxfp4)");
}

TEST(LoadGgufMetadata, UnusedTensorsAreReportedAsWarnings) {
  TempDir dir;
  const std::string src = make_gguf(dir);
  EXPECT_TRUE(Model::load(src)->warnings().empty());
  const std::string path = with_extras(dir, src, {"blk.1.attn_rot_embd", "extra.weight"});
  auto m = Model::load(path);
  ASSERT_EQ(m->warnings().size(), 1u);
  EXPECT_EQ(m->warnings()[0], path + ": 2 tensors not used: blk.1.attn_rot_embd, extra.weight");
  // A tensor of a layer past block_count makes the count wrong, not a warning.
  const std::string past = with_extras(dir, src, {"blk.2.ffn_up.weight"});
  EXPECT_EQ(test::load_error_of(past), past + ": llama.block_count says 2 layers but the file holds tensors for 3 (blk.0-2)");
}

// Crafted headers meet a named check before they can size an allocation: no std::bad_alloc
// (reported as "out of memory" or "internal error") for any of them.
TEST(LoadGgufMetadata, CraftedSizesFailByNameNotByAllocation) {
  TempDir dir;
  const std::string src = make_gguf(dir);
  const std::string p = dir.file("patched.gguf") + ": ";
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.block_count", 1000000000)),
            p + "llama.block_count is 1000000000; it must be a whole number from 1 to 4096");
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.feed_forward_length", 2000000000)),
            p + "llama.feed_forward_length is 2000000000; it must be a whole number from 1 to 4194304");
  EXPECT_EQ(test::load_error_of(with_u32(dir, src, "llama.attention.head_count", 0x7fffffff)),
            p + "llama.attention.head_count is 2147483647; it must be a whole number from 1 to 16384");
  // Tensor dims that multiply past the file, or past 64 bits (vocab * n_embd of the embedding).
  const auto with_embd_dims = [&](uint64_t ne0, uint64_t ne1) {
    std::string b = slurp(src);
    const size_t ne_at = after_string(b, "token_embd.weight") + 4;
    const uint64_t ne[2] = {ne0, ne1};
    std::memcpy(b.data() + ne_at, ne, sizeof ne);
    const std::string path = dir.file("huge.gguf");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
    return test::load_error_of(path);
  };
  const std::string huge = dir.file("huge.gguf") + ": tensor 'token_embd.weight' ";
  EXPECT_EQ(with_embd_dims(1ull << 31, 1ull << 31),
            huge + "(2147483648 rows of 2147483648 f32 values) needs more than 2^64 bytes; the file has " +
                std::to_string(fs::file_size(src)));
  const std::string past_end = with_embd_dims(64, 1ull << 40);
  EXPECT_EQ(past_end.rfind(huge + "data [", 0), 0u) << past_end;
  EXPECT_NE(past_end.find("lies outside the data section"), std::string::npos) << past_end;
}

TEST(LoadGgufMetadata, RealFilesLoadWithoutWarnings) {
  const std::string shared = TRIATTN_SHARED_DIR;
  for (const char* f : {"/models/tinystories-656k/TinyStories-656K-Q8_0.gguf", "/models/bytelm-2k/bytelm-2k-f32.gguf"}) {
    auto m = Model::load(shared + f);
    EXPECT_TRUE(m->warnings().empty()) << f << ": " << m->warnings().at(0);
  }
}

}  // namespace
}  // namespace triattn
