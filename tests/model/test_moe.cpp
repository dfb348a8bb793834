// The mixture-of-experts FFN (model/moe.h) and what drives it: the router, per-expert views of
// a 3-D stack in every weight type (the load-time Q8_0x4 and Q8_0x16 layouts included), decode reading only
// the selected experts, prefill (grouped by expert) equal to decode, the MoE presets read back
// from both formats, and config.json's decoder_sparse_step / mlp_only_layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "common/temp_dir.h"
#include "forward_test_util.h"
#include "core/error.h"
#include "model/forward.h"
#include "model/maker.h"
#include "model/model.h"
#include "model/moe.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"

namespace triattn {
namespace {

TEST(MoeRoute, SoftmaxTopKRenormalised) {
  Route r;
  const std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f};
  route(logits, 2, true, r);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3}));  // equal logits: the lower index first
  EXPECT_FLOAT_EQ(r.weights[0], 0.5f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.5f);
  route(logits, 3, false, r);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 3, 2}));
  const double sum = std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0);
  EXPECT_FLOAT_EQ(r.weights[0], static_cast<float>(std::exp(3.0) / sum));
  EXPECT_FLOAT_EQ(r.weights[2], static_cast<float>(std::exp(2.0) / sum));
  route(logits, 3, true, r);
  EXPECT_FLOAT_EQ(r.weights[0] + r.weights[1] + r.weights[2], 1.0f);
  EXPECT_THROW(route(logits, 5, true, r), Error);
}

// A stack of `n` random matrices [rows, cols] in `type`, and each of them on its own.
struct Stack {
  std::vector<uint8_t> bytes;
  std::vector<std::vector<uint8_t>> parts;
  TensorView view(DType type, int64_t n, int64_t rows, int64_t cols) const {
    return TensorView{type, {n, rows, cols}, bytes.data()};
  }
};

Stack random_stack(DType type, int64_t n, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Stack s;
  const size_t rb = row_bytes(type, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t e = 0; e < n; ++e) {
    std::vector<uint8_t> part(rb * static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = dist(rng);
      ops::quantize_row(type, row.data(), part.data() + r * rb, cols);
    }
    s.bytes.insert(s.bytes.end(), part.begin(), part.end());
    s.parts.push_back(std::move(part));
  }
  return s;
}

// Expert e's view of a stack computes exactly what expert e's matrix does on its own, for
// every weight type the loaders accept and for the interleaved layout repacking makes.
TEST(MoeExperts, ExpertViewsMatchTheirOwnMatrixInEveryType) {
  const int64_t n = 3, rows = 16, cols = 256, tokens = 3;
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K,
                     DType::Q6_K}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const Stack s = random_stack(type, n, rows, cols, 11);
    const TensorView stack = s.view(type, n, rows, cols);
    for (int64_t e = 0; e < n; ++e) {
      const TensorView own{type, {rows, cols}, s.parts[e].data()};
      std::vector<float> a(static_cast<size_t>(tokens * rows)), b(a.size());
      for (int64_t t : {int64_t{1}, tokens}) {
        ops::matmul(expert_matrix(stack, e), x.data(), t, a.data(), nullptr);
        ops::matmul(own, x.data(), t, b.data(), nullptr);
        for (size_t i = 0; i < static_cast<size_t>(t * rows); ++i) ASSERT_EQ(a[i], b[i]) << "expert " << e;
      }
    }
    if (type != DType::Q8_0) continue;
    // Repacked: the stack interleaved as one matrix of n * rows rows (weight_repack does so
    // when every expert's rows are whole groups) = each expert interleaved on its own.
    for (DType to : {DType::Q8_0x4, DType::Q8_0x16}) {
      const TensorView flat{type, {n * rows, cols}, s.bytes.data()};
      std::vector<uint8_t> packed(flat.nbytes());
      ops::interleave(flat, to, packed.data());
      const TensorView packed_stack{to, {n, rows, cols}, packed.data()};
      for (int64_t e = 0; e < n; ++e) {
        const TensorView own{type, {rows, cols}, s.parts[e].data()};
        std::vector<uint8_t> own_packed(own.nbytes());
        ops::interleave(own, to, own_packed.data());
        const TensorView own_x{to, {rows, cols}, own_packed.data()};
        std::vector<float> a(static_cast<size_t>(tokens * rows)), b(a.size());
        ops::matmul(expert_matrix(packed_stack, e), x.data(), tokens, a.data(), nullptr);
        ops::matmul(own_x, x.data(), tokens, b.data(), nullptr);
        for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << dtype_name(to) << " expert " << e;
      }
    }
  }
}

// A MoE layer by hand (f32, n_embd 32, 4 experts of 32, 2 used): the router picks experts 1
// and 3 for x = e_0; experts 0 and 2 are NaN, so reading them would poison the output.
TEST(MoeExperts, OnlyTheSelectedExpertsAreRead) {
  const int64_t E = 32, X = 4, F = 32;
  ModelConfig c;
  c.n_embd = E;
  c.n_expert = X;
  c.n_expert_used = 2;
  c.n_ff_expert = F;
  c.expert_weights_norm = true;
  std::vector<float> router(static_cast<size_t>(X * E), 0.0f);
  const float bias[] = {0.0f, 2.0f, -1.0f, 1.0f};
  for (int64_t e = 0; e < X; ++e) router[e * E] = bias[e];
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto experts = [&](int64_t rows, int64_t cols) {
    std::vector<float> w(static_cast<size_t>(X * rows * cols));
    for (size_t i = 0; i < w.size(); ++i) {
      const int64_t e = static_cast<int64_t>(i) / (rows * cols);
      w[i] = e == 0 || e == 2 ? nan : dist(rng);
    }
    return w;
  };
  std::vector<float> gate = experts(F, E), up = experts(F, E), down = experts(E, F);
  LayerWeights L;
  L.router = TensorView{DType::F32, {X, E}, router.data()};
  L.gate_exps = TensorView{DType::F32, {X, F, E}, gate.data()};
  L.up_exps = TensorView{DType::F32, {X, F, E}, up.data()};
  L.down_exps = TensorView{DType::F32, {X, E, F}, down.data()};

  const int64_t T = 3;  // three equal tokens: prefill's grouped product and decode agree
  std::vector<float> xn(static_cast<size_t>(T * E), 0.0f);
  for (int64_t t = 0; t < T; ++t) xn[t * E] = 1.0f;
  std::vector<float> out(static_cast<size_t>(T * E));
  MoeFfn moe;
  ThreadPool pool(2);
  moe.run(c, L, xn.data(), T, out.data(), &pool);

  // Expected: softmax over {2, 1} renormalised, times each expert's SwiGLU MLP of e_0.
  const double w1 = std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), w3 = 1 - w1;
  for (int64_t i = 0; i < E; ++i) {
    double want = 0;
    for (auto [e, w] : {std::pair<int64_t, double>{1, w1}, {3, w3}}) {
      for (int64_t f = 0; f < F; ++f) {
        const double g = gate[(e * F + f) * E], u = up[(e * F + f) * E];
        want += w * down[(e * E + i) * F + f] * (g / (1 + std::exp(-g)) * u);
      }
    }
    for (int64_t t = 0; t < T; ++t) ASSERT_NEAR(out[t * E + i], want, 1e-5) << "token " << t << " row " << i;
  }
}

KvCacheShape cache_shape(const ModelConfig& c) {
  KvCacheShape s;
  s.n_layers = c.n_layers;
  s.n_kv_heads = c.n_kv_heads;
  s.head_dim = c.head_dim;
  s.type = DType::F32;
  return s;
}

using test::rel_diff;
using test::run_all;

// Prefill groups the tokens by expert (one product per expert); decode runs one token's
// experts. Both, and two sequences batched together, give the same logits; in f32 files and
// in Q8_0 files whose expert stacks are repacked at load (Q8_0x16 on AVX-512, else Q8_0x4).
TEST(MoeForward, PrefillEqualsDecodeAndBatching) {
  for (DType type : {DType::F32, DType::Q8_0}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    test::TempDir dir;
    write_random_gguf(model_preset("tiny-qwen3moe"), {type, 9}, dir.file("m.gguf"));
    const auto m = Model::load(dir.file("m.gguf"));
    const ModelConfig& c = m->config();
    ASSERT_TRUE(c.is_moe(0) && !c.is_moe(1) && c.is_moe(2));
    if (type == DType::Q8_0) {
      ASSERT_EQ(m->weights().layers[0].gate_exps.shape[1] % 16, 0);
      EXPECT_EQ(m->weights().layers[0].gate_exps.type, ops::active_kernels().q8_0_layout);
    }
    ThreadPool pool(2);
    Forward fwd(*m, &pool);
    std::vector<int32_t> ids;
    for (int i = 0; i < 15; ++i) ids.push_back(1 + (i * 37) % 500);
    const std::vector<float> prefill = run_all(fwd, c, ids, false), decoded = run_all(fwd, c, ids, true);
    ASSERT_EQ(prefill.size(), decoded.size());
    EXPECT_LT(rel_diff(decoded, prefill), type == DType::F32 ? 1e-5f : 1e-3f);

    // Two sequences in one call (their tokens share the experts' products) = each alone.
    const std::vector<int32_t> other{1, 400, 33, 7, 250};
    const KvCacheShape shape = cache_shape(c);
    KvCache a(shape), b(shape);
    const ForwardItem both[] = {{&a, ids, ForwardItem::Logits::All}, {&b, other, ForwardItem::Logits::All}};
    std::vector<std::vector<float>> out;
    fwd.run(both, out);
    EXPECT_LT(rel_diff(out[0], prefill), 1e-5f);
    EXPECT_LT(rel_diff(out[1], run_all(fwd, c, other, false)), 1e-5f);

    // Repacking changes the layout, not the model.
    const auto plain = Model::load(dir.file("m.gguf"), {.repack = false});
    Forward plain_fwd(*plain, &pool);
    EXPECT_LT(rel_diff(run_all(plain_fwd, plain->config(), ids, false), prefill), 1e-5f);
  }
}

// Q8_0 experts of 38 rows (not whole groups of 4 or 16) stay Q8_0 at load: interleaving the stack
// as one matrix would make groups that straddle two experts.
TEST(MoeForward, ExpertsOfPartialGroupsAreNotInterleaved) {
  test::TempDir dir;
  ModelConfig cfg = model_preset("tiny-qwen3moe");
  set_experts(cfg, 0, 0, 38);  // down_exps rows of 38 columns fall back to F16 (maker_matrix_type)
  write_random_gguf(cfg, {DType::Q8_0, 4}, dir.file("m.gguf"));
  const auto m = Model::load(dir.file("m.gguf"));
  const auto plain = Model::load(dir.file("m.gguf"), {.repack = false});
  EXPECT_EQ(m->weights().layers[0].gate_exps.type, DType::Q8_0);
  EXPECT_EQ(m->weights().layers[0].down_exps.type, DType::F16);
  ASSERT_EQ(m->weights().layers[0].wq.shape[0] % 16, 0);
  EXPECT_EQ(m->weights().layers[0].wq.type, ops::active_kernels().q8_0_layout);
  ThreadPool pool(2);
  Forward fwd(*m, &pool), plain_fwd(*plain, &pool);
  const std::vector<int32_t> ids{1, 17, 300, 42, 9, 77};
  EXPECT_LT(rel_diff(run_all(fwd, m->config(), ids, false), run_all(plain_fwd, plain->config(), ids, false)), 1e-5f);
}

TEST(MoePresets, ReadBackInBothFormats) {
  test::TempDir dir;
  const ModelConfig cfg = model_preset("tiny-qwen3moe");
  write_random_gguf(cfg, {DType::F32, 3}, dir.file("m.gguf"));
  write_random_hf(cfg, {DType::F32, 3}, dir.file("hf"));
  for (const std::string& path : {dir.file("m.gguf"), dir.file("hf")}) {
    SCOPED_TRACE(path);
    const auto m = Model::load(path);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.arch, "qwen3moe");
    EXPECT_EQ(c.n_expert, 8);
    EXPECT_EQ(c.n_expert_used, 2);
    EXPECT_EQ(c.n_ff_expert, 32);
    EXPECT_TRUE(c.expert_weights_norm);
    EXPECT_TRUE(c.qk_norm);
    for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(c.is_moe(l), cfg.is_moe(l)) << l;
    EXPECT_TRUE(m->warnings().empty()) << m->warnings().front();
    EXPECT_EQ(m->weights().layers[0].gate_exps.shape, (std::vector<int64_t>{8, 32, 64}));
    EXPECT_EQ(m->weights().layers[0].down_exps.shape, (std::vector<int64_t>{8, 64, 32}));
    EXPECT_TRUE(m->weights().layers[0].w_gate.empty());
    EXPECT_FALSE(m->weights().layers[1].w_gate.empty());
    // Active bytes: all but 6 of 8 experts in the two MoE layers.
    const size_t experts = m->expert_weight_bytes();
    EXPECT_EQ(experts, 2u * 3 * 8 * 32 * 64 * 4);
    EXPECT_EQ(m->active_weight_bytes(), m->weight_bytes() - experts + experts / 4);
  }
  // The GGUF and the HF copy are the same model: the same stacked expert weights.
  const auto g = Model::load(dir.file("m.gguf"), {.repack = false});
  const auto h = Model::load(dir.file("hf"), {.repack = false});
  const TensorView& ge = g->weights().layers[2].down_exps;
  const TensorView& he = h->weights().layers[2].down_exps;
  ASSERT_EQ(ge.nbytes(), he.nbytes());
  EXPECT_EQ(std::memcmp(ge.data, he.data, ge.nbytes()), 0);
}

TEST(MoePresets, RealShapeAndOverrides) {
  ModelConfig c = model_preset("qwen3-30b-a3b");
  EXPECT_EQ(c.n_layers, 48);
  for (int l = 0; l < c.n_layers; ++l) ASSERT_TRUE(c.is_moe(l)) << l;
  EXPECT_EQ(c.n_expert, 128);
  EXPECT_EQ(c.n_expert_used, 8);
  EXPECT_EQ(c.n_ff_expert, 768);
  set_layer_count(c, 4);
  EXPECT_EQ(c.layers.size(), 4u);
  EXPECT_TRUE(c.is_moe(3));
  set_experts(c, 4, 0, 64);
  EXPECT_EQ(c.n_expert, 4);
  EXPECT_EQ(c.n_expert_used, 4);  // clamped to the expert count
  EXPECT_EQ(c.n_ff_expert, 64);
  c.n_expert_used = 5;
  EXPECT_THROW(c.validate(), Error);
  ModelConfig tiny = model_preset("tiny-qwen3moe");
  set_layer_count(tiny, 5);  // the dense layer stays dense; added layers are MoE
  EXPECT_TRUE(tiny.is_moe(0) && !tiny.is_moe(1) && tiny.is_moe(3) && tiny.is_moe(4));
  ModelConfig dense = model_preset("tiny-qwen3");
  EXPECT_THROW(set_experts(dense, 4, 0, 0), Error);
}

// transformers' rule: layer l is MoE unless in mlp_only_layers or (l + 1) % decoder_sparse_step.
TEST(MoePresets, HfSparseStepAndMlpOnlyLayers) {
  test::TempDir dir;
  ModelConfig cfg = model_preset("tiny-qwen3moe");
  set_layer_count(cfg, 2);
  cfg.set_ffn_kinds(1, {0});  // layer 0 dense, layer 1 MoE
  const std::string hf = dir.file("hf");
  write_random_hf(cfg, {DType::F32, 3}, hf);
  const std::string cfg_path = hf + "/config.json";
  nlohmann::json j;
  std::ifstream(cfg_path) >> j;
  EXPECT_EQ(j["mlp_only_layers"], nlohmann::json::array({0}));
  auto load_with = [&](const nlohmann::json& v) {
    std::ofstream(cfg_path, std::ios::trunc) << v.dump(1);
    return Model::load(hf);
  };
  nlohmann::json v = j;
  v["decoder_sparse_step"] = 2;
  v["mlp_only_layers"] = nlohmann::json::array();
  auto m = load_with(v);
  EXPECT_TRUE(!m->config().is_moe(0) && m->config().is_moe(1));
  v.erase("norm_topk_prob");  // transformers' default: not renormalised
  EXPECT_FALSE(load_with(v)->config().expert_weights_norm);
  v = j;
  v["mlp_only_layers"] = {0, 1};  // layer 1 dense: its dense MLP is missing
  EXPECT_THROW(load_with(v), Error);
  v["mlp_only_layers"] = {5};
  EXPECT_THROW(load_with(v), Error);
  v = j;
  v["num_experts"] = 0;  // transformers: every layer dense, so layer 1's dense MLP is looked for
  try {
    load_with(v);
    ADD_FAILURE() << "num_experts 0 loaded a checkpoint without layer 1's dense MLP";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.gate_proj.weight"), std::string::npos) << e.what();
  }
  v = j;
  v["num_experts_per_tok"] = 9;  // more than num_experts
  EXPECT_THROW(load_with(v), Error);
  v = j;
  v.erase("moe_intermediate_size");
  EXPECT_THROW(load_with(v), Error);
}

}  // namespace
}  // namespace triattn
