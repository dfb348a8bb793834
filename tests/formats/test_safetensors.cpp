// safetensors reader on the real TinyStories file, HfCheckpoint (single file and sharded),
// writer round trips, and malformed headers.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/format_test_util.h"
#include "formats/safetensors.h"

namespace triattn {
namespace {

using test::shared_path;
using test::TempDir;

TEST(SafetensorsReal, TinyStories) {
  auto f = SafetensorsFile::open(shared_path(test::kTinySafetensors));
  ASSERT_EQ(f->tensors().size(), 20u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("model.embed_tokens.weight"), "lm_head.weight");
  for (const auto& t : f->tensors()) EXPECT_EQ(t.type, DType::F32) << t.name;

  const auto* head = f->find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->shape, (std::vector<int64_t>{2048, 128}));
  EXPECT_EQ(head->nbytes, 2048u * 128 * 4);
  EXPECT_EQ(static_cast<const uint8_t*>(head->data) - f->file().data(), 8 + 2160);
  EXPECT_EQ(f->find("model.embed_tokens.weight"), nullptr);  // only an alias in the metadata

  const std::pair<const char*, std::vector<int64_t>> shapes[] = {
      {"model.layers.0.self_attn.q_proj.weight", {128, 128}},
      {"model.layers.1.self_attn.k_proj.weight", {64, 128}},
      {"model.layers.0.self_attn.v_proj.weight", {64, 128}},
      {"model.layers.1.self_attn.o_proj.weight", {128, 128}},
      {"model.layers.0.mlp.gate_proj.weight", {384, 128}},
      {"model.layers.0.mlp.up_proj.weight", {384, 128}},
      {"model.layers.1.mlp.down_proj.weight", {128, 384}},
      {"model.layers.1.input_layernorm.weight", {128}},
      {"model.layers.0.post_attention_layernorm.weight", {128}},
      {"model.norm.weight", {128}},
  };
  for (const auto& [name, shape] : shapes) {
    const auto* t = f->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, shape) << name;
    EXPECT_EQ(t->view().nbytes(), t->nbytes) << name;
  }
  // Tensors are listed in file order and the last one ends the file.
  const auto& last = f->tensors().back();
  EXPECT_EQ(last.name, "model.norm.weight");
  EXPECT_EQ(static_cast<const uint8_t*>(last.data) + last.nbytes, f->file().data() + f->file().size());
}

TEST(SafetensorsReal, HfCheckpointOnTinyStoriesDir) {
  auto ck = HfCheckpoint::open(shared_path(test::kTinyDir));
  EXPECT_EQ(ck.shard_count(), 1u);
  EXPECT_EQ(ck.names().size(), 20u);
  const auto* head = ck.find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  // The tied embedding resolves through the __metadata__ alias.
  EXPECT_EQ(ck.find("model.embed_tokens.weight"), head);
  EXPECT_EQ(ck.find("format"), nullptr);
  EXPECT_EQ(ck.find("no.such.tensor"), nullptr);
  EXPECT_EQ(ck.metadata().at("format"), "pt");
  // Messages about the checkpoint's tensors name the file that lists them.
  EXPECT_EQ(ck.source(), shared_path(test::kTinySafetensors));
}

TEST(SafetensorsReal, HfCheckpointMissingDirectoryContents) {
  TempDir dir;
  EXPECT_THROW(HfCheckpoint::open(dir.path().string()), Error);
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(SafetensorsWriter, RoundTripEveryDType) {
  TempDir dir;
  test::Rng rng(7);
  struct Case {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Case> cases = {{"a.f32", DType::F32, {3, 5}, {}},
                             {"b.f16", DType::F16, {7}, {}},
                             {"c.bf16", DType::BF16, {2, 3, 1}, {}},
                             {"d.i32", DType::I32, {4, 1, 1, 2}, {}},
                             {"f.scalar", DType::F32, {}, {}}};
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.set_metadata("note", "round \"trip\" ✓");
  for (auto& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    c.bytes = rng.bytes(static_cast<size_t>(n) * row_bytes(c.type, 1));
    w.add(c.name, c.type, c.shape, c.bytes.data(), c.bytes.size());
  }
  w.add_rows("g.rows", DType::BF16, {4, 2}, [](int64_t r, uint8_t* dst) { std::memset(dst, 0x10 + r, 4); });
  w.write(dir.file("x.safetensors"));

  // Header padded with spaces to a multiple of 8.
  const auto raw = test::read_bytes(dir.file("x.safetensors"));
  uint64_t hlen;
  std::memcpy(&hlen, raw.data(), 8);
  EXPECT_EQ(hlen % 8, 0u);

  auto f = SafetensorsFile::open(dir.file("x.safetensors"));
  EXPECT_EQ(f->metadata().at("note"), "round \"trip\" ✓");
  ASSERT_EQ(f->tensors().size(), cases.size() + 1);
  for (const auto& c : cases) {
    const auto* t = f->find(c.name);
    ASSERT_NE(t, nullptr) << c.name;
    EXPECT_EQ(t->type, c.type) << c.name;
    EXPECT_EQ(t->shape, c.shape) << c.name;
    ASSERT_EQ(t->nbytes, c.bytes.size()) << c.name;
    if (!c.bytes.empty()) {
      EXPECT_EQ(std::memcmp(t->data, c.bytes.data(), c.bytes.size()), 0) << c.name;
    }
  }
  const auto* rows = f->find("g.rows");
  ASSERT_NE(rows, nullptr);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(static_cast<const uint8_t*>(rows->data)[r * 4 + 3], 0x10 + r);
}

TEST(SafetensorsWriter, RefusesBadInput) {
  SafetensorsWriter w;
  const float x[4] = {};
  EXPECT_THROW(w.add("q", DType::Q8_0, {32}, x, 34), Error);
  EXPECT_THROW(w.add("short", DType::F32, {4}, x, 12), Error);
  EXPECT_THROW(w.add("__metadata__", DType::F32, {1}, x, 4), Error);
  EXPECT_THROW(w.add("empty", DType::F32, {0, 4}, x, 0), Error);
  w.add("a", DType::F32, {1}, x, 4);
  EXPECT_THROW(w.add("a", DType::F32, {1}, x, 4), Error);
}

// Writes a sharded checkpoint: two shards plus the index.
void write_sharded(const TempDir& dir, const nlohmann::json& weight_map) {
  SafetensorsWriter s1, s2;
  const auto a = bytes_of({1, 2, 3, 4});
  const auto b = bytes_of({5, 6});
  const auto c = bytes_of({7});
  s1.add("model.a", DType::F32, {2, 2}, a.data(), a.size());
  s1.add("model.b", DType::F32, {2}, b.data(), b.size());
  s1.set_metadata("format", "pt");
  s2.add("model.c", DType::F32, {1}, c.data(), c.size());
  s1.write(dir.file("model-00001-of-00002.safetensors"));
  s2.write(dir.file("model-00002-of-00002.safetensors"));
  nlohmann::json index = {{"metadata", {{"total_size", 28}}}, {"weight_map", weight_map}};
  std::ofstream(dir.file("model.safetensors.index.json")) << index.dump(2);
}

TEST(HfCheckpointSharded, OpensAllShards) {
  TempDir dir;
  write_sharded(dir, {{"model.a", "model-00001-of-00002.safetensors"},
                      {"model.b", "model-00001-of-00002.safetensors"},
                      {"model.c", "model-00002-of-00002.safetensors"}});
  auto ck = HfCheckpoint::open(dir.path().string());
  EXPECT_EQ(ck.shard_count(), 2u);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"model.a", "model.b", "model.c"}));
  const auto* c = ck.find("model.c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(static_cast<const float*>(c->data)[0], 7.0f);
  EXPECT_EQ(static_cast<const float*>(ck.find("model.a")->data)[3], 4.0f);
  EXPECT_EQ(ck.metadata().at("format"), "pt");
  EXPECT_EQ(ck.source(), dir.file("model.safetensors.index.json"));
}

TEST(HfCheckpointSharded, MissingShardIsAnError) {
  TempDir dir;
  write_sharded(dir, {{"model.a", "model-00001-of-00002.safetensors"},
                      {"model.d", "model-00003-of-00003.safetensors"}});
  try {
    HfCheckpoint::open(dir.path().string());
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00003-of-00003.safetensors"), std::string::npos) << e.what();
  }
}

TEST(HfCheckpointSharded, TensorMissingFromItsShardIsAnError) {
  TempDir dir;
  write_sharded(dir, {{"model.a", "model-00001-of-00002.safetensors"},
                      {"model.c", "model-00001-of-00002.safetensors"}});  // c is in shard 2
  try {
    HfCheckpoint::open(dir.path().string());
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.c"), std::string::npos) << e.what();
  }
}

TEST(HfCheckpointSharded, BadIndexJson) {
  TempDir dir;
  write_sharded(dir, {{"model.a", "model-00001-of-00002.safetensors"}});
  std::ofstream(dir.file("model.safetensors.index.json")) << "{\"weight_map\": [1, 2]}";
  EXPECT_THROW(HfCheckpoint::open(dir.path().string()), Error);
  std::ofstream(dir.file("model.safetensors.index.json")) << "{not json";
  EXPECT_THROW(HfCheckpoint::open(dir.path().string()), Error);
}

// ---- malformed headers ---------------------------------------------------------------

std::string expect_header_error(const std::string& header_json, size_t data_bytes, const std::string& needle) {
  TempDir dir;
  test::Bytes b;
  b.put<uint64_t>(header_json.size()).raw(header_json);
  b.b.resize(b.b.size() + data_bytes);
  const std::string path = dir.file("bad.safetensors");
  test::write_bytes(path, b.b);
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "expected Error containing '" << needle << "' for " << header_json;
  return "";
}

TEST(SafetensorsErrors, MalformedHeaders) {
  expect_header_error(R"({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})", 16, "F64");
  expect_header_error(R"({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})", 16, "'w'");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}})", 16, "need 8");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8, "outside");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 16, "outside");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 16, "non-negative");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", 16, "non-negative");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2]}})", 16, "data_offsets");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2, 0], "data_offsets": [0, 0]}})", 16, "empty dimension");
  expect_header_error(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", 16, "dtype");
  expect_header_error(R"({"w": [1, 2]})", 16, "not a JSON object");
  expect_header_error(R"([1, 2])", 16, "not a JSON object");
  expect_header_error(R"({"w": )", 16, "JSON");
  expect_header_error(R"({"__metadata__": {"a": 1}})", 0, "__metadata__");
  expect_header_error(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
               16, "overlap");
  expect_header_error(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
               16, "twice");
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 8]}})", 16,
               "shape");
}

TEST(SafetensorsErrors, HeaderLengthBeyondFile) {
  TempDir dir;
  test::Bytes b;
  b.put<uint64_t>(1ull << 60).raw("{}");
  test::write_bytes(dir.file("a.safetensors"), b.b);
  EXPECT_THROW(SafetensorsFile::open(dir.file("a.safetensors")), Error);
  test::write_bytes(dir.file("b.safetensors"), b.b.data(), 5);
  EXPECT_THROW(SafetensorsFile::open(dir.file("b.safetensors")), Error);
}

}  // namespace
}  // namespace triattn
