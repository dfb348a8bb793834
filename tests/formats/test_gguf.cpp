// GGUF reader on the real TinyStories and tokenizer files, writer round trips, and the
// structural errors the reader must name.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "formats/format_test_util.h"
#include "formats/ggml_type_names.h"
#include "formats/gguf.h"

namespace triattn {
namespace {

using test::Bytes;
using test::shared_path;
using test::TempDir;

TEST(GgufReal, TinyStoriesHeaderAndMetadata) {
  auto f = GgufFile::open(shared_path(test::kTinyGguf));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->metadata().size(), 34u);
  EXPECT_EQ(f->tensors().size(), 20u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.context_length"), 512);
  EXPECT_EQ(f->get_int("llama.block_count"), 2);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_DOUBLE_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-6f);
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_eos_token"));
  EXPECT_EQ(f->find("llama.context_length")->type, GgufType::UINT32);

  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 2048u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<|start_story|>");
  EXPECT_EQ(tokens[2], "<|end_story|>");
  const auto scores = f->get_float_array("tokenizer.ggml.scores");
  ASSERT_EQ(scores.size(), 2048u);
  EXPECT_DOUBLE_EQ(scores[5], -1000.0);
  const auto types = f->get_int_array("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), 2048u);
  EXPECT_EQ(types[0], 3);
  EXPECT_EQ(f->get_string_array("general.languages"), std::vector<std::string>{"en"});

  EXPECT_FALSE(f->get_int_opt("llama.no_such_key").has_value());
  EXPECT_EQ(f->get_string_opt("general.name").value(), "Raincandy U TinyStories 656K");
}

TEST(GgufReal, TinyStoriesTensors) {
  auto f = GgufFile::open(shared_path(test::kTinyGguf));
  const auto* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::Q8_0);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{2048, 128}));
  EXPECT_EQ(emb->nbytes, 2048u * 4 * 34);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied

  const auto* k = f->find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{64, 128}));
  const auto* norm = f->find_tensor("blk.1.ffn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, DType::F32);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{128}));
  const auto* down = f->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{128, 384}));

  // Data section starts at byte 50848 and the last tensor ends at the end of the file.
  const uint8_t* base = f->file().data();
  const auto* first = f->find_tensor("output_norm.weight");
  EXPECT_EQ(static_cast<const uint8_t*>(first->data) - base, 50848);
  size_t max_end = 0;
  for (const auto& t : f->tensors()) {
    const size_t end = static_cast<const uint8_t*>(t.data) - base + t.nbytes;
    max_end = std::max(max_end, end);
    EXPECT_EQ(t.view().nbytes(), t.nbytes) << t.name;
  }
  EXPECT_EQ(max_end, f->file().size());
  // RMSNorm weights are plain floats of sensible size.
  const float* w = static_cast<const float*>(norm->data);
  for (int i = 0; i < 128; ++i) EXPECT_TRUE(std::abs(w[i]) < 100.0f && std::abs(w[i]) > 0.0f);
}

TEST(GgufReal, TypedGetterErrorsNameKeyAndType) {
  auto f = GgufFile::open(shared_path(test::kTinyGguf));
  try {
    f->get_int("general.architecture");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("general.architecture"), std::string::npos) << msg;
    EXPECT_NE(msg.find("string"), std::string::npos) << msg;
  }
  EXPECT_THROW(f->get_string("missing.key"), Error);
  EXPECT_THROW(f->get_bool("llama.block_count"), Error);
  EXPECT_THROW(f->get_string_array("tokenizer.ggml.scores"), Error);
  EXPECT_THROW(f->get_int_array("tokenizer.ggml.tokens"), Error);
  // A float key is not an integer, but an integer key reads as a float.
  EXPECT_THROW(f->get_int("llama.rope.freq_base"), Error);
  EXPECT_DOUBLE_EQ(f->get_float("llama.block_count"), 2.0);
}

TEST(GgufReal, EveryTokenizerGgufOpens) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("tokenizers"))) {
    if (e.path().extension() != ".gguf") continue;
    SCOPED_TRACE(e.path().string());
    auto f = GgufFile::open(e.path().string());
    EXPECT_TRUE(f->tensors().empty());
    EXPECT_GT(f->get_string_array("tokenizer.ggml.tokens").size(), 1000u);
    EXPECT_FALSE(f->get_string("tokenizer.ggml.model").empty());
    ++n;
  }
  EXPECT_EQ(n, 7);
}

// Rewriting the real file through GgufWriter keeps every value and every tensor byte.
TEST(GgufReal, RewriteRoundTrip) {
  TempDir dir;
  auto f = GgufFile::open(shared_path(test::kTinyGguf));
  GgufWriter w;
  for (const auto& [k, v] : f->metadata()) w.set(k, v);
  for (const auto& t : f->tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.nbytes);
  w.write(dir.file("copy.gguf"));
  auto g = GgufFile::open(dir.file("copy.gguf"));
  EXPECT_EQ(g->metadata().size(), f->metadata().size());
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens"), f->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores"), f->get_float_array("tokenizer.ggml.scores"));
  ASSERT_EQ(g->tensors().size(), f->tensors().size());
  for (const auto& t : f->tensors()) {
    const auto* u = g->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type);
    EXPECT_EQ(u->shape, t.shape);
    ASSERT_EQ(u->nbytes, t.nbytes);
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
  // Same tensors in the same order with the same metadata size: identical file size.
  EXPECT_EQ(g->file().size(), f->file().size());
}

// ---- writer round trips ----------------------------------------------------------------

GgufValue u(GgufType t, uint64_t v) { return GgufValue{t, v}; }
GgufValue i(GgufType t, int64_t v) { return GgufValue{t, v}; }
GgufValue fl(GgufType t, double v) { return GgufValue{t, v}; }
GgufValue str(const std::string& s) { return GgufValue{GgufType::STRING, s}; }
GgufValue arr(GgufType elem, std::vector<GgufValue> items) {
  return GgufValue{GgufType::ARRAY, GgufArray{elem, std::move(items)}};
}

std::vector<std::pair<std::string, GgufValue>> all_value_kinds() {
  return {
      {"t.u8", u(GgufType::UINT8, 255)},
      {"t.i8", i(GgufType::INT8, -128)},
      {"t.u16", u(GgufType::UINT16, 65535)},
      {"t.i16", i(GgufType::INT16, -32768)},
      {"t.u32", u(GgufType::UINT32, 4294967295u)},
      {"t.i32", i(GgufType::INT32, -2147483647 - 1)},
      {"t.u64", u(GgufType::UINT64, 18446744073709551615ull)},
      {"t.i64", i(GgufType::INT64, -9223372036854775807ll)},
      {"t.f32", fl(GgufType::FLOAT32, 0.15625)},
      {"t.f64", fl(GgufType::FLOAT64, 3.141592653589793)},
      {"t.bool_true", GgufValue{GgufType::BOOL, true}},
      {"t.bool_false", GgufValue{GgufType::BOOL, false}},
      {"t.string", str("héllo\nworld")},
      {"t.empty_string", str("")},
      {"t.arr_u8", arr(GgufType::UINT8, {u(GgufType::UINT8, 0), u(GgufType::UINT8, 7)})},
      {"t.arr_i16", arr(GgufType::INT16, {i(GgufType::INT16, -3)})},
      {"t.arr_u64", arr(GgufType::UINT64, {u(GgufType::UINT64, 1ull << 40)})},
      {"t.arr_f64", arr(GgufType::FLOAT64, {fl(GgufType::FLOAT64, -0.5), fl(GgufType::FLOAT64, 1e300)})},
      {"t.arr_bool", arr(GgufType::BOOL, {GgufValue{GgufType::BOOL, true}, GgufValue{GgufType::BOOL, false}})},
      {"t.arr_str", arr(GgufType::STRING, {str("a"), str(""), str("ccc")})},
      {"t.arr_empty", arr(GgufType::INT32, {})},
      {"t.arr_nested",
       arr(GgufType::ARRAY, {arr(GgufType::STRING, {str("x"), str("y")}), arr(GgufType::STRING, {})})},
      {"t.arr_nested3",
       arr(GgufType::ARRAY, {arr(GgufType::ARRAY, {arr(GgufType::INT64, {i(GgufType::INT64, -1), i(GgufType::INT64, 2)})})})},
  };
}

void expect_same_value(const GgufValue& a, const GgufValue& b, const std::string& key) {
  ASSERT_EQ(a.type, b.type) << key;
  if (a.type == GgufType::ARRAY) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    ASSERT_EQ(x.elem_type, y.elem_type) << key;
    ASSERT_EQ(x.items.size(), y.items.size()) << key;
    for (size_t n = 0; n < x.items.size(); ++n) expect_same_value(x.items[n], y.items[n], key);
    return;
  }
  EXPECT_TRUE(a.value == b.value) << key;
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  TempDir dir;
  GgufWriter w;
  const auto kinds = all_value_kinds();
  for (const auto& [k, v] : kinds) w.set(k, v);
  w.set_string("c.string", "abc");
  w.set_u32("c.u32", 7);
  w.set_i32("c.i32", -7);
  w.set_f32("c.f32", 0.25f);
  w.set_bool("c.bool", true);
  w.set_string_array("c.strs", {"p", "q"});
  w.set_f32_array("c.f32s", {1.5f, -2.0f});
  w.set_i32_array("c.i32s", {1, -2, 3});
  w.set_u32("c.u32", 8);  // set() on an existing key replaces it
  w.write(dir.file("kv.gguf"));

  auto f = GgufFile::open(dir.file("kv.gguf"));
  EXPECT_EQ(f->metadata().size(), kinds.size() + 8);
  for (const auto& [k, v] : kinds) {
    const GgufValue* got = f->find(k);
    ASSERT_NE(got, nullptr) << k;
    expect_same_value(*got, v, k);
  }
  EXPECT_EQ(f->get_string("c.string"), "abc");
  EXPECT_EQ(f->get_int("c.u32"), 8);
  EXPECT_EQ(f->get_int("c.i32"), -7);
  EXPECT_EQ(f->get_float("c.f32"), 0.25);
  EXPECT_TRUE(f->get_bool("c.bool"));
  EXPECT_EQ(f->get_string_array("c.strs"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(f->get_float_array("c.f32s"), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(f->get_int_array("c.i32s"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_TRUE(f->tensors().empty());
  // A uint64 beyond int64 is refused by the integer getter rather than wrapped.
  EXPECT_THROW(f->get_int("t.u64"), Error);
  EXPECT_EQ(f->get_int("t.i64"), -9223372036854775807ll);
}

TEST(GgufWriter, RoundTripsTensorsOfEveryDType) {
  TempDir dir;
  test::Rng rng(42);
  struct Case {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Case> cases = {
      {"f32", DType::F32, {3, 5}, {}},          {"f16", DType::F16, {7}, {}},
      {"bf16", DType::BF16, {2, 2, 3}, {}},     {"q8_0", DType::Q8_0, {4, 64}, {}},
      {"q4_0", DType::Q4_0, {1, 2, 3, 32}, {}}, {"q4_k", DType::Q4_K, {3, 256}, {}},
      {"q5_k", DType::Q5_K, {2, 512}, {}},      {"q6_k", DType::Q6_K, {256}, {}},
      {"i32", DType::I32, {9, 1}, {}},
  };
  for (uint64_t align : {32u, 64u}) {
    SCOPED_TRACE(align);
    GgufWriter w;
    w.set_string("general.architecture", "test");
    for (auto& c : cases) {
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < c.shape.size(); ++d) rows *= c.shape[d];
      c.bytes = rng.bytes(row_bytes(c.type, c.shape.back()) * rows);
      w.add_tensor(c.name, c.type, c.shape, c.bytes.data(), c.bytes.size());
    }
    // A row-filled tensor: each row's bytes equal its row index.
    w.add_tensor_rows("rows", DType::F16, {5, 3},
                      [](int64_t r, uint8_t* dst) { std::memset(dst, static_cast<int>(r), 6); });
    const std::string path = dir.file("t" + std::to_string(align) + ".gguf");
    w.write(path, align);

    auto f = GgufFile::open(path);
    EXPECT_EQ(f->alignment(), align);
    EXPECT_EQ(f->has("general.alignment"), align != 32);
    ASSERT_EQ(f->tensors().size(), cases.size() + 1);
    for (const auto& c : cases) {
      const auto* t = f->find_tensor(c.name);
      ASSERT_NE(t, nullptr) << c.name;
      EXPECT_EQ(t->type, c.type) << c.name;
      EXPECT_EQ(t->shape, c.shape) << c.name;
      EXPECT_EQ(t->offset % align, 0u) << c.name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % align, 0u) << c.name;
      ASSERT_EQ(t->nbytes, c.bytes.size()) << c.name;
      EXPECT_EQ(std::memcmp(t->data, c.bytes.data(), c.bytes.size()), 0) << c.name;
    }
    const auto* rows = f->find_tensor("rows");
    ASSERT_NE(rows, nullptr);
    ASSERT_EQ(rows->nbytes, 30u);
    for (int r = 0; r < 5; ++r)
      for (int b = 0; b < 6; ++b) EXPECT_EQ(static_cast<const uint8_t*>(rows->data)[r * 6 + b], r);
    // Tensors are in insertion order, and the last one ends the file (no trailing padding).
    EXPECT_EQ(f->tensors()[0].name, "f32");
    EXPECT_EQ(static_cast<const uint8_t*>(rows->data) + rows->nbytes, f->file().data() + f->file().size());
  }
}

TEST(GgufWriter, RefusesWhatTheReaderWouldRefuse) {
  GgufWriter w;
  const float x[64] = {};
  EXPECT_THROW(w.add_tensor("bad_block", DType::Q8_0, {2, 31}, x, 68), Error);
  EXPECT_THROW(w.add_tensor("bad_size", DType::F32, {4}, x, 12), Error);
  EXPECT_THROW(w.add_tensor("five_dims", DType::F32, {1, 1, 1, 1, 1}, x, 4), Error);
  EXPECT_THROW(w.add_tensor("empty", DType::F32, {4, 0}, x, 0), Error);
  w.add_tensor("a", DType::F32, {4}, x, 16);
  EXPECT_THROW(w.add_tensor("a", DType::F32, {4}, x, 16), Error);
  EXPECT_THROW(w.set("bad", GgufValue{GgufType::UINT8, uint64_t{256}}), Error);
  EXPECT_THROW(w.set("bad", GgufValue{GgufType::INT32, uint64_t{1}}), Error);
  EXPECT_THROW(w.set("bad", arr(GgufType::STRING, {u(GgufType::UINT8, 1)})), Error);
  TempDir dir;
  EXPECT_THROW(w.write(dir.file("x.gguf"), 48), Error);
}

// ---- hand-made malformed files -------------------------------------------------------

Bytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  Bytes b;
  b.raw("GGUF").put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  return b;
}

std::string expect_error(const Bytes& b, const std::string& needle) {
  TempDir dir;
  const std::string path = dir.file("bad.gguf");
  test::write_bytes(path, b.b);
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "expected Error containing '" << needle << "'";
  return "";
}

// A one-tensor file: tensor info, then padding to 32, then data.
Bytes one_tensor(uint32_t ggml_type, std::vector<uint64_t> ne, uint64_t offset, size_t data_bytes) {
  Bytes b = header(1, 0);
  b.str("w").put<uint32_t>(ne.size());
  for (uint64_t n : ne) b.put<uint64_t>(n);
  b.put<uint32_t>(ggml_type).put<uint64_t>(offset);
  while (b.b.size() % 32) b.put<uint8_t>(0);
  b.b.resize(b.b.size() + data_bytes);
  return b;
}

TEST(GgufErrors, BadMagicAndVersion) {
  Bytes b;
  b.raw("GGUX").put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  expect_error(b, "magic");
  expect_error(header(0, 0, 1), "version 1");
  expect_error(header(0, 0, 4), "version 4");
  expect_error(Bytes{}.raw("GG"), "not a GGUF");
}

TEST(GgufErrors, HugeCountsAndLengthsFailWithoutAllocating) {
  expect_error(header(0, 1ull << 60), "metadata count");
  expect_error(header(1ull << 60, 0), "tensor count");
  {
    Bytes b = header(0, 1);
    b.put<uint64_t>(1ull << 60).raw("key");  // key length 2^60
    b.b.resize(b.b.size() + 64);              // so the count check passes and the length fails
    expect_error(b, "length");
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<uint32_t>(8).put<uint64_t>(1ull << 60).raw("v");  // string value length 2^60
    b.b.resize(b.b.size() + 64);
    expect_error(b, "length 1152921504606846976");
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1ull << 60);  // array of 2^60 strings
    expect_error(b, "array count");
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(~0ull);  // array of 2^64-1 bytes
    expect_error(b, "array count");
  }
}

TEST(GgufErrors, DeeplyNestedArraysAreRefused) {
  Bytes b = header(0, 1);
  b.str("k").put<uint32_t>(9);
  for (int d = 0; d < 100; ++d) b.put<uint32_t>(9).put<uint64_t>(1);
  b.put<uint32_t>(0).put<uint64_t>(0);
  expect_error(b, "nested");
}

TEST(GgufErrors, UnknownValueTypeAndBadBool) {
  Bytes b = header(0, 1);
  b.str("k").put<uint32_t>(13).put<uint32_t>(0);
  expect_error(b, "type 13");
  Bytes c = header(0, 1);
  c.str("flag").put<uint32_t>(7).put<uint8_t>(2);
  expect_error(c, "flag");
}

TEST(GgufErrors, DuplicateKeysAndTensors) {
  Bytes b = header(0, 2);
  b.str("k").put<uint32_t>(4).put<uint32_t>(1);
  b.str("k").put<uint32_t>(4).put<uint32_t>(2);
  expect_error(b, "duplicate metadata key 'k'");

  Bytes c = header(2, 0);
  c.str("w").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  c.str("w").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(32);
  while (c.b.size() % 32) c.put<uint8_t>(0);
  c.b.resize(c.b.size() + 64);
  expect_error(c, "duplicate tensor name 'w'");
}

TEST(GgufErrors, TensorInfoProblems) {
  expect_error(one_tensor(3, {32}, 0, 64), "ggml type q4_1 (3), which triattn does not support");
  expect_error(one_tensor(99, {32}, 0, 64), "ggml type unknown (99), which triattn does not support");
  expect_error(one_tensor(8, {33}, 0, 64), "block size");                 // Q8_0 rows of 33
  expect_error(one_tensor(0, {1, 1, 1, 1, 1}, 0, 64), "5 dims");
  expect_error(one_tensor(0, {0, 4}, 0, 64), "empty dimension");
  expect_error(one_tensor(0, {16}, 0, 63), "outside the data section");   // 64 bytes needed
  expect_error(one_tensor(0, {16}, 32, 64), "outside the data section");
  expect_error(one_tensor(0, {16}, 4, 128), "alignment");
  expect_error(one_tensor(0, {1ull << 62, 1ull << 62}, 0, 64), "shape");
  expect_error(one_tensor(0, {1ull << 30, 1ull << 20}, 0, 64), "outside the data section");
  // Sizes past 64 bits are refused by name, never wrapped into a small size that fits.
  expect_error(one_tensor(0, {1ull << 62}, 0, 64),
               "tensor 'w' (1 rows of 4611686018427387904 f32 values) needs more than 2^64 bytes");
  expect_error(one_tensor(0, {1ull << 31, 1ull << 31}, 0, 64), "needs more than 2^64 bytes");
  // Fits exactly: opens.
  TempDir dir;
  test::write_bytes(dir.file("ok.gguf"), one_tensor(0, {16}, 0, 64).b);
  auto f = GgufFile::open(dir.file("ok.gguf"));
  EXPECT_EQ(f->tensors().at(0).shape, (std::vector<int64_t>{16}));
}

// An unsupported type is named, with the list of the supported ones (a bare
// "unsupported ggml type 10" told the user nothing).
TEST(GgufErrors, UnsupportedTensorTypeIsNamedWithTheSupportedOnes) {
  const std::string msg = expect_error(one_tensor(10, {256}, 0, 256), "");
  EXPECT_NE(msg.find(": tensor 'w' has ggml type q2_k (10), which triattn does not support (supported: f32, f16, "
                     "q4_0, q8_0, q4_k, q5_k, q6_k, i32, bf16, mxfp4)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(ggml_type_label(0), "f32 (0)");
  EXPECT_EQ(ggml_type_label(11), "q3_k (11)");
  EXPECT_EQ(ggml_type_label(23), "iq4_xs (23)");
  EXPECT_EQ(ggml_type_label(30), "bf16 (30)");
  EXPECT_EQ(ggml_type_label(35), "tq2_0 (35)");
  EXPECT_EQ(ggml_type_label(39), "mxfp4 (39)");
  EXPECT_EQ(ggml_type_label(4), "unknown (4)");  // removed from ggml (q4_2)
  EXPECT_EQ(ggml_type_label(0xffffffffu), "unknown (4294967295)");
  // Every supported id has a name, and every type the reader accepts is in the list.
  for (uint32_t id = 0; id < 64; ++id) {
    if (const auto t = dtype_from_ggml(id)) {
      EXPECT_NE(supported_ggml_types().find(std::string(dtype_name(*t))), std::string::npos) << id;
    }
  }
}

TEST(GgufErrors, OverlappingTensors) {
  Bytes c = header(2, 0);
  c.str("a").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(0);
  c.str("b").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(32);
  while (c.b.size() % 32) c.put<uint8_t>(0);
  c.b.resize(c.b.size() + 96);
  expect_error(c, "overlap");
}

TEST(GgufErrors, BadAlignmentKey) {
  Bytes b = header(0, 1);
  b.str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
  expect_error(b, "power of two");
  Bytes c = header(0, 1);
  c.str("general.alignment").put<uint32_t>(10).put<uint64_t>(64);
  expect_error(c, "general.alignment has type uint64");
}

TEST(GgufErrors, MissingFile) {
  EXPECT_THROW(GgufFile::open("/nonexistent/dir/model.gguf"), Error);
}

}  // namespace
}  // namespace triattn
