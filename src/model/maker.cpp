// Random-weight model maker (see maker.h). The model is defined in HF layout by
// hf_value(seed, name, row, col); each format's writer only maps names, layouts and types.
#include "model/maker.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "model/arch.h"
#include "ops/mxfp4_layout.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn {

namespace {

// ---- presets -------------------------------------------------------------------------

ModelConfig base(std::string arch, std::string name, int layers, int embd, int heads, int kv_heads,
                 int head_dim, int ff, int vocab, int64_t ctx, float theta, float eps) {
  ModelConfig c;
  c.arch = std::move(arch);
  c.name = std::move(name);
  c.n_layers = layers;
  c.n_embd = embd;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.n_ff = ff;
  c.vocab_size = vocab;
  c.context_length = ctx;
  c.rope_theta = theta;
  c.rms_eps = eps;
  return c;
}

// ---- deterministic weights -------------------------------------------------------------

uint64_t mix64(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {  // stable across platforms, unlike std::hash
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

enum class Kind { Matrix, Norm, Bias };

struct TensorSpec {
  std::string hf, gguf;
  std::vector<int64_t> shape;  // HF [out, in] (1-D for norms and biases; experts [n_expert, out, in])
  Kind kind;
  int rope_head_dim = 0;  // > 0: q/k rows (or a per-head norm) to permute in llama GGUFs
  // Experts: the HF name of each expert's [out, in] matrix; the GGUF tensor stacks them.
  std::vector<std::string> hf_experts;
  bool gguf_f32 = false;  // kept f32 in GGUF whatever the weight type (llama.cpp's router)
  // The name the values are drawn from when it is not `hf`: fused HF tensors (gpt-oss's
  // gate_up_proj) hold several roles under one name, so their values are keyed by the GGUF name.
  std::string seed;
  TensorRole role = TensorRole::TokEmbd;
  // Gated DeltaNet tensors: llama.cpp's converter reorders value heads from HF's grouped order
  // to tiled (GGUF head j reads key head j % n_k); see gguf_value_head.
  enum class VHeads { None, Rows, Cols } v_heads = VHeads::None;
  int64_t v_first = 0;    // Rows: the first value-head row (in_proj_qkv's and the conv's v part)
  int v_block = 1;        // rows (Rows) or columns (Cols) per value head
  int v_n_k = 1, v_per_k = 1;
  bool neg_exp = false;   // A: GGUF stores -exp(A_log)
};

// HF value head of GGUF (tiled) value head j: j = r * n_k + k holds HF head k * per_k + r.
int64_t gguf_value_head(int64_t j, int n_k, int per_k) { return (j % n_k) * per_k + j / n_k; }

// The HF row (or column) index behind GGUF index i of a DeltaNet tensor.
int64_t hf_index_for_gguf(const TensorSpec& t, int64_t i) {
  if (i < t.v_first) return i;
  const int64_t j = (i - t.v_first) / t.v_block, within = (i - t.v_first) % t.v_block;
  return t.v_first + gguf_value_head(j, t.v_n_k, t.v_per_k) * t.v_block + within;
}

// The tensors an HF file holds for `t`: t itself, or each expert's [out, in] matrix of a stack.
std::vector<TensorSpec> hf_tensors(const TensorSpec& t) {
  if (t.hf_experts.empty()) return {t};
  std::vector<TensorSpec> parts;
  for (const std::string& name : t.hf_experts)
    parts.push_back(TensorSpec{name, t.gguf, {t.shape[1], t.shape[2]}, t.kind, 0, {}, false, {}, t.role});
  return parts;
}

// Row `row` of HF tensor `name`: normal-ish noise of std 0.02 for matrices and biases (sum of
// four uniforms), and norms 1 + k/128 with |k| <= 16, exactly representable in f16 and bf16
// so every format stores the same values.
void hf_row(uint64_t seed, const TensorSpec& t, int64_t row, float* dst) {
  const int64_t cols = t.shape.back();
  uint64_t s = mix64(seed ^ mix64(fnv1a(t.seed.empty() ? t.hf : t.seed) + static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ull));
  for (int64_t c = 0; c < cols; ++c) {
    s += 0x9e3779b97f4a7c15ull;
    const uint64_t r = mix64(s);
    if (t.kind == Kind::Norm) {
      dst[c] = 1.0f + static_cast<float>(static_cast<int>(r % 33) - 16) / 128.0f;
      continue;
    }
    const float sum = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
    // Irwin-Hall(4) over [0, 65535]: mean 2*65535, std 65535/sqrt(3).
    dst[c] = (sum / 65535.0f - 2.0f) * 1.7320508f * 0.02f;
  }
}

// llama.cpp's converter reorders q/k rows within each head from HF's halves layout to
// interleaved pairs: new row 2i = old row i, new row 2i+1 = old row i + d/2.
int64_t hf_row_for_gguf_row(int64_t r, int d) {
  const int64_t head = r / d, j = r % d;
  return head * d + (j % 2 == 0 ? j / 2 : j / 2 + d / 2);
}

// The model's tensors in file order, named by the architecture table (model/arch.h).
std::vector<TensorSpec> model_tensors(const ModelConfig& c) {
  const ArchInfo& arch = arch_info(c.arch);
  // q/k rows (and per-head norms) of GGUFs whose converter interleaves them; others keep HF's order.
  const int hd = arch.traits.gguf_interleaved_rope ? c.head_dim : 0;
  auto spec = [&](const ArchTensor& a, int layer) {
    const TensorRole r = a.role;
    const Kind kind = role_is_norm(r) ? Kind::Norm : role_is_vector(r) ? Kind::Bias : Kind::Matrix;
    const bool rope_rows = r == TensorRole::Wq || r == TensorRole::Wk || r == TensorRole::Bq || r == TensorRole::Bk ||
                           r == TensorRole::QNorm || r == TensorRole::KNorm;
    TensorSpec s{hf_checkpoint_name(arch, tensor_name(a, TensorFormat::Hf, layer)),
                 tensor_name(a, TensorFormat::Gguf, layer), role_shape(r, c, layer), kind, rope_rows ? hd : 0, {},
                 r == TensorRole::Router, {}, r};
    if (r == TensorRole::DnNorm) s.kind = Kind::Norm;  // a plain weight near 1, not zero-centred
    if (r == TensorRole::LayerScale) s.kind = Kind::Norm;  // a scale near 1: every layer still counts
    using V = TensorSpec::VHeads;
    const DeltaNetConfig& d = c.delta;
    if (d.n_k_heads > 0 && d.n_v_heads > d.n_k_heads) {
      s.v_n_k = d.n_k_heads;
      s.v_per_k = d.n_v_heads / d.n_k_heads;
      switch (r) {
        case TensorRole::DnQkv: case TensorRole::DnConv:
          s.v_heads = V::Rows, s.v_first = 2 * d.key_dim(), s.v_block = d.head_v_dim; break;
        case TensorRole::DnZ: s.v_heads = V::Rows, s.v_block = d.head_v_dim; break;
        case TensorRole::DnBeta: case TensorRole::DnAlpha: case TensorRole::DnDtBias: case TensorRole::DnA:
          s.v_heads = V::Rows; break;
        case TensorRole::DnOut: s.v_heads = V::Cols, s.v_block = d.head_v_dim; break;
        default: break;
      }
    }
    s.neg_exp = r == TensorRole::DnA;
    const bool fused = arch.traits.hf_fused_experts && (role_is_expert(r) || role_is_expert_bias(r));
    if (fused) s.seed = s.gguf;
    if (role_is_expert(r))
      for (int e = 0; e < c.n_expert; ++e)
        s.hf_experts.push_back(fused ? s.gguf + "#" + std::to_string(e)
                                     : hf_checkpoint_name(arch, tensor_name(a, TensorFormat::Hf, layer, e)));
    return s;
  };
  std::vector<TensorSpec> t;
  bool layers_done = false;
  for (size_t i = 0; i < arch.tensors.size(); ++i) {
    const ArchTensor& a = arch.tensors[i];
    if (!role_is_per_layer(a.role)) {
      if (tensor_needed(a, c)) t.push_back(spec(a, -1));
      continue;
    }
    if (layers_done) continue;
    layers_done = true;  // every per-layer tensor, layer by layer
    for (int l = 0; l < c.n_layers; ++l)
      for (const ArchTensor& b : arch.tensors)
        if (role_is_per_layer(b.role) && tensor_needed(b, c, l)) t.push_back(spec(b, l));
  }
  return t;
}

// 1-D vectors are one row; the permutation then acts on element positions within the row.
void hf_vector_permuted(uint64_t seed, const TensorSpec& t, float* dst) {
  std::vector<float> v(static_cast<size_t>(t.shape[0]));
  hf_row(seed, t, 0, v.data());
  for (int64_t i = 0; i < t.shape[0]; ++i) dst[i] = v[static_cast<size_t>(hf_row_for_gguf_row(i, t.rope_head_dim))];
}

// ---- synthetic vocabulary ----------------------------------------------------------------

constexpr int kFirstFiller = 3 + 256;

std::vector<std::string> vocab_pieces(int n) {
  if (n < kFirstFiller) fail("model maker: vocab_size ", n, " is below the ", kFirstFiller, " special and byte tokens");
  std::vector<std::string> p = {"<unk>", "<s>", "</s>"};
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) p.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
  for (int i = kFirstFiller; i < n; ++i) p.push_back("\xe2\x96\x81t" + std::to_string(i));  // "▁t259"
  return p;
}

// float -> the double with the shortest decimal that reads back as the same float
// (so config.json says 1e-06, not 9.999999974752427e-07).
double clean(float f) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
}

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Llama3: return "llama3";
    case RopeScalingType::Yarn: return "yarn";
    default: return "none";
  }
}

// Layer index of a "blk.N.…" tensor name, -1 for the others.
int gguf_layer(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) fail(p.string(), ": write failed");
}

// gpt-oss's HF experts (model/loader_hf_experts.h): for each layer, gate_up_proj with gate and
// up interleaved and down_proj, input major in the weight type, or as MXFP4 *_blocks/*_scales
// (output major, as the released checkpoints); the biases fused the same way. Values come
// from the same specs (and seeds) as the GGUF's ffn_{gate,up,down}_exps, so both files hold
// one model. `specs` are the layer's expert tensors by role.
void add_hf_fused_experts(SafetensorsWriter& st, uint64_t seed, const std::map<TensorRole, TensorSpec>& specs,
                          DType expert_type, DType bias_type) {
  const TensorSpec& gate = specs.at(TensorRole::GateExps);
  const TensorSpec& up = specs.at(TensorRole::UpExps);
  const TensorSpec& down = specs.at(TensorRole::DownExps);
  const int64_t E = gate.shape[0], F = gate.shape[1], D = gate.shape[2];
  const std::vector<TensorSpec> gates = hf_tensors(gate), ups = hf_tensors(up), downs = hf_tensors(down);
  // Output row o of expert e of the fused gate_up (o = 2f + 0 gate, 2f + 1 up) or of down.
  // (The writer calls the fillers in write(), after this returns: everything by value.)
  auto fused_row = [gates, ups, downs, seed](bool is_down, int64_t e, int64_t o, float* dst) {
    if (is_down) return hf_row(seed, downs[static_cast<size_t>(e)], o, dst);
    hf_row(seed, (o % 2 == 0 ? gates : ups)[static_cast<size_t>(e)], o / 2, dst);
  };
  for (bool is_down : {false, true}) {
    const std::string& name = is_down ? down.hf : gate.hf;  // gate and up share "gate_up_proj"
    const int64_t out = is_down ? D : 2 * F, in = is_down ? F : D;
    if (expert_type == DType::MXFP4) {
      const int64_t nb = in / ops::kQK;
      // Row (e, o) quantized once for its blocks and once for its scales (rows in order).
      auto quantized = [fused_row, is_down, in, nb, row = std::vector<float>(static_cast<size_t>(in)),
                        q = std::vector<ops::BlockMxfp4>(static_cast<size_t>(nb)), have = int64_t{-1}](
                           int64_t eo, int64_t out_rows) mutable -> const ops::BlockMxfp4* {
        if (eo != have) {
          fused_row(is_down, eo / out_rows, eo % out_rows, row.data());
          ops::quantize_row(DType::MXFP4, row.data(), q.data(), in);
          have = eo;
        }
        return q.data();
      };
      st.add_rows(name + "_blocks", DType::U8, {E, out, nb, 16},
                  [quantized, nb, out, blocks = std::vector<uint8_t>(static_cast<size_t>(16 * nb)),
                   scales = std::vector<uint8_t>(static_cast<size_t>(nb))](int64_t r, uint8_t* dst) mutable {
                    ops::mxfp4_to_hf(quantized(r / nb, out), nb, blocks.data(), scales.data());
                    std::memcpy(dst, blocks.data() + 16 * (r % nb), 16);
                  });
      st.add_rows(name + "_scales", DType::U8, {E, out, nb},
                  [quantized, nb, out, blocks = std::vector<uint8_t>(static_cast<size_t>(16 * nb))](
                      int64_t r, uint8_t* dst) mutable { ops::mxfp4_to_hf(quantized(r, out), nb, blocks.data(), dst); });
    } else {
      // Input major: row (e, i) holds input i's weight into every output; one expert's matrix
      // is made when its first row is asked for.
      st.add_rows(name, expert_type, {E, in, out},
                  [fused_row, is_down, in, out, expert_type, m = std::vector<float>(), have = int64_t{-1},
                   row = std::vector<float>(static_cast<size_t>(out))](int64_t r, uint8_t* dst) mutable {
                    const int64_t e = r / in, i = r % in;
                    if (e != have) {
                      m.resize(static_cast<size_t>(out * in));
                      for (int64_t o = 0; o < out; ++o) fused_row(is_down, e, o, m.data() + o * in);
                      have = e;
                    }
                    for (int64_t o = 0; o < out; ++o) row[static_cast<size_t>(o)] = m[static_cast<size_t>(o * in + i)];
                    ops::quantize_row(expert_type, row.data(), dst, out);
                  });
    }
    // Biases [E, out]: gate_up's interleaves the gate and up bias rows of each expert.
    const TensorSpec gb = specs.at(TensorRole::GateExpsBias), ub = specs.at(TensorRole::UpExpsBias),
                     db = specs.at(TensorRole::DownExpsBias);
    st.add_rows(is_down ? db.hf : gb.hf, bias_type, {E, out},
                [seed, gb, ub, db, is_down, F, out, bias_type, g = std::vector<float>(static_cast<size_t>(out)),
                 u = std::vector<float>(static_cast<size_t>(F)), row = std::vector<float>(static_cast<size_t>(out))](
                    int64_t e, uint8_t* dst) mutable {
                  if (is_down) {
                    hf_row(seed, db, e, row.data());
                  } else {
                    hf_row(seed, gb, e, g.data());
                    hf_row(seed, ub, e, u.data());
                    for (int64_t f = 0; f < F; ++f) row[2 * f] = g[f], row[2 * f + 1] = u[f];
                  }
                  ops::quantize_row(bias_type, row.data(), dst, out);
                });
  }
}

}  // namespace

std::string maker_default_type(const std::string& format) {
  if (format == "gguf") return "q8_0";
  if (format == "hf") return "f32";
  fail("--format '", format, "' must be gguf or hf");
}

DType maker_matrix_type(const MakerOptions& opt, const std::string& gguf_name, int layer,
                        int n_layers, bool output, int64_t cols) {
  DType want = opt.weight_type;
  if (opt.q4_k_m) {
    const int n = n_layers;
    const bool more_bits = layer >= 0 && (layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2);
    const bool sensitive = gguf_name.find(".attn_v.") != std::string::npos ||
                           gguf_name.find(".ffn_down") != std::string::npos;  // ffn_down_exps too
    want = output || (sensitive && more_bits) ? DType::Q6_K : DType::Q4_K;
  }
  if (cols % block_size(want) == 0) return want;
  return cols % block_size(DType::Q8_0) == 0 ? DType::Q8_0 : DType::F16;
}

ModelConfig model_preset(const std::string& name) {
  ModelConfig c;
  if (name == "qwen3-0.6b") {
    c = base("qwen3", name, 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f);
    c.qk_norm = true;
    c.tied_embeddings = true;
  } else if (name == "qwen3-8b") {
    c = base("qwen3", name, 36, 4096, 32, 8, 128, 12288, 151936, 40960, 1e6f, 1e-6f);
    c.qk_norm = true;
  } else if (name == "llama-3.2-1b") {
    c = base("llama", name, 16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000.0f, 1e-5f);
    c.tied_embeddings = true;
    c.rope_scaling.type = RopeScalingType::Llama3;
    c.rope_scaling.factor = 32.0f;
    c.rope_scaling.low_freq_factor = 1.0f;
    c.rope_scaling.high_freq_factor = 4.0f;
    c.rope_scaling.original_context = 8192;
  } else if (name == "deepseek-r1-distill-qwen-7b") {
    c = base("qwen2", name, 28, 3584, 28, 4, 128, 18944, 152064, 131072, 10000.0f, 1e-6f);
    c.qkv_bias = true;
  } else if (name == "tiny-llama") {
    c = base("llama", name, 2, 64, 4, 2, 16, 128, 512, 512, 10000.0f, 1e-5f);
  } else if (name == "tiny-qwen2") {
    c = base("qwen2", name, 2, 64, 4, 2, 16, 128, 512, 512, 10000.0f, 1e-6f);
    c.qkv_bias = true;
  } else if (name == "tiny-qwen3") {
    c = base("qwen3", name, 2, 64, 4, 2, 16, 128, 512, 512, 1e6f, 1e-6f);
    c.qk_norm = true;
    c.tied_embeddings = true;
  } else if (name == "gemma-2-2b" || name == "tiny-gemma2") {
    c = name == "tiny-gemma2" ? base("gemma2", name, 2, 64, 4, 2, 16, 128, 512, 512, 10000.0f, 1e-6f)
                              : base("gemma2", name, 26, 2304, 8, 4, 256, 9216, 256000, 8192, 10000.0f, 1e-6f);
    c.query_scale = 1.0f / std::sqrt(name == "tiny-gemma2" ? 32.0f : 256.0f);
    c.attn_softcap = name == "tiny-gemma2" ? 0.1f : 50.0f;  // tiny: small enough to bite on random weights
    c.final_softcap = name == "tiny-gemma2" ? 0.2f : 30.0f;
    c.sliding_window = name == "tiny-gemma2" ? 4 : 4096;
    c.tied_embeddings = true;
  } else if (name == "gemma-3-4b" || name == "tiny-gemma3") {
    c = name == "tiny-gemma3" ? base("gemma3", name, 6, 64, 4, 2, 16, 128, 512, 512, 1e6f, 1e-6f)
                              : base("gemma3", name, 34, 2560, 8, 4, 256, 10240, 262208, 131072, 1e6f, 1e-6f);
    c.query_scale = 1.0f / std::sqrt(name == "tiny-gemma3" ? 16.0f : 256.0f);
    c.sliding_window = name == "tiny-gemma3" ? 4 : 1024;
    c.rope_theta_local = 10000.0f;
    c.rope_scaling.type = RopeScalingType::Linear;  // the global (full) layers only
    c.rope_scaling.factor = 8.0f;
    c.tied_embeddings = true;
  } else if (name == "qwen3-30b-a3b" || name == "tiny-qwen3moe") {
    // Qwen3-30B-A3B: every layer MoE, 128 experts of 768, 8 used. tiny: 3 layers, the middle
    // one dense (config.json mlp_only_layers), 8 experts of 32, 2 used.
    const bool tiny = name == "tiny-qwen3moe";
    c = tiny ? base("qwen3moe", name, 3, 64, 4, 2, 16, 128, 512, 512, 1e6f, 1e-6f)
             : base("qwen3moe", name, 48, 2048, 32, 4, 128, 6144, 151936, 40960, 1e6f, 1e-6f);
    c.qk_norm = true;
    c.n_expert = tiny ? 8 : 128;
    c.n_expert_used = tiny ? 2 : 8;
    c.n_ff_expert = tiny ? 32 : 768;
    c.expert_weights_norm = true;
    c.set_ffn_kinds(1, tiny ? std::vector<int>{1} : std::vector<int>{});
  } else if (name == "gpt-oss-20b" || name == "tiny-gptoss") {
    // gpt-oss-20b: every layer MoE (32 experts of 2880, 4 used), layers alternating sliding
    // window 128 and full, YaRN x32 over 4096 (not truncated), biases and sinks (traits).
    // tiny: 4 layers, window 4, 8 experts of 32 (n_ff is the experts' size, as config.json
    // has one intermediate_size), YaRN over an original context of 512, whose ramp (bands 0.6 to
    // 3.0 of 8) is fractional: truncating it would change the model.
    const bool tiny = name == "tiny-gptoss";
    c = tiny ? base("gpt-oss", name, 4, 64, 4, 2, 16, 32, 512, 512, 150000.0f, 1e-5f)
             : base("gpt-oss", name, 24, 2880, 64, 8, 64, 2880, 201088, 131072, 150000.0f, 1e-5f);
    c.n_expert = tiny ? 8 : 32;
    c.n_expert_used = tiny ? 2 : 4;
    c.n_ff_expert = c.n_ff;
    c.expert_weights_norm = true;
    c.sliding_window = tiny ? 4 : 128;
    c.rope_scaling.type = RopeScalingType::Yarn;
    c.rope_scaling.factor = 32.0f;
    c.rope_scaling.original_context = tiny ? 512 : 4096;
    c.rope_scaling.beta_fast = 32.0f;
    c.rope_scaling.beta_slow = 1.0f;
    c.rope_scaling.truncate = false;
    apply_arch_traits(arch_info(c.arch), c);  // the sliding/full pattern first: set_ffn_kinds sizes the layers
    c.set_ffn_kinds(1, {});
  } else if (name == "qwen3.5-9b" || name == "qwen3.6-35b-a3b" || name == "tiny-qwen35" || name == "tiny-qwen35moe") {
    // Qwen3.5-9B: 32 layers (every fourth gated attention, 16/4 heads of 256, a quarter of each
    // rotated), DeltaNet 16 key / 32 value heads of 128. Qwen3.6-35B-A3B: 40 layers, 16/2 heads,
    // 256 experts of 512 (8 used) plus a shared expert of 512. tiny: 8 layers (3 and 7
    // attention), 4/2 heads of 32 (8 rotated), DeltaNet 2 key / 4 value heads of 16; the MoE
    // one with 8 experts of 32 (2 used) and a shared expert of 64.
    const bool tiny = name.rfind("tiny-", 0) == 0, moe = name == "qwen3.6-35b-a3b" || name == "tiny-qwen35moe";
    const std::string arch = moe ? "qwen35moe" : "qwen35";
    if (tiny) c = base(arch, name, 8, 64, 4, 2, 32, 128, 512, 512, 1e7f, 1e-6f);
    else if (moe) c = base(arch, name, 40, 2048, 16, 2, 256, 512, 248320, 262144, 1e7f, 1e-6f);
    else c = base(arch, name, 32, 4096, 16, 4, 256, 12288, 248320, 262144, 1e7f, 1e-6f);
    c.delta = tiny ? DeltaNetConfig{{2, 4, 16, 16}, 4} : DeltaNetConfig{{16, 32, 128, 128}, 4};
    if (moe) {
      c.n_expert = tiny ? 8 : 256;
      c.n_expert_used = tiny ? 2 : 8;
      c.n_ff_expert = tiny ? 32 : 512;
      c.n_ff_shared = tiny ? 64 : 512;
      c.expert_weights_norm = true;
    }
    apply_arch_traits(arch_info(c.arch), c);  // the DeltaNet/attention pattern first: set_ffn_kinds keeps it
    if (moe) c.set_ffn_kinds(1, {});
  } else if (name == "gemma-4-31b" || name == "tiny-gemma4") {
    // Gemma 4 31B: 60 layers, five sliding (window 1024; 32/16 heads of 256) then one full
    // (32/4 heads of 512, V = K, a quarter of the pairs rotating), logits soft-capped at 30.
    // tiny: 8 layers (5 and 7 full), 4 heads, sliding 2 KV heads of 16 (window 8), full 1 KV
    // head of 32 with 4 of its 16 pairs rotating, soft-cap 0.5 (it bites on random weights).
    const bool tiny = name == "tiny-gemma4";
    c = tiny ? base("gemma4", name, 8, 64, 4, 1, 32, 128, 512, 512, 1e6f, 1e-6f)
             : base("gemma4", name, 60, 5376, 32, 4, 512, 21504, 262144, 262144, 1e6f, 1e-6f);
    c.head_dim_swa = tiny ? 16 : 256;
    c.n_kv_heads_swa = tiny ? 2 : 16;
    c.k_eq_v = true;
    c.sliding_window = tiny ? 8 : 1024;
    c.rope_theta_local = 10000.0f;
    c.final_softcap = tiny ? 0.5f : 30.0f;
    c.tied_embeddings = true;
    // Proportional RoPE: frequencies over the whole head, the pairs past the first quarter still.
    c.rope_freq_factors.assign(static_cast<size_t>(c.head_dim / 2), std::numeric_limits<float>::infinity());
    std::fill_n(c.rope_freq_factors.begin(), c.head_dim / 8, 1.0f);
  } else {
    fail("unknown model preset '", name,
         "' (known: qwen3-0.6b, qwen3-8b, llama-3.2-1b, deepseek-r1-distill-qwen-7b, gemma-2-2b, gemma-3-4b, "
         "qwen3-30b-a3b, gpt-oss-20b, qwen3.5-9b, qwen3.6-35b-a3b, gemma-4-31b, tiny-llama, tiny-qwen2, tiny-qwen3, tiny-gemma2, "
         "tiny-gemma3, tiny-qwen3moe, tiny-gptoss, tiny-qwen35, tiny-qwen35moe, tiny-gemma4)");
  }
  apply_arch_traits(arch_info(c.arch), c);
  return c;
}

void set_layer_count(ModelConfig& c, int n_layers) {
  std::vector<int> dense;  // a MoE preset's dense layers stay dense; added layers are MoE
  for (int l = 0; l < std::min(c.n_layers, n_layers); ++l)
    if (!c.is_moe(l)) dense.push_back(l);
  c.n_layers = n_layers;
  c.layers.clear();
  apply_arch_traits(arch_info(c.arch), c);
  if (c.n_expert > 0) c.set_ffn_kinds(1, dense);
}

void set_experts(ModelConfig& c, int n_expert, int n_used, int n_ff) {
  if (!c.has_moe_layers())
    fail("--experts, --experts-used and --expert-ff apply to mixture-of-experts presets; '", c.name, "' has none");
  if (n_expert > 0) c.n_expert = n_expert;
  if (n_used > 0) c.n_expert_used = n_used;
  else c.n_expert_used = std::min(c.n_expert_used, c.n_expert);
  if (n_ff > 0) c.n_ff_expert = n_ff;
  if (arch_info(c.arch).traits.hf_fused_experts) c.n_ff = c.n_ff_expert;  // gpt-oss: one intermediate_size
}

namespace {
// Per rotary band, the divisor that turns the unscaled frequency into the llama3-scaled one
// (1 for short wavelengths, the factor for long ones, a blend between): what llama.cpp's
// GGUFs carry in rope_freqs.weight and our loader applies (ModelConfig::rope_freq_factors).
std::vector<float> llama3_freq_factors(const ModelConfig& cfg) {
  ModelConfig plain = cfg;
  plain.rope_scaling = RopeScaling{};
  plain.rope_freq_factors.clear();
  const std::vector<float> base = plain.rope_freqs(), scaled = cfg.rope_freqs();
  std::vector<float> factors(base.size());
  for (size_t f = 0; f < base.size(); ++f) factors[f] = base[f] / scaled[f];
  return factors;
}
}  // namespace

namespace {
// llama.cpp's qwen35 keys: the DeltaNet sizes (its names come from Mamba's), the attention
// layer interval, and the M-RoPE sections (text uses only the first; they sum to the rotated pairs).
void write_gguf_delta_keys(GgufWriter& w, const ModelConfig& cfg) {
  const std::string a = cfg.arch + ".";
  const DeltaNetConfig& d = cfg.delta;
  w.set_u32(a + "ssm.conv_kernel", static_cast<uint32_t>(d.conv_kernel));
  w.set_u32(a + "ssm.state_size", static_cast<uint32_t>(d.head_k_dim));
  w.set_u32(a + "ssm.group_count", static_cast<uint32_t>(d.n_k_heads));
  w.set_u32(a + "ssm.time_step_rank", static_cast<uint32_t>(d.n_v_heads));
  w.set_u32(a + "ssm.inner_size", static_cast<uint32_t>(d.value_dim()));
  int interval = 0;
  while (interval < cfg.n_layers && cfg.is_delta(interval)) ++interval;
  w.set_u32(a + "full_attention_interval", static_cast<uint32_t>(interval + 1));
  const int pairs = cfg.rotary_dims() / 2, hw = pairs * 11 / 32;  // Qwen3.5: [11, 11, 10] of 32
  w.set_i32_array(a + "rope.dimension_sections", {hw, hw, pairs - 2 * hw, 0});
  if (cfg.n_ff_shared > 0) w.set_u32(a + "expert_shared_feed_forward_length", static_cast<uint32_t>(cfg.n_ff_shared));
}
}  // namespace

namespace {
// llama.cpp's gemma4 keys: which layers slide, the KV heads of each layer, the sliding layers'
// head size and RoPE dimensions (key_length and rope.dimension_count are the full layers').
void write_gguf_per_type_keys(GgufWriter& w, const ModelConfig& cfg) {
  const std::string a = cfg.arch + ".";
  std::vector<int32_t> kv;
  GgufArray pattern{GgufType::BOOL, {}};
  for (int l = 0; l < cfg.n_layers; ++l) {
    kv.push_back(cfg.layer_kv_heads(l));
    pattern.items.push_back(GgufValue{GgufType::BOOL, cfg.is_sliding(l)});
  }
  w.set(a + "attention.sliding_window_pattern", GgufValue{GgufType::ARRAY, std::move(pattern)});
  w.set_i32_array(a + "attention.head_count_kv", kv);
  const int d = cfg.head_dim_swa > 0 ? cfg.head_dim_swa : cfg.head_dim;
  w.set_u32(a + "attention.key_length_swa", static_cast<uint32_t>(d));
  w.set_u32(a + "attention.value_length_swa", static_cast<uint32_t>(d));
  w.set_u32(a + "rope.dimension_count_swa", static_cast<uint32_t>(d));
}
}  // namespace

void write_random_gguf(const ModelConfig& cfg, const MakerOptions& opt, const std::string& path) {
  cfg.validate();
  const std::string a = cfg.arch + ".";
  GgufWriter w;
  w.set_string("general.architecture", cfg.arch);
  w.set_string("general.name", cfg.name.empty() ? "random-" + cfg.arch : cfg.name);
  w.set_u32(a + "block_count", static_cast<uint32_t>(cfg.n_layers));
  w.set_u32(a + "context_length", static_cast<uint32_t>(cfg.context_length));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(cfg.n_embd));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(cfg.n_ff));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(cfg.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(cfg.n_kv_heads));
  w.set_u32(a + "attention.key_length", static_cast<uint32_t>(cfg.head_dim));
  w.set_u32(a + "attention.value_length", static_cast<uint32_t>(cfg.head_dim));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", cfg.rms_eps);
  w.set_f32(a + "rope.freq_base", cfg.rope_theta);
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(cfg.rotary_dims()));
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(cfg.vocab_size));
  if (cfg.sliding_window > 0) w.set_u32(a + "attention.sliding_window", static_cast<uint32_t>(cfg.sliding_window));
  if (cfg.rope_theta_local > 0) w.set_f32(a + "rope.freq_base_swa", cfg.rope_theta_local);
  if (cfg.attn_softcap > 0) w.set_f32(a + "attn_logit_softcapping", cfg.attn_softcap);
  if (cfg.final_softcap > 0) w.set_f32(a + "final_logit_softcapping", cfg.final_softcap);
  if (cfg.query_scale > 0 && arch_info(cfg.arch).traits.query_scale == 0) w.set_f32(a + "attention.scale", cfg.query_scale);
  if (cfg.has_moe_layers()) {  // llama.cpp's keys; the norm flag only where the architecture's default differs
    w.set_u32(a + "expert_count", static_cast<uint32_t>(cfg.n_expert));
    w.set_u32(a + "expert_used_count", static_cast<uint32_t>(cfg.n_expert_used));
    w.set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(cfg.n_ff_expert));
    if (cfg.expert_weights_norm != arch_info(cfg.arch).traits.gguf_expert_weights_norm)
      w.set_bool(a + "expert_weights_norm", cfg.expert_weights_norm);
  }
  if (cfg.has_delta_layers()) write_gguf_delta_keys(w, cfg);
  if (arch_info(cfg.arch).traits.per_type_attention) write_gguf_per_type_keys(w, cfg);
  const RopeScaling& rs = cfg.rope_scaling;
  // llama3 scaling is written as llama.cpp's converter writes it: no scaling keys (llama.cpp
  // refuses the type name "llama3") and the per-band divisors in rope_freqs.weight (below).
  if (rs.type != RopeScalingType::None && rs.type != RopeScalingType::Llama3) {
    w.set_string(a + "rope.scaling.type", rope_scaling_name(rs.type));
    w.set_f32(a + "rope.scaling.factor", rs.factor);
    if (rs.original_context > 0)
      w.set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(rs.original_context));
    if (rs.type == RopeScalingType::Llama3) {
      w.set_f32(a + "rope.scaling.low_freq_factor", rs.low_freq_factor);
      w.set_f32(a + "rope.scaling.high_freq_factor", rs.high_freq_factor);
    }
    if (rs.type == RopeScalingType::Yarn) {
      w.set_f32(a + "rope.scaling.yarn_beta_fast", rs.beta_fast);
      w.set_f32(a + "rope.scaling.yarn_beta_slow", rs.beta_slow);
      if (rs.attn_factor > 0) w.set_f32(a + "rope.scaling.attn_factor", rs.attn_factor);
    }
  }

  const std::vector<std::string> pieces = vocab_pieces(cfg.vocab_size);
  std::vector<float> scores(pieces.size());
  std::vector<int32_t> types(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    scores[i] = i < kFirstFiller ? 0.0f : -static_cast<float>(i);
    types[i] = i < 3 ? 3 : i < kFirstFiller ? 6 : 1;  // control, byte, normal
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", pieces);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);

  const uint64_t seed = opt.seed;
  const bool norm_plus_one = arch_info(cfg.arch).traits.hf_norm_plus_one;
  for (const TensorSpec& t : model_tensors(cfg)) {
    const int64_t cols = t.shape.back();
    if (t.kind != Kind::Matrix) {  // norms and biases: f32 rows (one, or one per expert)
      const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
      std::vector<float> v(static_cast<size_t>(rows * cols));
      if (t.rope_head_dim > 0) {
        hf_vector_permuted(seed, t, v.data());
      } else if (t.v_heads != TensorSpec::VHeads::None && rows == 1) {  // dt_bias, A: one value per head
        std::vector<float> hf(v.size());
        hf_row(seed, t, 0, hf.data());
        for (int64_t i = 0; i < cols; ++i) v[static_cast<size_t>(i)] = hf[static_cast<size_t>(hf_index_for_gguf(t, i))];
      } else {
        for (int64_t r = 0; r < rows; ++r)
          hf_row(seed, t, t.v_heads != TensorSpec::VHeads::None ? hf_index_for_gguf(t, r) : r, v.data() + r * cols);
      }
      if (role_is_norm(t.role) && norm_plus_one)  // HF's w acts as 1 + w; GGUF stores 1 + w
        for (float& x : v) x += 1.0f;
      if (t.neg_exp)
        for (float& x : v) x = -std::exp(x);
      w.add_tensor(t.gguf, DType::F32, t.shape, v.data(), v.size() * sizeof(float));
      continue;
    }
    const bool output = t.gguf == "output.weight" || (cfg.tied_embeddings && t.gguf == "token_embd.weight");
    DType type = t.gguf_f32 ? DType::F32 : maker_matrix_type(opt, t.gguf, gguf_layer(t.gguf), cfg.n_layers, output, cols);
    if (role_is_expert(t.role) && opt.expert_type) {
      type = *opt.expert_type;
      if (cols % block_size(type) != 0)
        fail("model maker: ", t.gguf, " has rows of ", cols, " values, not a whole number of ", dtype_name(type), " blocks");
    }
    // An expert stack's row r is row r % rows of expert r / rows's HF matrix.
    const std::vector<TensorSpec> parts = t.hf_experts.empty() ? std::vector<TensorSpec>{} : hf_tensors(t);
    auto fill = [seed, t, parts, type, cols, row = std::vector<float>(static_cast<size_t>(cols))](
                    int64_t r, uint8_t* dst) mutable {
      if (!parts.empty()) {
        hf_row(seed, parts[static_cast<size_t>(r / t.shape[1])], r % t.shape[1], row.data());
      } else if (t.v_heads == TensorSpec::VHeads::Rows) {
        hf_row(seed, t, hf_index_for_gguf(t, r), row.data());
      } else if (t.v_heads == TensorSpec::VHeads::Cols) {
        std::vector<float> hf(row.size());
        hf_row(seed, t, r, hf.data());
        for (int64_t c = 0; c < cols; ++c) row[static_cast<size_t>(c)] = hf[static_cast<size_t>(hf_index_for_gguf(t, c))];
      } else {
        hf_row(seed, t, t.rope_head_dim > 0 ? hf_row_for_gguf_row(r, t.rope_head_dim) : r, row.data());
      }
      if (type == DType::F32) {
        std::memcpy(dst, row.data(), row.size() * sizeof(float));
      } else {
        ops::quantize_row(type, row.data(), dst, cols);
      }
    };
    w.add_tensor_rows(t.gguf, type, t.shape, std::move(fill));
  }
  if (rs.type == RopeScalingType::Llama3 || !cfg.rope_freq_factors.empty()) {
    std::vector<float> factors = rs.type == RopeScalingType::Llama3 ? llama3_freq_factors(cfg) : cfg.rope_freq_factors;
    for (float& f : factors) f = std::min(f, 1e30f);  // llama.cpp's "does not rotate"
    w.add_tensor("rope_freqs.weight", DType::F32, {static_cast<int64_t>(factors.size())}, factors.data(),
                 factors.size() * sizeof(float));
  }
  w.write(path);
}

namespace {
// The model's sizes as config.json names them.
void add_hf_sizes(const ModelConfig& cfg, nlohmann::ordered_json& c) {
  c["hidden_size"] = cfg.n_embd;
  c["intermediate_size"] = cfg.n_ff;
  c["num_hidden_layers"] = cfg.n_layers;
  c["num_attention_heads"] = cfg.n_heads;
  c["num_key_value_heads"] = cfg.n_kv_heads;
  c["head_dim"] = cfg.head_dim;
  c["vocab_size"] = cfg.vocab_size;
  c["max_position_embeddings"] = cfg.context_length;
  c["rms_norm_eps"] = clean(cfg.rms_eps);
}

// config.json of an architecture released as a multimodal checkpoint (Qwen3.5): the text
// model's fields in "text_config", RoPE in "rope_parameters" (partial rotary, M-RoPE sections),
// layer_types with linear_attention for the DeltaNet layers and their linear_* sizes.
nlohmann::ordered_json hf_text_config_json(const ModelConfig& cfg, const ArchInfo& arch, const std::string& dtype) {
  nlohmann::ordered_json t;
  t["model_type"] = std::string(arch.hf_types.at(1));
  add_hf_sizes(cfg, t);
  t["hidden_act"] = "silu";
  t["attention_bias"] = false;
  t["tie_word_embeddings"] = cfg.tied_embeddings;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int l = 0; l < cfg.n_layers; ++l) types.push_back(cfg.is_delta(l) ? "linear_attention" : "full_attention");
  t["layer_types"] = types;
  const DeltaNetConfig& d = cfg.delta;
  t["linear_conv_kernel_dim"] = d.conv_kernel;
  t["linear_key_head_dim"] = d.head_k_dim;
  t["linear_value_head_dim"] = d.head_v_dim;
  t["linear_num_key_heads"] = d.n_k_heads;
  t["linear_num_value_heads"] = d.n_v_heads;
  const int pairs = cfg.rotary_dims() / 2, hw = pairs * 11 / 32;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", clean(cfg.rope_theta)},
                          {"partial_rotary_factor", clean(static_cast<float>(cfg.rotary_dims()) / cfg.head_dim)},
                          {"mrope_section", {pairs - 2 * hw, hw, hw}},
                          {"mrope_interleaved", true}};
  if (cfg.has_moe_layers()) {
    t["num_experts"] = cfg.n_expert;
    t["num_experts_per_tok"] = cfg.n_expert_used;
    t["moe_intermediate_size"] = cfg.n_ff_expert;
    t["shared_expert_intermediate_size"] = cfg.n_ff_shared;
  }
  t["bos_token_id"] = 1;
  t["eos_token_id"] = 2;
  nlohmann::ordered_json c;
  c["architectures"] = {std::string(arch.hf_class)};
  c["model_type"] = std::string(arch.hf_types.front());
  c["text_config"] = t;
  c["tie_word_embeddings"] = cfg.tied_embeddings;
  c["torch_dtype"] = dtype;
  return c;
}

// config.json of Gemma 4 as released (Gemma4ForConditionalGeneration): the text model in
// "text_config" with head_dim / num_key_value_heads of the sliding layers, global_head_dim /
// num_global_key_value_heads of the full ones, and RoPE per layer type.
nlohmann::ordered_json hf_gemma4_config_json(const ModelConfig& cfg, const ArchInfo& arch, const std::string& dtype) {
  if (!cfg.k_eq_v && cfg.n_kv_heads_swa > 0)
    fail("model maker: gemma4's config.json gives the full layers their own KV heads only with attention_k_eq_v");
  nlohmann::ordered_json t;
  t["model_type"] = std::string(arch.hf_types.at(1));
  add_hf_sizes(cfg, t);
  t["head_dim"] = cfg.head_dim_swa > 0 ? cfg.head_dim_swa : cfg.head_dim;
  t["global_head_dim"] = cfg.head_dim;
  t["num_key_value_heads"] = cfg.n_kv_heads_swa > 0 ? cfg.n_kv_heads_swa : cfg.n_kv_heads;
  t["num_global_key_value_heads"] = cfg.n_kv_heads;
  t["attention_k_eq_v"] = cfg.k_eq_v;
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["sliding_window"] = cfg.sliding_window;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int l = 0; l < cfg.n_layers; ++l) types.push_back(cfg.is_sliding(l) ? "sliding_attention" : "full_attention");
  t["layer_types"] = types;
  int rotated = cfg.head_dim / 2;
  if (!cfg.rope_freq_factors.empty())
    rotated = static_cast<int>(std::count(cfg.rope_freq_factors.begin(), cfg.rope_freq_factors.end(), 1.0f));
  t["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", clean(cfg.rope_theta_local)}}},
      {"full_attention",
       {{"rope_type", "proportional"},
        {"partial_rotary_factor", clean(2.0f * static_cast<float>(rotated) / static_cast<float>(cfg.head_dim))},
        {"rope_theta", clean(cfg.rope_theta)}}}};
  t["final_logit_softcapping"] = cfg.final_softcap > 0 ? nlohmann::ordered_json(clean(cfg.final_softcap)) : nullptr;
  t["num_kv_shared_layers"] = 0;
  t["hidden_size_per_layer_input"] = 0;
  t["enable_moe_block"] = false;
  t["tie_word_embeddings"] = cfg.tied_embeddings;
  t["bos_token_id"] = 1;
  t["eos_token_id"] = 2;
  nlohmann::ordered_json c;
  c["architectures"] = {std::string(arch.hf_class)};
  c["model_type"] = std::string(arch.hf_types.front());
  c["text_config"] = t;
  c["tie_word_embeddings"] = cfg.tied_embeddings;
  c["torch_dtype"] = dtype;
  return c;
}

// A tensor's shape in the HF checkpoint where it differs from the runtime's: the depthwise
// conv as nn.Conv1d stores it, the shared expert's gate as a 1-output linear.
std::vector<int64_t> hf_shape(const TensorSpec& t) {
  if (t.role == TensorRole::DnConv) return {t.shape[0], 1, t.shape[1]};
  if (t.role == TensorRole::SharedGateInp) return {1, t.shape[0]};
  return t.shape;
}
}  // namespace

void write_random_hf(const ModelConfig& cfg, const MakerOptions& opt, const std::string& dir) {
  cfg.validate();
  const DType type = opt.weight_type;
  if (type != DType::F32 && type != DType::F16 && type != DType::BF16)
    fail("model maker: HF checkpoints are written as f32, f16 or bf16, not ", dtype_name(type));
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const fs::path root(dir);

  // config.json
  nlohmann::ordered_json c;
  const ArchInfo& arch = arch_info(cfg.arch);
  const bool fused = arch.traits.hf_fused_experts;
  const DType expert_type = opt.expert_type.value_or(type);
  c["architectures"] = {std::string(arch.hf_class)};
  c["model_type"] = std::string(arch.hf_types.front());
  add_hf_sizes(cfg, c);
  c["rope_theta"] = clean(cfg.rope_theta);
  const RopeScaling& rs = cfg.rope_scaling;
  if (rs.type == RopeScalingType::None) {
    c["rope_scaling"] = nullptr;
  } else {
    nlohmann::ordered_json r;
    r["rope_type"] = rope_scaling_name(rs.type);
    r["factor"] = clean(rs.factor);
    if (rs.original_context > 0) r["original_max_position_embeddings"] = rs.original_context;
    if (rs.type == RopeScalingType::Llama3) {
      r["low_freq_factor"] = clean(rs.low_freq_factor);
      r["high_freq_factor"] = clean(rs.high_freq_factor);
    }
    if (rs.type == RopeScalingType::Yarn) {
      r["beta_fast"] = clean(rs.beta_fast);
      r["beta_slow"] = clean(rs.beta_slow);
      if (rs.attn_factor > 0) r["attention_factor"] = clean(rs.attn_factor);
      if (!rs.truncate) r["truncate"] = false;
    }
    c["rope_scaling"] = r;
  }
  c["tie_word_embeddings"] = cfg.tied_embeddings;
  c["attention_bias"] = cfg.qkv_bias;
  c["hidden_act"] = cfg.activation == Activation::GeluTanh ? "gelu_pytorch_tanh" : "silu";  // gpt-oss: silu (clamped)
  if (cfg.activation == Activation::GeluTanh) c["hidden_activation"] = "gelu_pytorch_tanh";
  if (cfg.query_scale > 0) {  // query_pre_attn_scalar = scale^-2, a whole number in every Gemma
    const double qpas = 1.0 / (static_cast<double>(cfg.query_scale) * cfg.query_scale);
    c["query_pre_attn_scalar"] = std::abs(qpas - std::round(qpas)) < 1e-3 ? std::round(qpas) : qpas;
  }
  if (cfg.sliding_window > 0) c["sliding_window"] = cfg.sliding_window;
  if (cfg.has_sliding_layers()) {
    nlohmann::ordered_json types = nlohmann::ordered_json::array();
    for (int l = 0; l < cfg.n_layers; ++l) types.push_back(cfg.is_sliding(l) ? "sliding_attention" : "full_attention");
    c["layer_types"] = types;
  }
  if (cfg.has_moe_layers() && fused) {  // gpt-oss's config.json
    c["intermediate_size"] = cfg.n_ff_expert;
    c["num_local_experts"] = cfg.n_expert;
    c["num_experts_per_tok"] = cfg.n_expert_used;
    c["experts_per_token"] = cfg.n_expert_used;
    c["swiglu_limit"] = clean(cfg.swiglu_limit);
    if (expert_type == DType::MXFP4)
      c["quantization_config"] = {{"quant_method", "mxfp4"},
                                  {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                              "model.embed_tokens", "lm_head"}}};
  } else if (cfg.has_moe_layers()) {
    c["num_experts"] = cfg.n_expert;
    c["num_experts_per_tok"] = cfg.n_expert_used;
    c["moe_intermediate_size"] = cfg.n_ff_expert;
    c["norm_topk_prob"] = cfg.expert_weights_norm;
    c["decoder_sparse_step"] = 1;
    nlohmann::ordered_json dense = nlohmann::ordered_json::array();
    for (int l = 0; l < cfg.n_layers; ++l)
      if (!cfg.is_moe(l)) dense.push_back(l);
    c["mlp_only_layers"] = dense;
  }
  if (cfg.rope_theta_local > 0) c["rope_local_base_freq"] = clean(cfg.rope_theta_local);
  if (cfg.attn_softcap > 0) c["attn_logit_softcapping"] = clean(cfg.attn_softcap);
  if (cfg.final_softcap > 0) c["final_logit_softcapping"] = clean(cfg.final_softcap);
  c["bos_token_id"] = 1;
  c["eos_token_id"] = 2;
  c["torch_dtype"] = type == DType::F32 ? "float32" : type == DType::F16 ? "float16" : "bfloat16";
  if (arch.traits.per_type_attention) c = hf_gemma4_config_json(cfg, arch, c["torch_dtype"]);
  else if (arch.traits.hf_text_config) c = hf_text_config_json(cfg, arch, c["torch_dtype"]);
  write_text(root / "config.json", c.dump(2) + "\n");

  // tokenizer.json: the same vocabulary as the GGUF, as an HF BPE with byte fallback.
  const std::vector<std::string> pieces = vocab_pieces(cfg.vocab_size);
  nlohmann::ordered_json tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  tok["added_tokens"] = nlohmann::ordered_json::array();
  for (int i = 0; i < 3; ++i)
    tok["added_tokens"].push_back({{"id", i}, {"content", pieces[static_cast<size_t>(i)]}, {"single_word", false},
                                   {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  const std::string sp = "\xe2\x96\x81";  // ▁
  tok["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        {{{"type", "Prepend"}, {"prepend", sp}},
                         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sp}}}}};
  tok["pre_tokenizer"] = nullptr;
  tok["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  tok["decoder"] = {{"type", "Sequence"},
                    {"decoders",
                     {{{"type", "Replace"}, {"pattern", {{"String", sp}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  tok["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", "<unk>"},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", std::move(vocab)},
                  {"merges", nlohmann::ordered_json::array()}};
  write_text(root / "tokenizer.json", tok.dump(2) + "\n");

  nlohmann::ordered_json tc;
  tc["add_bos_token"] = true;
  tc["add_eos_token"] = false;
  tc["bos_token"] = "<s>";
  tc["eos_token"] = "</s>";
  tc["unk_token"] = "<unk>";
  tc["clean_up_tokenization_spaces"] = false;
  tc["legacy"] = false;
  tc["model_max_length"] = cfg.context_length;
  tc["tokenizer_class"] = "LlamaTokenizer";
  write_text(root / "tokenizer_config.json", tc.dump(2) + "\n");

  // model.safetensors, every tensor (norms and biases too) in the weight type.
  SafetensorsWriter st;
  st.set_metadata("format", "pt");
  const uint64_t seed = opt.seed;
  if (expert_type != type && !(fused && expert_type == DType::MXFP4) && expert_type != DType::F32 &&
      expert_type != DType::F16 && expert_type != DType::BF16)
    fail("model maker: HF experts are written as f32, f16 or bf16", fused ? " or mxfp4" : "", ", not ",
         dtype_name(expert_type));
  std::map<TensorRole, TensorSpec> layer_experts;
  for (const TensorSpec& spec : model_tensors(cfg)) {
    if (fused && (role_is_expert(spec.role) || role_is_expert_bias(spec.role))) {
      layer_experts[spec.role] = spec;
      if (layer_experts.size() == 6) {  // the layer's three matrices and three biases
        add_hf_fused_experts(st, seed, layer_experts, expert_type, type);
        layer_experts.clear();
      }
      continue;
    }
    for (const TensorSpec& t : hf_tensors(spec)) {
      const DType ttype = role_is_expert(t.role) ? expert_type : type;
      const int64_t cols = t.shape.back();
      auto fill = [seed, t, ttype, cols, row = std::vector<float>(static_cast<size_t>(cols))](
                      int64_t r, uint8_t* dst) mutable {
        hf_row(seed, t, r, row.data());
        if (ttype == DType::F32) {
          std::memcpy(dst, row.data(), row.size() * sizeof(float));
        } else {
          ops::quantize_row(ttype, row.data(), dst, cols);
        }
      };
      st.add_rows(t.hf, ttype, hf_shape(t), std::move(fill));
    }
  }
  st.write((root / "model.safetensors").string());
}

}  // namespace triattn
