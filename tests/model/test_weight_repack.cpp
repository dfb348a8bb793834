// Load-time repacking (model/weight_repack.h): Q8_0 matrices become Q8_0x4, Q4_K ones Q4_Kx8
// and Q4_0 ones Q4_0x8, the tied token embedding reads through the repacked output matrix,
// the buffers they came from are freed, other types are copied unchanged, and the logits
// match the file layout's (exactly on the scalar kernels and where the layout did not change,
// to float rounding otherwise).
#include "model/weight_repack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/error.h"
#include "model/forward.h"
#include "model/maker.h"
#include "model/model.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"

namespace triattn {
namespace {

std::vector<float> logits_of(const Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  Forward fwd(m, &pool);
  const ModelConfig& c = m.config();
  KvCache cache(KvCacheShape{c.n_layers, c.n_kv_heads, c.head_dim, DType::F32});
  std::vector<std::vector<float>> out;
  ForwardItem item{&cache, tokens, ForwardItem::Logits::All};
  fwd.run(std::span<const ForwardItem>(&item, 1), out);
  const int32_t next = 77;  // and one decode step (the matrix-vector kernels)
  ForwardItem step{&cache, std::span<const int32_t>(&next, 1), ForwardItem::Logits::Last};
  std::vector<std::vector<float>> last;
  fwd.run(std::span<const ForwardItem>(&step, 1), last);
  out[0].insert(out[0].end(), last[0].begin(), last[0].end());
  return out[0];
}

size_t owned_bytes(const Model& m) { return m.owned_bytes(); }

std::vector<const TensorView*> layer_matrices(const Model& m) {
  std::vector<const TensorView*> out;
  for (const LayerWeights& L : m.weights().layers)
    for (const TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) out.push_back(t);
  return out;
}

// The layout a `file` matrix of `rows` rows is repacked into: Q8_0 in whole groups of 16 rows
// the active kernels' (Q8_0x16 on AVX-512), otherwise Q8_0x4; Q4_K -> Q4_Kx8, Q4_0 -> Q4_0x8.
DType repacked_type(DType file, int64_t rows) {
  if (file == DType::Q8_0) return rows % 16 == 0 ? ops::active_kernels().q8_0_layout : DType::Q8_0x4;
  return file == DType::Q4_K ? DType::Q4_Kx8 : DType::Q4_0x8;
}

TEST(WeightRepack, Q8_0Q4_KAndQ4_0MatricesAreInterleavedAndComputeTheSame) {
  for (const DType file : {DType::Q8_0, DType::Q4_K, DType::Q4_0})
  for (const char* preset : {"tiny-qwen3", "tiny-llama"}) {  // tied embedding; q/k reordered copies
    SCOPED_TRACE(::testing::Message() << preset << " " << dtype_name(file));
    test::TempDir dir;
    ModelConfig cfg = model_preset(preset);
    if (file == DType::Q4_K) {  // every matrix's columns a whole number of K-quant blocks
      cfg.n_embd = 256;
      cfg.head_dim = 64;
      cfg.n_ff = 256;
    }
    write_random_gguf(cfg, {file, 5}, dir.file("m.gguf"));
    const auto plain = Model::load(dir.file("m.gguf"), {.repack = false});
    // Repacked on one thread (the pool runs inline) and on two.
    const auto packed = Model::load(dir.file("m.gguf"), {.repack = true, .threads = cfg.arch == "llama" ? 1 : 2});

    for (const TensorView* t : layer_matrices(*plain)) EXPECT_EQ(t->type, file);
    size_t repacked_bytes = 0, reordered_bytes = 0, file_bytes = 0;
    for (const TensorView* t : layer_matrices(*packed)) {
      EXPECT_EQ(t->type, repacked_type(file, t->shape[0]));
      repacked_bytes += t->nbytes();
      file_bytes += TensorView{file, t->shape, nullptr}.nbytes();
    }
    EXPECT_EQ(packed->weights().output.type, repacked_type(file, packed->weights().output.shape[0]));
    repacked_bytes += packed->weights().output.nbytes();
    file_bytes += TensorView{file, packed->weights().output.shape, nullptr}.nbytes();
    if (cfg.tied_embeddings) {
      EXPECT_EQ(packed->weights().tok_embd.data, packed->weights().output.data);
    } else {
      EXPECT_EQ(packed->weights().tok_embd.type, file);  // lookups only: left as stored
    }
    EXPECT_EQ(packed->weight_type_name(), dtype_name(file));  // named as in the file
    // Bytes held: Q8_0x4, Q8_0x16 and Q4_0x8 are their file type's size, Q4_Kx8 adds its unpacked scales.
    EXPECT_EQ(packed->weight_bytes(), plain->weight_bytes() + (repacked_bytes - file_bytes));
    if (file != DType::Q4_K) {
      EXPECT_EQ(repacked_bytes, file_bytes);
    }

    // Llama's q/k rows were reordered into owned copies at load; repacking frees them, so the
    // owned memory grows by the repacked tensors minus those copies (plus alignment).
    if (cfg.arch == "llama")
      for (const LayerWeights& L : plain->weights().layers) reordered_bytes += L.wq.nbytes() + L.wk.nbytes();
    const size_t n_tensors = layer_matrices(*packed).size() + 1;
    EXPECT_LE(owned_bytes(*packed) + reordered_bytes, owned_bytes(*plain) + repacked_bytes + 64 * n_tensors);
    EXPECT_GE(owned_bytes(*packed) + reordered_bytes, owned_bytes(*plain) + repacked_bytes);

    // The scalar kernels of the interleaved layouts sum exactly as their file types' do, so
    // there the logits are the same bits. The SIMD kernels sum in other orders, and a
    // last-bit difference can move one activation's int8 rounding by a step in the next layer
    // (0.0022 of logits up to 0.62 for tiny-llama Q4_0, whose file-layout kernel differs from
    // the scalar one by as much): a looser bound there, which a wrong row, scale or offset
    // (changes of the logits' own size) still fails.
    const std::vector<int32_t> tokens = {1, 300, 12, 99, 45, 260, 7};
    {
      ops::set_isa_for_testing(ops::Isa::Scalar);
      const std::vector<float> a = logits_of(*plain, tokens), b = logits_of(*packed, tokens);
      ops::set_isa_for_testing(ops::supported_isas().back());
      EXPECT_EQ(a, b);
    }
    const std::vector<float> a = logits_of(*plain, tokens), b = logits_of(*packed, tokens);
    ASSERT_EQ(a.size(), b.size());
    float diff = 0, mag = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, std::fabs(a[i] - b[i]));
      mag = std::max(mag, std::fabs(a[i]));
    }
    EXPECT_GT(mag, 0.01f);
    EXPECT_LT(diff, 1e-2f * std::max(1.0f, mag));
  }
}

TEST(WeightRepack, OtherTypesAreCopiedUnchangedIntoOwnedMemory) {
  // F16, Q5_K and Q6_K have no interleaved layout: they move out of the file mapping into the
  // huge-page arena byte for byte, so the logits are exactly the mapped model's.
  ModelConfig cfg = model_preset("tiny-qwen3");
  cfg.n_embd = 256;  // every matrix's columns a whole number of K-quant blocks
  cfg.head_dim = 64;
  cfg.n_ff = 256;
  for (const MakerOptions spec : {MakerOptions{DType::F16, 5}, MakerOptions{DType::Q6_K, 5}}) {
    SCOPED_TRACE(dtype_name(spec.weight_type));
    test::TempDir dir;
    write_random_gguf(cfg, spec, dir.file("m.gguf"));
    const auto plain = Model::load(dir.file("m.gguf"), {.repack = false});
    const auto moved = Model::load(dir.file("m.gguf"), {.repack = true, .threads = 2});
    size_t bytes = moved->weights().output.nbytes();  // tied: the token embedding moves with it
    for (const TensorView* t : layer_matrices(*moved)) {
      EXPECT_EQ(t->type, spec.weight_type);
      bytes += t->nbytes();
    }
    EXPECT_EQ(moved->weights().output.type, spec.weight_type);
    EXPECT_EQ(moved->weights().tok_embd.data, moved->weights().output.data);
    const size_t n_tensors = layer_matrices(*moved).size() + 1;
    EXPECT_GE(owned_bytes(*moved), owned_bytes(*plain) + bytes);
    EXPECT_LE(owned_bytes(*moved), owned_bytes(*plain) + bytes + 64 * n_tensors);
    const std::vector<int32_t> tokens = {1, 300, 12, 99};
    EXPECT_EQ(logits_of(*plain, tokens), logits_of(*moved, tokens));
  }
}

}  // namespace
}  // namespace triattn
