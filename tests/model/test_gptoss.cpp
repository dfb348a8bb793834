// gpt-oss (model/arch.cpp gpt_oss_*): its table entry and presets, the attention sinks in the
// attention kernels of every ISA against a direct double-precision softmax over [scores, sink],
// the clamped SwiGLU, YaRN's truncate switch, and the tiny preset read back from GGUF and from
// HF in every expert layout (f32, bf16, MXFP4 blocks) as the same model. Logits against the
// published definition: tests/reference/test_gptoss_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/temp_dir.h"
#include "forward_test_util.h"
#include "core/half.h"
#include "model/arch.h"
#include "ops/attention.h"
#include "model/forward.h"
#include "model/kv_shape.h"
#include "model/maker.h"
#include "model/model.h"
#include "model/moe.h"
#include "ops/ops.h"

namespace triattn {
namespace {

using test::rel_diff;
using test::run_all;

TEST(GptOssArch, TableAndRealShape) {
  const ArchInfo* a = find_arch("gpt-oss");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(find_arch_hf("gpt_oss"), a);
  EXPECT_EQ(a->hf_class, "GptOssForCausalLM");
  auto names = [&](TensorRole r) {
    for (const ArchTensor& t : a->tensors)
      if (t.role == r) return tensor_name(t, TensorFormat::Gguf, 3) + " | " + tensor_name(t, TensorFormat::Hf, 3);
    return std::string("missing");
  };
  EXPECT_EQ(names(TensorRole::Sinks), "blk.3.attn_sinks.weight | model.layers.3.self_attn.sinks");
  EXPECT_EQ(names(TensorRole::FfnNorm), "blk.3.post_attention_norm.weight | model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(names(TensorRole::Bo), "blk.3.attn_output.bias | model.layers.3.self_attn.o_proj.bias");
  EXPECT_EQ(names(TensorRole::RouterBias), "blk.3.ffn_gate_inp.bias | model.layers.3.mlp.router.bias");
  EXPECT_EQ(names(TensorRole::UpExps), "blk.3.ffn_up_exps.weight | model.layers.3.mlp.experts.gate_up_proj");
  EXPECT_EQ(names(TensorRole::DownExpsBias), "blk.3.ffn_down_exps.bias | model.layers.3.mlp.experts.down_proj_bias");

  const ModelConfig c = model_preset("gpt-oss-20b");
  EXPECT_EQ(c.n_layers, 24);
  EXPECT_EQ(c.n_embd, 2880);
  EXPECT_EQ(c.n_heads, 64);
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_expert, 32);
  EXPECT_EQ(c.n_expert_used, 4);
  EXPECT_EQ(c.n_ff_expert, 2880);
  EXPECT_EQ(c.vocab_size, 201088);
  EXPECT_EQ(c.rope_theta, 150000.0f);
  EXPECT_TRUE(c.qkv_bias && c.attn_out_bias && c.attn_sinks && c.moe_bias && c.expert_weights_norm);
  EXPECT_EQ(c.activation, Activation::SwigluOai);
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_TRUE(c.is_moe(l)) << l;
    EXPECT_EQ(c.is_sliding(l), l % 2 == 0) << l;  // the first layer slides
    if (c.is_sliding(l)) {
      EXPECT_EQ(c.layer(l).window, 128);
    }
  }
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(c.rope_scaling.factor, 32.0f);
  EXPECT_EQ(c.rope_scaling.original_context, 4096);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_NEAR(c.rope_attn_factor(), 0.1 * std::log(32.0) + 1, 1e-6);
}

// YaRN's ramp ends: truncate rounds them out to whole bands (transformers' default), gpt-oss
// keeps them fractional; the bands outside the ramp are the same either way.
TEST(GptOssArch, YarnTruncateMovesOnlyTheRamp) {
  ModelConfig c = model_preset("gpt-oss-20b");
  const std::vector<float> exact = c.rope_freqs();
  c.rope_scaling.truncate = true;
  const std::vector<float> rounded = c.rope_freqs();
  ASSERT_EQ(exact.size(), 32u);
  int differ = 0;
  for (size_t f = 0; f < exact.size(); ++f) differ += exact[f] != rounded[f];
  EXPECT_GT(differ, 0);
  EXPECT_EQ(exact[0], rounded[0]);      // extrapolated: theta^0
  EXPECT_EQ(exact[31], rounded[31]);    // interpolated: divided by the factor
  EXPECT_FLOAT_EQ(exact[31], static_cast<float>(std::pow(150000.0, -62.0 / 64) / 32));
}

TEST(GptOssFfn, ClampedSwiglu) {
  ModelConfig c = model_preset("tiny-gptoss");
  const std::vector<float> gate{-3.0f, 0.5f, 9.0f, 7.0f, 2.0f}, up{1.0f, -8.0f, 0.25f, 20.0f, -1.0f};
  std::vector<float> out = gate;
  ffn_activation(c, out.data(), up.data(), 1, static_cast<int64_t>(out.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = std::min(static_cast<double>(gate[i]), 7.0), u = std::clamp(static_cast<double>(up[i]), -7.0, 7.0);
    EXPECT_NEAR(out[i], (u + 1) * g / (1 + std::exp(-1.702 * g)), 1e-5) << i;
  }
}

// attend() with sinks, on every ISA, F32 and F16 keys, with and without a window, against the
// softmax over [scores, sink] computed directly in double.
TEST(GptOssAttention, SinksOnEveryIsa) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int d : {16, 64})
    for (DType kv : {DType::F32, DType::F16})
      for (int window : {0, 5})
        for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{70}, int64_t{150}, kChunkKeys + 100}) {  // the last: chunks
          std::vector<float> k(static_cast<size_t>(n * d)), v(k.size());
          for (float& x : k) x = nd(rng);
          for (float& x : v) x = nd(rng);
          std::vector<uint16_t> kh(k.size()), vh(v.size());
          for (size_t i = 0; i < k.size(); ++i) kh[i] = f32_to_f16(k[i]), vh[i] = f32_to_f16(v[i]);
          if (kv == DType::F16)
            for (size_t i = 0; i < k.size(); ++i) k[i] = f16_to_f32(kh[i]), v[i] = f16_to_f32(vh[i]);
          std::vector<int32_t> pos(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(i);
          const AttentionStream s{kv, kv == DType::F16 ? static_cast<const void*>(kh.data()) : k.data(),
                                  kv == DType::F16 ? static_cast<const void*>(vh.data()) : v.data(), pos.data(), n, d,
                                  window, 0, nullptr};
          const int n_q = 3;
          std::vector<std::vector<float>> q(n_q, std::vector<float>(static_cast<size_t>(d)));
          for (auto& qq : q)
            for (float& x : qq) x = nd(rng);
          const std::vector<int32_t> qpos{static_cast<int32_t>(n - 1), static_cast<int32_t>(n / 2), 0};
          const std::vector<float> sinks{0.3f, 2.5f, -1.0f};
          AttentionStream with_sinks = s;
          with_sinks.sinks = sinks.data();
          const float scale = 1.0f / std::sqrt(static_cast<float>(d));
          // Expected: weights p_i = exp(s_i) / (sum_j exp(s_j) + exp(sink)), visible keys only.
          std::vector<std::vector<double>> want(n_q, std::vector<double>(static_cast<size_t>(d), 0.0)),
              want_w(n_q, std::vector<double>(static_cast<size_t>(n), 0.0));
          for (int j = 0; j < n_q; ++j) {
            double mx = sinks[j];
            std::vector<double> sc(static_cast<size_t>(n), -INFINITY);
            for (int64_t i = 0; i < n; ++i) {
              if (pos[i] > qpos[j] || (window > 0 && qpos[j] - pos[i] >= window)) continue;
              double dot = 0;
              for (int e = 0; e < d; ++e) dot += static_cast<double>(q[j][e]) * k[i * d + e];
              sc[i] = scale * dot;
              mx = std::max(mx, sc[i]);
            }
            double den = std::exp(sinks[j] - mx);
            for (int64_t i = 0; i < n; ++i) den += std::exp(sc[i] - mx);
            for (int64_t i = 0; i < n; ++i) {
              want_w[j][i] = std::exp(sc[i] - mx) / den;
              for (int e = 0; e < d; ++e) want[j][e] += want_w[j][i] * v[i * d + e];
            }
          }
          for (ops::Isa isa : ops::supported_isas()) {
            ops::set_isa_for_testing(isa);
            std::vector<std::vector<float>> out(n_q, std::vector<float>(static_cast<size_t>(d)));
            std::vector<float*> outs;
            std::vector<const float*> qs;
            for (int j = 0; j < n_q; ++j) outs.push_back(out[j].data()), qs.push_back(q[j].data());
            std::vector<float> w(static_cast<size_t>(n_q * n));
            attend(qs.data(), qpos.data(), n_q, with_sinks, scale, outs.data(), w.data());
            for (int j = 0; j < n_q; ++j) {
              for (int e = 0; e < d; ++e)
                ASSERT_NEAR(out[j][e], want[j][e], 2e-5) << ops::isa_name(isa) << " d " << d << " n " << n << " q " << j;
              for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(w[j * n + i], want_w[j][i], 2e-6) << ops::isa_name(isa);
            }
          }
          ops::set_isa_for_testing(ops::supported_isas().back());
        }
}

// The tiny preset from GGUF and from HF, experts in f32, bf16 and MXFP4: each pair is one model
// (identical weights after load, so identical logits); prefill equals decode; and the MXFP4
// files are a different model from the f32 ones, but a close one.
TEST(GptOssPresets, GgufAndHfCopiesAreOneModelInEveryExpertLayout) {
  test::TempDir dir;
  const ModelConfig cfg = model_preset("tiny-gptoss");
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(3 + (i * 53) % 500);
  ThreadPool pool(2);
  std::vector<float> f32_logits;
  for (DType experts : {DType::F32, DType::BF16, DType::MXFP4}) {
    SCOPED_TRACE(std::string(dtype_name(experts)));
    MakerOptions opt{DType::F32, 11};
    opt.expert_type = experts;
    const std::string tag(dtype_name(experts));
    write_random_gguf(cfg, opt, dir.file(tag + ".gguf"));
    write_random_hf(cfg, opt, dir.file(tag + "-hf"));
    const auto g = Model::load(dir.file(tag + ".gguf"));
    const auto h = Model::load(dir.file(tag + "-hf"));
    for (const auto* m : {g.get(), h.get()}) {
      const ModelConfig& c = m->config();
      EXPECT_EQ(c.arch, "gpt-oss");
      EXPECT_TRUE(c.attn_sinks && c.moe_bias && c.attn_out_bias);
      EXPECT_FALSE(c.rope_scaling.truncate);
      EXPECT_EQ(c.rope_scaling.original_context, 512);
      for (int l = 0; l < c.n_layers; ++l) EXPECT_EQ(c.is_sliding(l), l % 2 == 0);
      EXPECT_EQ(m->weights().layers[1].gate_exps.type, experts);
      EXPECT_TRUE(m->warnings().empty()) << m->warnings().front();
    }
    for (int l = 0; l < cfg.n_layers; ++l)
      for (auto slot : {&LayerWeights::gate_exps, &LayerWeights::up_exps, &LayerWeights::down_exps,
                        &LayerWeights::gate_exps_bias, &LayerWeights::up_exps_bias, &LayerWeights::down_exps_bias,
                        &LayerWeights::sinks}) {
        const TensorView& a = g->weights().layers[l].*slot;
        const TensorView& b = h->weights().layers[l].*slot;
        ASSERT_EQ(a.shape, b.shape) << l;
        ASSERT_EQ(a.nbytes(), b.nbytes()) << l;
        EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0) << "layer " << l;
      }
    Forward gf(*g, &pool), hf(*h, &pool);
    const std::vector<float> gl = run_all(gf, g->config(), ids, false), hl = run_all(hf, h->config(), ids, false);
    EXPECT_EQ(gl, hl);
    EXPECT_LT(rel_diff(run_all(gf, g->config(), ids, true), gl), 1e-5f);  // decode: one token a step
    if (experts == DType::F32) f32_logits = gl;
    else EXPECT_LT(rel_diff(gl, f32_logits), experts == DType::BF16 ? 2e-2f : 0.5f);
  }
}

}  // namespace
}  // namespace triattn
