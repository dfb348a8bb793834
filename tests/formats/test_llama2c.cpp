// llama2.c checkpoint and tokenizer readers on the real stories260K files and hand-made ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "formats/format_test_util.h"
#include "formats/llama2c.h"

namespace triattn {
namespace {

using test::shared_path;
using test::TempDir;

TEST(Llama2cReal, Stories260KHeaderAndViews) {
  auto ck = Llama2cCheckpoint::open(shared_path(test::kStories));
  const auto& h = ck->header();
  EXPECT_EQ(h.dim, 64);
  EXPECT_EQ(h.hidden_dim, 172);
  EXPECT_EQ(h.n_layers, 5);
  EXPECT_EQ(h.n_heads, 8);
  EXPECT_EQ(h.n_kv_heads, 4);
  EXPECT_EQ(h.vocab_size, 512);
  EXPECT_EQ(h.seq_len, 512);
  EXPECT_TRUE(h.shared_classifier);

  ASSERT_EQ(ck->layers.size(), 5u);
  EXPECT_EQ(ck->tok_embeddings.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(ck->wcls.data, ck->tok_embeddings.data);
  const auto& l = ck->layers[4];
  EXPECT_EQ(l.wq.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(l.wk.shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(l.wv.shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(l.wo.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(l.w1.shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(l.w2.shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(l.w3.shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(l.rms_att.shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(l.wq.type, DType::F32);

  // Offsets follow the file's order: all rms_att, then all wq, ...
  const uint8_t* base = ck->file().data();
  const auto off = [&](const TensorView& v) { return static_cast<const uint8_t*>(v.data) - base; };
  EXPECT_EQ(off(ck->tok_embeddings), 28);
  EXPECT_EQ(off(ck->layers[0].rms_att), 28 + 512 * 64 * 4);
  EXPECT_EQ(off(ck->layers[1].rms_att), off(ck->layers[0].rms_att) + 64 * 4);
  EXPECT_EQ(off(ck->layers[0].wq), off(ck->layers[4].rms_att) + 64 * 4);
  // rms_final, then 2 x [512, 4] freq_cis floats fill the file exactly.
  EXPECT_EQ(off(ck->rms_final) + 64 * 4 + 2 * 512 * 4 * 4, static_cast<ptrdiff_t>(ck->file().size()));
  EXPECT_EQ(ck->file().size(), 28u + 264128u * 4);

  // Norm weights of a trained model are positive, order-one numbers; matrices are small.
  const float* rf = static_cast<const float*>(ck->rms_final.data);
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(rf[i] > 0.01f && rf[i] < 50.0f) << i;
  const float* wq = static_cast<const float*>(l.wq.data);
  for (int i = 0; i < 64 * 64; ++i) ASSERT_TRUE(std::isfinite(wq[i]) && std::abs(wq[i]) < 10.0f);
}

TEST(Llama2cReal, Tok512) {
  auto v = Llama2cVocab::open(shared_path(test::kTok512));
  EXPECT_EQ(v.max_token_length, 7);
  ASSERT_EQ(v.pieces.size(), 512u);
  ASSERT_EQ(v.scores.size(), 512u);
  EXPECT_EQ(v.pieces[0], "<unk>");
  EXPECT_EQ(v.pieces[1], "\n<s>\n");
  EXPECT_EQ(v.pieces[2], "\n</s>\n");
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string want = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
    EXPECT_EQ(v.pieces[3 + b], want) << b;
  }
  size_t longest = 0;
  for (const auto& p : v.pieces) longest = std::max(longest, p.size());
  EXPECT_LE(longest, 7u);
}

// A tiny checkpoint: dim 4, hidden 6, 1 layer, 2 heads, 1 kv head, vocab v, seq 3.
std::vector<uint8_t> tiny_checkpoint(int32_t vocab, int extra_floats = 0) {
  test::Bytes b;
  for (int32_t x : {4, 6, 1, 2, 1, vocab, 3}) b.put<int32_t>(x);
  const int64_t V = std::abs(vocab), D = 4, H = 6, KV = 2, hs = 2;
  int64_t n = V * D + D + D * D + 2 * KV * D + D * D + D + 3 * H * D + D + 2 * 3 * hs / 2;
  if (vocab < 0) n += V * D;
  n += extra_floats;
  for (int64_t i = 0; i < n; ++i) b.put<float>(static_cast<float>(i));
  return b.b;
}

TEST(Llama2cSynthetic, SeparateClassifier) {
  TempDir dir;
  test::write_bytes(dir.file("m.bin"), tiny_checkpoint(-10));
  auto ck = Llama2cCheckpoint::open(dir.file("m.bin"));
  EXPECT_FALSE(ck->header().shared_classifier);
  EXPECT_EQ(ck->header().vocab_size, 10);
  EXPECT_NE(ck->wcls.data, ck->tok_embeddings.data);
  EXPECT_EQ(ck->wcls.shape, (std::vector<int64_t>{10, 4}));
  // wcls is the last 40 floats of the file.
  const float* w = static_cast<const float*>(ck->wcls.data);
  EXPECT_EQ(static_cast<const uint8_t*>(ck->wcls.data) + 40 * 4, ck->file().data() + ck->file().size());
  EXPECT_EQ(w[0] + 39, w[39]);
  EXPECT_EQ(ck->layers[0].wk.shape, (std::vector<int64_t>{2, 4}));
}

TEST(Llama2cSynthetic, SizeMustMatchHeader) {
  TempDir dir;
  test::write_bytes(dir.file("short.bin"), tiny_checkpoint(-10, -1));
  EXPECT_THROW(Llama2cCheckpoint::open(dir.file("short.bin")), Error);
  test::write_bytes(dir.file("long.bin"), tiny_checkpoint(10, 1));
  EXPECT_THROW(Llama2cCheckpoint::open(dir.file("long.bin")), Error);
  // A shared-classifier header on a file that holds a separate classifier is a mismatch too.
  test::write_bytes(dir.file("mismatch.bin"), tiny_checkpoint(10, 40));
  EXPECT_THROW(Llama2cCheckpoint::open(dir.file("mismatch.bin")), Error);
}

TEST(Llama2cSynthetic, InsaneHeaders) {
  TempDir dir;
  const auto with = [&](int field, int32_t value) {
    auto b = tiny_checkpoint(10);
    std::memcpy(b.data() + 4 * field, &value, 4);
    test::write_bytes(dir.file("h.bin"), b);
    try {
      Llama2cCheckpoint::open(dir.file("h.bin"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(with(0, 0).find("dim"), std::string::npos);
  EXPECT_NE(with(0, -4).find("dim"), std::string::npos);
  EXPECT_NE(with(0, 5).find("divide"), std::string::npos);       // 2 heads do not divide 5
  EXPECT_NE(with(4, 3).find("n_kv_heads"), std::string::npos);   // 3 kv heads of 2 heads
  EXPECT_NE(with(2, 0).find("n_layers"), std::string::npos);
  EXPECT_NE(with(5, 0).find("vocab_size"), std::string::npos);
  EXPECT_NE(with(6, -1).find("seq_len"), std::string::npos);
  EXPECT_NE(with(1, 0x7fffffff).find("implies"), std::string::npos);
  EXPECT_NE(with(0, 0x7ffffffc), "");  // huge but consistent dims: overflow or size mismatch
  EXPECT_EQ(with(1, 6), "");
}

TEST(Llama2cSynthetic, VersionedExportIsNamed) {
  TempDir dir;
  test::Bytes b;
  b.put<uint32_t>(0x616b3432).put<int32_t>(2);
  b.b.resize(256);
  test::write_bytes(dir.file("q80.bin"), b.b);
  try {
    Llama2cCheckpoint::open(dir.file("q80.bin"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ak42"), std::string::npos) << e.what();
  }
  // The real int8 export is refused the same way.
  EXPECT_THROW(Llama2cCheckpoint::open(shared_path("models/stories260k/stories260K_q80.bin")), Error);
}

TEST(Llama2cSynthetic, VocabMustEndAtARecordBoundary) {
  TempDir dir;
  test::Bytes b;
  b.put<int32_t>(3);
  b.put<float>(-1.0f).put<int32_t>(2).raw("ab");
  b.put<float>(-2.0f).put<int32_t>(0);
  b.put<float>(-3.0f).put<int32_t>(3).raw("xyz");
  test::write_bytes(dir.file("ok.bin"), b.b);
  auto v = Llama2cVocab::open(dir.file("ok.bin"));
  EXPECT_EQ(v.pieces, (std::vector<std::string>{"ab", "", "xyz"}));
  EXPECT_EQ(v.scores, (std::vector<float>{-1.0f, -2.0f, -3.0f}));
  for (size_t cut = 0; cut < b.b.size(); ++cut) {
    // Cuts inside a record fail; cuts at record boundaries after the first record succeed.
    test::write_bytes(dir.file("cut.bin"), b.b.data(), cut);
    const bool boundary = cut == 14 || cut == 22;
    if (boundary) {
      EXPECT_NO_THROW(Llama2cVocab::open(dir.file("cut.bin"))) << cut;
    } else {
      EXPECT_THROW(Llama2cVocab::open(dir.file("cut.bin")), Error) << cut;
    }
  }
  test::Bytes neg;
  neg.put<int32_t>(3).put<float>(0.0f).put<int32_t>(-1);
  test::write_bytes(dir.file("neg.bin"), neg.b);
  EXPECT_THROW(Llama2cVocab::open(dir.file("neg.bin")), Error);
}

}  // namespace
}  // namespace triattn
