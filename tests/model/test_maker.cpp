// The random-weight model maker: presets, GGUF and HF outputs that open with the format
// readers, determinism, and that both formats hold the same model (llama q/k permuted).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/shared_files.h"
#include "common/temp_dir.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "model/maker.h"
#include "model/model.h"
#include "ops/ops.h"

namespace triattn {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

using test::slurp;
std::vector<float> to_f32(DType type, const void* data, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  if (type == DType::F32) {
    std::memcpy(out.data(), data, out.size() * 4);
  } else {
    ops::dequantize_row(type, data, out.data(), n);
  }
  return out;
}

// GGUF q/k row r holds HF row perm(r) for llama (interleaved pairs within each head).
int64_t hf_row_of(int64_t r, int d) {
  const int64_t j = r % d;
  return r / d * d + (j % 2 == 0 ? j / 2 : j / 2 + d / 2);
}

TEST(ModelPreset, RealShapes) {
  const ModelConfig q = model_preset("qwen3-0.6b");
  EXPECT_EQ(q.arch, "qwen3");
  EXPECT_EQ(q.n_layers, 28);
  EXPECT_EQ(q.n_embd, 1024);
  EXPECT_EQ(q.n_heads, 16);
  EXPECT_EQ(q.n_kv_heads, 8);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.n_ff, 3072);
  EXPECT_EQ(q.vocab_size, 151936);
  EXPECT_TRUE(q.qk_norm);
  EXPECT_TRUE(q.tied_embeddings);
  EXPECT_EQ(q.rope_theta, 1e6f);
  EXPECT_EQ(q.context_length, 40960);

  const ModelConfig q8 = model_preset("qwen3-8b");
  EXPECT_EQ(q8.n_layers, 36);
  EXPECT_EQ(q8.n_embd, 4096);
  EXPECT_EQ(q8.n_heads, 32);
  EXPECT_EQ(q8.n_ff, 12288);
  EXPECT_FALSE(q8.tied_embeddings);

  const ModelConfig l = model_preset("llama-3.2-1b");
  EXPECT_EQ(l.arch, "llama");
  EXPECT_EQ(l.n_layers, 16);
  EXPECT_EQ(l.head_dim, 64);
  EXPECT_EQ(l.vocab_size, 128256);
  EXPECT_EQ(l.rope_scaling.type, RopeScalingType::Llama3);
  EXPECT_EQ(l.rope_scaling.factor, 32.0f);
  EXPECT_EQ(l.rope_scaling.original_context, 8192);
  EXPECT_EQ(l.rope_theta, 500000.0f);
  EXPECT_EQ(l.context_length, 131072);

  const ModelConfig d = model_preset("deepseek-r1-distill-qwen-7b");
  EXPECT_EQ(d.arch, "qwen2");
  EXPECT_EQ(d.n_embd, 3584);
  EXPECT_EQ(d.n_heads, 28);
  EXPECT_EQ(d.n_kv_heads, 4);
  EXPECT_EQ(d.n_ff, 18944);
  EXPECT_EQ(d.vocab_size, 152064);
  EXPECT_TRUE(d.qkv_bias);
  EXPECT_FALSE(d.tied_embeddings);

  for (const char* n : {"qwen3-0.6b", "qwen3-8b", "llama-3.2-1b", "deepseek-r1-distill-qwen-7b", "tiny-llama",
                        "tiny-qwen2", "tiny-qwen3"})
    EXPECT_NO_THROW(model_preset(n).validate()) << n;
}

TEST(ModelPreset, UnknownNameListsTheKnownOnes) {
  try {
    model_preset("gpt-5");
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("gpt-5"), std::string::npos);
    EXPECT_NE(msg.find("tiny-qwen3"), std::string::npos);
    EXPECT_NE(msg.find("llama-3.2-1b"), std::string::npos);
  }
}

TEST(MakerGguf, TinyLlamaKeysTensorsAndVocab) {
  TempDir dir;
  const ModelConfig cfg = model_preset("tiny-llama");
  write_random_gguf(cfg, {DType::F16, 3}, dir.file("m.gguf"));
  auto f = GgufFile::open(dir.file("m.gguf"));
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.block_count"), 2);
  EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f->get_int("llama.feed_forward_length"), 128);
  EXPECT_EQ(f->get_int("llama.attention.head_count"), 4);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(f->get_int("llama.attention.key_length"), 16);
  EXPECT_EQ(f->get_int("llama.attention.value_length"), 16);
  EXPECT_EQ(f->get_int("llama.context_length"), 512);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.rope.freq_base")), 10000.0f);
  EXPECT_FALSE(f->has("llama.rope.scaling.type"));

  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(tokens[259], "\xe2\x96\x81t259");
  EXPECT_EQ(tokens[511], "\xe2\x96\x81t511");
  const auto types = f->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[100], 6);
  EXPECT_EQ(types[300], 1);
  EXPECT_EQ(f->get_float_array("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token"));

  // 1 embedding + 2 x 9 per layer + output_norm + output (untied).
  EXPECT_EQ(f->tensors().size(), 1u + 2 * 9 + 2);
  const auto expect = [&](const std::string& name, DType type, std::vector<int64_t> shape) {
    const auto* t = f->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, type) << name;
    EXPECT_EQ(t->shape, shape) << name;
  };
  expect("token_embd.weight", DType::F16, {512, 64});
  expect("output.weight", DType::F16, {512, 64});
  expect("output_norm.weight", DType::F32, {64});
  expect("blk.1.attn_norm.weight", DType::F32, {64});
  expect("blk.1.ffn_norm.weight", DType::F32, {64});
  expect("blk.0.attn_q.weight", DType::F16, {64, 64});
  expect("blk.0.attn_k.weight", DType::F16, {32, 64});
  expect("blk.0.attn_v.weight", DType::F16, {32, 64});
  expect("blk.0.attn_output.weight", DType::F16, {64, 64});
  expect("blk.1.ffn_gate.weight", DType::F16, {128, 64});
  expect("blk.1.ffn_up.weight", DType::F16, {128, 64});
  expect("blk.1.ffn_down.weight", DType::F16, {64, 128});
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q_norm.weight"), nullptr);
}

TEST(MakerGguf, QwenVariantsAndQuantizedTypes) {
  TempDir dir;
  write_random_gguf(model_preset("tiny-qwen3"), {DType::Q8_0, 1}, dir.file("q3.gguf"));
  auto q3 = GgufFile::open(dir.file("q3.gguf"));
  EXPECT_EQ(q3->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(q3->get_int("qwen3.block_count"), 2);
  EXPECT_EQ(q3->find_tensor("output.weight"), nullptr);  // tied
  ASSERT_NE(q3->find_tensor("blk.1.attn_k_norm.weight"), nullptr);
  EXPECT_EQ(q3->find_tensor("blk.1.attn_k_norm.weight")->shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(q3->find_tensor("blk.0.attn_q_norm.weight")->type, DType::F32);
  EXPECT_EQ(q3->find_tensor("blk.0.ffn_down.weight")->type, DType::Q8_0);

  // K-quants need rows of 256: tiny rows of 64/128 fall back to Q8_0.
  write_random_gguf(model_preset("tiny-qwen2"), {DType::Q4_K, 1}, dir.file("q2.gguf"));
  auto q2 = GgufFile::open(dir.file("q2.gguf"));
  EXPECT_EQ(q2->find_tensor("blk.0.attn_q.weight")->type, DType::Q8_0);
  for (const char* b : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.1.attn_v.bias"}) {
    const auto* t = q2->find_tensor(b);
    ASSERT_NE(t, nullptr) << b;
    EXPECT_EQ(t->type, DType::F32);
  }
  EXPECT_EQ(q2->find_tensor("blk.0.attn_q.bias")->shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(q2->find_tensor("blk.0.attn_k.bias")->shape, (std::vector<int64_t>{32}));
  ASSERT_NE(q2->find_tensor("output.weight"), nullptr);
}

// llama.cpp's Q4_K_M recipe on 8 layers with K-quant-sized rows: Q6_K for the tied
// embedding (it is the output matrix) and for attn_v / ffn_down of layers 0, 3, 6 and 7
// (first and last eighth, every third in between), Q4_K for every other matrix.
TEST(MakerGguf, Q4KMMixesQ6KIntoTheSensitiveMatrices) {
  TempDir dir;
  ModelConfig cfg = model_preset("tiny-qwen3");
  cfg.n_layers = 8;
  cfg.n_embd = 256;
  cfg.n_ff = 256;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.head_dim = 64;
  MakerOptions opt;
  opt.weight_type = DType::Q4_K;
  opt.q4_k_m = true;
  write_random_gguf(cfg, opt, dir.file("m.gguf"));
  auto f = GgufFile::open(dir.file("m.gguf"));
  EXPECT_EQ(f->find_tensor("token_embd.weight")->type, DType::Q6_K);
  for (int l = 0; l < 8; ++l) {
    SCOPED_TRACE(l);
    const std::string b = "blk." + std::to_string(l) + ".";
    const DType sensitive = (l == 0 || l == 3 || l == 6 || l == 7) ? DType::Q6_K : DType::Q4_K;
    EXPECT_EQ(f->find_tensor(b + "attn_v.weight")->type, sensitive);
    EXPECT_EQ(f->find_tensor(b + "ffn_down.weight")->type, sensitive);
    for (const char* m : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(f->find_tensor(b + m)->type, DType::Q4_K) << m;
  }
  // An untied output gets Q6_K and the embedding then stays Q4_K.
  EXPECT_EQ(maker_matrix_type(opt, "output.weight", -1, 8, true, 256), DType::Q6_K);
  EXPECT_EQ(maker_matrix_type(opt, "token_embd.weight", -1, 8, false, 256), DType::Q4_K);
  // The loaded model names its mix, most bytes first.
  EXPECT_EQ(Model::load(dir.file("m.gguf"))->weight_type_name(), "q4_k+q6_k");
  // Rows that are not a whole K-quant block fall back to Q8_0, as for plain Q4_K.
  EXPECT_EQ(maker_matrix_type(opt, "blk.0.attn_v.weight", 0, 8, false, 96), DType::Q8_0);
}

// A real preset cut to one layer and a small vocabulary: real per-layer shapes, K-quant kept.
TEST(MakerGguf, RealShapesOneLayerLlama3Scaling) {
  TempDir dir;
  ModelConfig cfg = model_preset("llama-3.2-1b");
  cfg.n_layers = 1;
  cfg.vocab_size = 512;
  write_random_gguf(cfg, {DType::Q4_K, 1}, dir.file("l.gguf"));
  auto f = GgufFile::open(dir.file("l.gguf"));
  // llama3 scaling as llama.cpp's converter writes it (llama.cpp refuses a scaling type
  // "llama3"): no scaling keys, per-band divisors in rope_freqs.weight, 1 for the shortest
  // wavelength and the factor 32 for the longest; loaded back, the same frequencies.
  EXPECT_FALSE(f->has("llama.rope.scaling.type"));
  const auto* freqs = f->find_tensor("rope_freqs.weight");
  ASSERT_NE(freqs, nullptr);
  EXPECT_EQ(freqs->type, DType::F32);
  EXPECT_EQ(freqs->shape, (std::vector<int64_t>{32}));
  const auto loaded = Model::load(dir.file("l.gguf"));
  EXPECT_EQ(loaded->config().rope_scaling.type, RopeScalingType::None);
  ASSERT_EQ(loaded->config().rope_freq_factors.size(), 32u);
  EXPECT_NEAR(loaded->config().rope_freq_factors[0], 1.0f, 1e-6);
  EXPECT_NEAR(loaded->config().rope_freq_factors[31], 32.0f, 1e-4);
  const std::vector<float> want = cfg.rope_freqs(), got = loaded->config().rope_freqs();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << "band " << i;
  EXPECT_EQ(f->get_int("llama.context_length"), 131072);
  const auto* q = f->find_tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q->type, DType::Q4_K);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{512, 2048}));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{2048, 8192}));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, DType::Q4_K);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
}

TEST(MakerGguf, SameSeedSameBytesOtherSeedOtherWeights) {
  TempDir dir;
  const ModelConfig cfg = model_preset("tiny-qwen2");
  write_random_gguf(cfg, {DType::Q8_0, 5}, dir.file("a.gguf"));
  write_random_gguf(cfg, {DType::Q8_0, 5}, dir.file("b.gguf"));
  write_random_gguf(cfg, {DType::Q8_0, 6}, dir.file("c.gguf"));
  const std::string a = slurp(dir.file("a.gguf"));
  EXPECT_GT(a.size(), 100000u);
  EXPECT_EQ(a, slurp(dir.file("b.gguf")));
  const std::string c = slurp(dir.file("c.gguf"));
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);

  write_random_hf(cfg, {DType::BF16, 5}, dir.file("h1"));
  write_random_hf(cfg, {DType::BF16, 5}, dir.file("h2"));
  EXPECT_EQ(slurp(dir.file("h1/model.safetensors")), slurp(dir.file("h2/model.safetensors")));
}

TEST(MakerGguf, WeightStatistics) {
  TempDir dir;
  write_random_gguf(model_preset("tiny-llama"), {DType::F32, 9}, dir.file("m.gguf"));
  auto f = GgufFile::open(dir.file("m.gguf"));
  const auto* t = f->find_tensor("token_embd.weight");
  const float* w = static_cast<const float*>(t->data);
  const int64_t n = 512 * 64;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += w[i];
    sq += double(w[i]) * w[i];
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.001);
  const float* norm = static_cast<const float*>(f->find_tensor("blk.0.attn_norm.weight")->data);
  bool all_one = true;
  for (int i = 0; i < 64; ++i) {
    EXPECT_GE(norm[i], 1.0f - 16.0f / 128);
    EXPECT_LE(norm[i], 1.0f + 16.0f / 128);
    all_one &= norm[i] == 1.0f;
  }
  EXPECT_FALSE(all_one);
}

TEST(MakerHf, DirectoryContents) {
  TempDir dir;
  const ModelConfig cfg = model_preset("tiny-qwen3");
  write_random_hf(cfg, {DType::F16, 2}, dir.file("hf"));

  std::ifstream cj(dir.file("hf/config.json"));
  const auto c = nlohmann::json::parse(cj);
  EXPECT_EQ(c["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(c["model_type"], "qwen3");
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["intermediate_size"], 128);
  EXPECT_EQ(c["num_hidden_layers"], 2);
  EXPECT_EQ(c["num_attention_heads"], 4);
  EXPECT_EQ(c["num_key_value_heads"], 2);
  EXPECT_EQ(c["head_dim"], 16);
  EXPECT_EQ(c["vocab_size"], 512);
  EXPECT_EQ(c["max_position_embeddings"], 512);
  EXPECT_EQ(c["rms_norm_eps"], 1e-6);
  EXPECT_EQ(c["rope_theta"], 1e6);
  EXPECT_TRUE(c["rope_scaling"].is_null());
  EXPECT_EQ(c["tie_word_embeddings"], true);
  EXPECT_EQ(c["attention_bias"], false);
  EXPECT_EQ(c["torch_dtype"], "float16");

  auto ck = HfCheckpoint::open(dir.file("hf"));
  EXPECT_EQ(ck.find("lm_head.weight"), nullptr);  // tied
  const auto* emb = ck.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::F16);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(ck.find("model.layers.1.self_attn.q_norm.weight")->shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(ck.find("model.layers.0.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(ck.find("model.layers.0.mlp.down_proj.weight")->shape, (std::vector<int64_t>{64, 128}));
  EXPECT_NE(ck.find("model.norm.weight"), nullptr);
  EXPECT_EQ(ck.names().size(), 1u + 2 * 11 + 1);

  // tokenizer.json holds the same vocabulary as the GGUF.
  write_random_gguf(cfg, {DType::F16, 2}, dir.file("m.gguf"));
  const auto tokens = GgufFile::open(dir.file("m.gguf"))->get_string_array("tokenizer.ggml.tokens");
  std::ifstream tj(dir.file("hf/tokenizer.json"));
  const auto tok = nlohmann::json::parse(tj);
  EXPECT_EQ(tok["model"]["type"], "BPE");
  EXPECT_EQ(tok["model"]["byte_fallback"], true);
  EXPECT_TRUE(tok["model"]["merges"].empty());
  const auto& vocab = tok["model"]["vocab"];
  ASSERT_EQ(vocab.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(vocab.at(tokens[i]), i) << tokens[i];
  EXPECT_EQ(tok["normalizer"]["normalizers"][0]["prepend"], "\xe2\x96\x81");
  std::ifstream tcj(dir.file("hf/tokenizer_config.json"));
  const auto tc = nlohmann::json::parse(tcj);
  EXPECT_EQ(tc["bos_token"], "<s>");
  EXPECT_EQ(tc["eos_token"], "</s>");
  EXPECT_EQ(tc["add_bos_token"], true);
}

TEST(MakerHf, RefusesQuantizedTypes) {
  TempDir dir;
  EXPECT_THROW(write_random_hf(model_preset("tiny-llama"), {DType::Q8_0, 1}, dir.file("hf")), Error);
}

// Each format has a default type it can hold (`make-model --format hf` without
// --type used to fail, the one default being q8_0).
TEST(MakerDefaults, EachFormatGetsATypeItCanHold) {
  EXPECT_EQ(maker_default_type("gguf"), "q8_0");
  EXPECT_EQ(maker_default_type("hf"), "f32");
  EXPECT_THROW(maker_default_type("onnx"), Error);
  TempDir dir;
  const auto hf_type = dtype_from_name(maker_default_type("hf"));
  ASSERT_TRUE(hf_type.has_value());
  EXPECT_NO_THROW(write_random_hf(model_preset("tiny-llama"), {*hf_type, 1}, dir.file("hf")));
}

// Same seed, F32 both: every GGUF tensor equals its HF tensor, with llama q/k rows permuted
// into interleaved pairs (un-permuting gives the HF rows exactly).
void expect_same_model(const std::string& preset) {
  SCOPED_TRACE(preset);
  TempDir dir;
  const ModelConfig cfg = model_preset(preset);
  write_random_gguf(cfg, {DType::F32, 11}, dir.file("m.gguf"));
  write_random_hf(cfg, {DType::F32, 11}, dir.file("hf"));
  auto g = GgufFile::open(dir.file("m.gguf"));
  auto h = HfCheckpoint::open(dir.file("hf"));
  const bool permuted = cfg.arch == "llama";
  const int d = cfg.head_dim;
  size_t checked = 0;
  for (const std::string& hf_name : h.names()) {
    std::string gg = hf_name;
    // Map HF -> GGUF names.
    const std::pair<const char*, const char*> map[] = {
        {"self_attn.q_proj.", "attn_q."},          {"self_attn.k_proj.", "attn_k."},
        {"self_attn.v_proj.", "attn_v."},          {"self_attn.o_proj.", "attn_output."},
        {"self_attn.q_norm.", "attn_q_norm."},     {"self_attn.k_norm.", "attn_k_norm."},
        {"mlp.gate_proj.", "ffn_gate."},           {"mlp.up_proj.", "ffn_up."},
        {"mlp.down_proj.", "ffn_down."},           {"input_layernorm.", "attn_norm."},
        {"post_attention_layernorm.", "ffn_norm."}};
    if (hf_name == "model.embed_tokens.weight") gg = "token_embd.weight";
    else if (hf_name == "model.norm.weight") gg = "output_norm.weight";
    else if (hf_name == "lm_head.weight") gg = "output.weight";
    else {
      const std::string prefix = "model.layers.";
      const size_t dot = hf_name.find('.', prefix.size());
      const std::string layer = hf_name.substr(prefix.size(), dot - prefix.size());
      std::string rest = hf_name.substr(dot + 1);
      for (const auto& [from, to] : map)
        if (rest.rfind(from, 0) == 0) rest = to + rest.substr(std::strlen(from));
      gg = "blk." + layer + "." + rest;
    }
    const auto* ht = h.find(hf_name);
    const auto* gt = g->find_tensor(gg);
    ASSERT_NE(gt, nullptr) << gg;
    ASSERT_EQ(gt->shape, ht->shape) << gg;
    const bool rope_rows = permuted && (gg.find("attn_q.") != std::string::npos ||
                                        gg.find("attn_k.") != std::string::npos ||
                                        gg.find("attn_q_norm.") != std::string::npos ||
                                        gg.find("attn_k_norm.") != std::string::npos);
    const auto hv = to_f32(ht->type, ht->data, ht->view().numel());
    const auto gv = to_f32(gt->type, gt->data, gt->view().numel());
    const int64_t cols = ht->shape.back();
    const int64_t rows = ht->view().numel() / cols;
    bool differs_unpermuted = false;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        // 2-D: rows permute; 1-D (biases, per-head norms): elements permute.
        int64_t hr = r, hc = c;
        if (rope_rows && ht->shape.size() == 2) hr = hf_row_of(r, d);
        if (rope_rows && ht->shape.size() == 1) hc = hf_row_of(c, d);
        const float want = hv[static_cast<size_t>(hr * cols + hc)];
        const float got = gv[static_cast<size_t>(r * cols + c)];
        ASSERT_EQ(got, want) << gg << " row " << r << " col " << c;
        differs_unpermuted |= got != hv[static_cast<size_t>(r * cols + c)];
      }
    }
    // The permutation is really applied (and only where it should be).
    EXPECT_EQ(differs_unpermuted, rope_rows && hv.size() > 1) << gg;
    ++checked;
  }
  EXPECT_EQ(checked, g->tensors().size());
}

TEST(MakerFormats, GgufAndHfHoldTheSameModel) {
  expect_same_model("tiny-llama");
  expect_same_model("tiny-qwen2");
  expect_same_model("tiny-qwen3");
}

// Quantized GGUF vs F32 HF of the same seed: close, within Q8_0 error.
TEST(MakerFormats, QuantizedGgufApproximatesHf) {
  TempDir dir;
  const ModelConfig cfg = model_preset("tiny-qwen3");
  write_random_gguf(cfg, {DType::Q8_0, 4}, dir.file("m.gguf"));
  write_random_hf(cfg, {DType::F32, 4}, dir.file("hf"));
  auto g = GgufFile::open(dir.file("m.gguf"));
  auto h = HfCheckpoint::open(dir.file("hf"));
  const auto* gt = g->find_tensor("blk.1.ffn_up.weight");
  const auto* ht = h.find("model.layers.1.mlp.up_proj.weight");
  const auto gv = to_f32(gt->type, gt->data, gt->view().numel());
  const auto hv = to_f32(ht->type, ht->data, ht->view().numel());
  double max_err = 0;
  for (size_t i = 0; i < gv.size(); ++i) max_err = std::max(max_err, double(std::abs(gv[i] - hv[i])));
  EXPECT_GT(max_err, 0.0);
  EXPECT_LT(max_err, 0.1 * 0.02 * 4);  // Q8_0 step is max|x|/127 per block
}

}  // namespace
}  // namespace triattn
