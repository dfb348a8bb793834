// A NaN or Inf planted in a weight is refused at load by every loader (docs/reliability.md),
// with an error naming the file and the tensor (src/formats/model_limits.h), instead of NaN
// logits that the sampler refuses far from the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "formats/safetensors.h"
#include "model/maker.h"
#include "model_test_util.h"

using namespace triattn;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() / ("triattn_non_finite_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Overwrites `bytes.size()` bytes of `path` at `offset`.
void patch(const fs::path& path, size_t offset, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
  ASSERT_TRUE(f) << path;
}

// Byte offset in the file of element `i` of a tensor whose data starts at `data` in `file`.
size_t offset_of(const MappedFile& file, const void* data, size_t byte_in_tensor) {
  return static_cast<size_t>(static_cast<const uint8_t*>(data) - file.data()) + byte_in_tensor;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

ModelConfig tiny(const std::string& preset) {
  ModelConfig c = model_preset(preset);
  c.n_layers = 1;
  c.vocab_size = 300;
  return c;
}

}  // namespace

TEST(LoadNonFinite, GgufNormAndQ8_0ScaleAreNamed) {
  const fs::path p = temp_dir() / "nan.gguf";
  MakerOptions opt;
  opt.weight_type = DType::Q8_0;
  write_random_gguf(tiny("tiny-llama"), opt, p.string());
  ASSERT_EQ(test::load_error_of(p.string()), "");  // loads as written

  size_t norm_at = 0, embd_scale_at = 0;
  {
    auto g = GgufFile::open(p.string());
    const GgufTensorInfo* norm = g->find_tensor("blk.0.attn_norm.weight");
    const GgufTensorInfo* embd = g->find_tensor("token_embd.weight");
    ASSERT_TRUE(norm && embd);
    ASSERT_EQ(norm->type, DType::F32);
    ASSERT_EQ(embd->type, DType::Q8_0);
    norm_at = offset_of(g->file(), norm->view().data, 4 * 3);          // element 3
    embd_scale_at = offset_of(g->file(), embd->view().data, 34 * 5);  // the scale of block 5
  }
  patch(p, norm_at, &kNaN, 4);
  std::string e = test::load_error_of(p.string());
  EXPECT_TRUE(has(e, p.string() + ": tensor 'blk.0.attn_norm.weight' holds a non-finite value (Inf or NaN) at element 3"))
      << e;
  const float one = 1.0f;
  patch(p, norm_at, &one, 4);
  ASSERT_EQ(test::load_error_of(p.string()), "");

  const uint16_t f16_inf = 0x7c00;
  patch(p, embd_scale_at, &f16_inf, 2);
  e = test::load_error_of(p.string());
  EXPECT_TRUE(has(e, p.string() + ": tensor 'token_embd.weight' holds a non-finite value (Inf or NaN) in the scale of block 5"))
      << e;
}

TEST(LoadNonFinite, HfEmbeddingIsNamed) {
  const fs::path dir = temp_dir() / "hf-nan";
  MakerOptions opt;
  opt.weight_type = DType::F32;
  write_random_hf(tiny("tiny-qwen2"), opt, dir.string());
  const fs::path st = dir / "model.safetensors";
  ASSERT_EQ(test::load_error_of(dir.string()), "");

  size_t at = 0;
  {
    auto f = SafetensorsFile::open(st.string());
    const SafetensorsTensor* t = nullptr;
    for (const SafetensorsTensor& x : f->tensors())
      if (x.name == "model.embed_tokens.weight") t = &x;
    ASSERT_TRUE(t) << "no model.embed_tokens.weight in " << st;
    ASSERT_EQ(t->type, DType::F32);
    at = offset_of(f->file(), t->data, 4 * 1000);  // element 1000
  }
  patch(st, at, &kInf, 4);
  const std::string e = test::load_error_of(dir.string());
  EXPECT_TRUE(has(e, st.string() + ": tensor 'model.embed_tokens.weight' holds a non-finite value (Inf or NaN) at element 1000"))
      << e;
}

TEST(LoadNonFinite, Llama2cNormIsNamed) {
  // The shared stories260K checkpoint (llama2.c v0, f32) and its tokenizer, copied.
  const fs::path src = fs::path(TRIATTN_SHARED_DIR) / "models/stories260k";
  ASSERT_TRUE(fs::exists(src / "stories260K.bin") && fs::exists(src / "tok512.bin"))
      << src << " must hold stories260K.bin and tok512.bin (the shared data directory beside the checkout)";
  const fs::path dir = temp_dir() / "llama2c-nan";
  fs::create_directories(dir);
  const fs::path p = dir / "stories260K.bin";
  fs::copy_file(src / "stories260K.bin", p, fs::copy_options::overwrite_existing);
  fs::copy_file(src / "tok512.bin", dir / "tok512.bin", fs::copy_options::overwrite_existing);
  ASSERT_EQ(test::load_error_of(p.string()), "");

  size_t at = 0;
  {
    auto ck = Llama2cCheckpoint::open(p.string());
    ASSERT_FALSE(ck->rms_final.quantized());
    at = offset_of(ck->file(), ck->rms_final.data, 4 * 2);  // element 2
  }
  patch(p, at, &kNaN, 4);
  const std::string e = test::load_error_of(p.string());
  EXPECT_TRUE(has(e, p.string() + ": tensor 'rms_final_weight' holds a non-finite value (Inf or NaN) at element 2")) << e;
}
