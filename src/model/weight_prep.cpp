#include "model/weight_prep.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "model/loader_hf_experts.h"
#include "ops/ops.h"

namespace triattn {

namespace {

LargeBuffer& own(ModelBuilder& model, size_t bytes) { return model.own(bytes); }
}  // namespace

TensorView prep_f32(ModelBuilder& model, const TensorView& t) {
  if (t.empty() || t.type == DType::F32) return t;
  const int64_t n = t.numel();
  LargeBuffer& buf = own(model, static_cast<size_t>(n) * sizeof(float));
  const int64_t cols = t.cols();
  for (int64_t r = 0; r < t.rows(); ++r)
    ops::dequantize_row(t.type, t.row(r), reinterpret_cast<float*>(buf.data()) + r * cols, cols);
  return TensorView{DType::F32, t.shape, buf.data()};
}

TensorView prep_unpermute_rows(ModelBuilder& model, const TensorView& t, int n_heads, int head_dim) {
  if (t.empty()) return t;
  const bool vector = t.shape.size() == 1;
  const int64_t rows = vector ? t.shape[0] : t.rows();
  if (rows != static_cast<int64_t>(n_heads) * head_dim)
    fail("cannot reorder RoPE rows: ", rows, " rows, expected ", n_heads, " heads x ", head_dim);
  const size_t stride = vector ? row_bytes(t.type, 1) : t.row_stride();
  LargeBuffer& buf = own(model, stride * static_cast<size_t>(rows));
  const auto* src = static_cast<const uint8_t*>(t.data);
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h)
    for (int j = 0; j < head_dim; ++j) {
      const int from = j < half ? 2 * j : 2 * (j - half) + 1;
      std::memcpy(buf.data() + (static_cast<size_t>(h) * head_dim + j) * stride,
                  src + (static_cast<size_t>(h) * head_dim + from) * stride, stride);
    }
  return TensorView{t.type, t.shape, buf.data()};
}

TensorView prep_f32_map(ModelBuilder& model, const TensorView& t, const std::function<float(float)>& f) {
  if (t.empty()) return t;
  const int64_t n = t.numel(), cols = t.cols();
  LargeBuffer& buf = own(model, static_cast<size_t>(n) * sizeof(float));
  auto* dst = reinterpret_cast<float*>(buf.data());
  for (int64_t r = 0; r < t.rows(); ++r) ops::dequantize_row(t.type, t.row(r), dst + r * cols, cols);
  for (int64_t i = 0; i < n; ++i) dst[i] = f(dst[i]);
  return TensorView{DType::F32, t.shape, buf.data()};
}

TensorView prep_f32_plus(ModelBuilder& model, const TensorView& t, float add) {
  return prep_f32_map(model, t, [add](float x) { return x + add; });
}

TensorView prep_stack(ModelBuilder& model, const std::vector<TensorView>& parts, const std::string& what) {
  if (parts.empty()) fail(what, ": no matrices to stack");
  const TensorView& first = parts.front();
  if (first.shape.size() != 2) fail(what, ": expert matrices must be 2-D, got shape ", shape_str(first.shape));
  for (size_t i = 1; i < parts.size(); ++i)
    if (parts[i].type != first.type || parts[i].shape != first.shape)
      fail(what, ": expert ", i, " is ", dtype_name(parts[i].type), " ", shape_str(parts[i].shape), " but expert 0 is ",
           dtype_name(first.type), " ", shape_str(first.shape), " (all experts must have the same type and shape)");
  const size_t bytes = first.nbytes();
  LargeBuffer& buf = own(model, bytes * parts.size());
  for (size_t i = 0; i < parts.size(); ++i) std::memcpy(buf.data() + i * bytes, parts[i].data, bytes);
  return TensorView{first.type, {static_cast<int64_t>(parts.size()), first.shape[0], first.shape[1]}, buf.data()};
}

TensorView* role_slot(ModelWeights& w, TensorRole r, int layer) {
  switch (r) {
    case TensorRole::TokEmbd: return &w.tok_embd;
    case TensorRole::OutputNorm: return &w.output_norm;
    case TensorRole::Output: return &w.output;
    default: break;
  }
  LayerWeights& L = w.layers.at(static_cast<size_t>(layer));
  switch (r) {
    case TensorRole::AttnNorm: return &L.attn_norm;
    case TensorRole::Wq: return &L.wq;
    case TensorRole::Wk: return &L.wk;
    case TensorRole::Wv: return &L.wv;
    case TensorRole::Bq: return &L.bq;
    case TensorRole::Bk: return &L.bk;
    case TensorRole::Bv: return &L.bv;
    case TensorRole::QNorm: return &L.q_norm;
    case TensorRole::KNorm: return &L.k_norm;
    case TensorRole::Wo: return &L.wo;
    case TensorRole::PostAttnNorm: return &L.post_attn_norm;
    case TensorRole::FfnNorm: return &L.ffn_norm;
    case TensorRole::Gate: return &L.w_gate;
    case TensorRole::Up: return &L.w_up;
    case TensorRole::Down: return &L.w_down;
    case TensorRole::Router: return &L.router;
    case TensorRole::GateExps: return &L.gate_exps;
    case TensorRole::UpExps: return &L.up_exps;
    case TensorRole::DownExps: return &L.down_exps;
    case TensorRole::PostFfnNorm: return &L.post_ffn_norm;
    case TensorRole::Bo: return &L.bo;
    case TensorRole::Sinks: return &L.sinks;
    case TensorRole::RouterBias: return &L.router_bias;
    case TensorRole::GateExpsBias: return &L.gate_exps_bias;
    case TensorRole::UpExpsBias: return &L.up_exps_bias;
    case TensorRole::DownExpsBias: return &L.down_exps_bias;
    case TensorRole::DnQkv: return &L.dn_qkv;
    case TensorRole::DnZ: return &L.dn_z;
    case TensorRole::DnBeta: return &L.dn_beta;
    case TensorRole::DnAlpha: return &L.dn_alpha;
    case TensorRole::DnConv: return &L.dn_conv;
    case TensorRole::DnDtBias: return &L.dn_dt_bias;
    case TensorRole::DnA: return &L.dn_a;
    case TensorRole::DnNorm: return &L.dn_norm;
    case TensorRole::DnOut: return &L.dn_out;
    case TensorRole::SharedGateInp: return &L.shared_gate_inp;
    case TensorRole::SharedGate: return &L.shared_gate;
    case TensorRole::SharedUp: return &L.shared_up;
    case TensorRole::SharedDown: return &L.shared_down;
    case TensorRole::LayerScale: return &L.layer_scale;
    default: break;
  }
  fail("internal: tensor role without a slot");
}

namespace {
// HF tensors stored in another form than the runtime's (and GGUF's): Gated DeltaNet's A as
// A_log (the runtime keeps -exp(A_log)), its conv as nn.Conv1d's [conv_dim, 1, kernel], the
// shared expert's gate as a [1, n_embd] linear.
TensorView hf_to_runtime_layout(ModelBuilder& m, const ArchTensor& t, TensorView v, int layer) {
  const ModelConfig& c = m.config();
  if (t.role == TensorRole::DnA) return prep_f32_map(m, v, [](float a_log) { return -std::exp(a_log); });
  if (t.role == TensorRole::DnConv || t.role == TensorRole::SharedGateInp) {
    const std::vector<int64_t> want = role_shape(t.role, c);
    const std::vector<int64_t> stored =
        t.role == TensorRole::DnConv ? std::vector<int64_t>{want[0], 1, want[1]} : std::vector<int64_t>{1, want[0]};
    check_shape(v, stored, tensor_name(t, TensorFormat::Hf, layer), m.path());
    v.shape = want;
  }
  return v;
}
}  // namespace

void fill_arch_weights(ModelBuilder& m, const ArchInfo& a, TensorFormat f,
                       const std::function<TensorView(const std::string&)>& required,
                       const std::function<TensorView(const std::string&)>& find) {
  const ModelConfig& c = m.config();
  ModelWeights& w = m.weights();
  const float norm_add = f == TensorFormat::Hf && a.traits.hf_norm_plus_one ? 1.0f : 0.0f;
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (const ArchTensor& t : a.tensors) {
    if (t.role == TensorRole::TokEmbd || t.role == TensorRole::Output) continue;
    const bool per_layer = role_is_per_layer(t.role);
    if (!per_layer && !tensor_needed(t, c)) continue;
    const int n = per_layer ? c.n_layers : 1;
    for (int l = 0; l < n; ++l) {
      if (per_layer && !tensor_needed(t, c, l)) continue;
      TensorView v;
      if ((role_is_expert(t.role) || role_is_expert_bias(t.role)) && f == TensorFormat::Hf && a.traits.hf_fused_experts) {
        v = hf_fused_expert_tensor(m, t, l, find ? find : required, required);
      } else if (role_is_expert(t.role) && f == TensorFormat::Hf) {
        std::vector<TensorView> parts;
        for (int e = 0; e < c.n_expert; ++e) parts.push_back(required(tensor_name(t, f, l, e)));
        v = prep_stack(m, parts, m.path() + ": " + tensor_name(t, f, l, 0) + " and the other experts");
      } else {
        v = required(tensor_name(t, f, per_layer ? l : -1));
      }
      if (f == TensorFormat::Hf) v = hf_to_runtime_layout(m, t, v, per_layer ? l : -1);
      if (role_is_vector(t.role))
        v = role_is_norm(t.role) && norm_add != 0 ? prep_f32_plus(m, v, norm_add) : prep_f32(m, v);
      *role_slot(w, t.role, l) = v;
    }
  }
}

void check_shape(const TensorView& t, const std::vector<int64_t>& expected, const std::string& name,
                 const std::string& what) {
  if (t.empty()) fail(what, ": tensor '", name, "' is missing");
  if (t.shape != expected)
    fail(what, ": tensor '", name, "' has shape ", shape_str(t.shape), ", expected ", shape_str(expected));
}

void check_model_weights(const Model& model) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const std::string& what = model.path();
  const int64_t E = c.n_embd, F = c.n_ff, V = c.vocab_size;
  auto matrix = [&](const TensorView& t, std::vector<int64_t> shape, const std::string& name) {
    check_shape(t, shape, name, what);
    if (t.type == DType::I32) fail(what, ": tensor '", name, "' has integer type; weights must be float or quantized");
  };
  auto vec = [&](const TensorView& t, int64_t n, const std::string& name) {
    check_shape(t, {n}, name, what);
    if (t.type != DType::F32) fail(what, ": internal: vector '", name, "' not converted to f32");
  };
  auto vecs = [&](const TensorView& t, int64_t rows, int64_t n, const std::string& name) {
    check_shape(t, {rows, n}, name, what);
    if (t.type != DType::F32) fail(what, ": internal: biases '", name, "' not converted to f32");
  };
  matrix(w.tok_embd, {V, E}, "token embedding");
  matrix(w.output, {V, E}, "output");
  vec(w.output_norm, E, "output norm");
  if (static_cast<int>(w.layers.size()) != c.n_layers) fail(what, ": expected ", c.n_layers, " layers");
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    const int64_t d = c.layer_head_dim(l);
    const int64_t Q = static_cast<int64_t>(c.n_heads) * d, K = static_cast<int64_t>(c.layer_kv_heads(l)) * d;
    vec(L.attn_norm, E, p + "attn_norm");
    vec(L.ffn_norm, E, p + "ffn_norm");
    if (c.post_norms) {
      vec(L.post_attn_norm, E, p + "post_attention_norm");
      vec(L.post_ffn_norm, E, p + "post_ffw_norm");
    }
    if (c.is_delta(l)) {
      const DeltaNetConfig& d = c.delta;
      matrix(L.dn_qkv, {d.conv_dim(), E}, p + "in_proj_qkv (attn_qkv)");
      matrix(L.dn_z, {d.value_dim(), E}, p + "in_proj_z (attn_gate)");
      matrix(L.dn_beta, {d.n_v_heads, E}, p + "in_proj_b (ssm_beta)");
      matrix(L.dn_alpha, {d.n_v_heads, E}, p + "in_proj_a (ssm_alpha)");
      vecs(L.dn_conv, d.conv_dim(), d.conv_kernel, p + "conv1d (ssm_conv1d)");
      vec(L.dn_dt_bias, d.n_v_heads, p + "dt_bias (ssm_dt)");
      vec(L.dn_a, d.n_v_heads, p + "A_log (ssm_a)");
      vec(L.dn_norm, d.head_v_dim, p + "linear attention norm (ssm_norm)");
      matrix(L.dn_out, {E, d.value_dim()}, p + "out_proj (ssm_out)");
    } else {
      matrix(L.wq, {c.attn_output_gate ? 2 * Q : Q, E}, p + "q");
      matrix(L.wk, {K, E}, p + "k");
      if (c.v_from_k(l)) {
        if (!L.wv.empty()) fail(what, ": ", p, "has a v projection, but V is its K projection (attention_k_eq_v)");
      } else {
        matrix(L.wv, {K, E}, p + "v");
      }
      matrix(L.wo, {E, Q}, p + "o");
    }
    if (c.is_moe(l) && c.n_ff_shared > 0) {
      const int64_t S = c.n_ff_shared;
      vec(L.shared_gate_inp, E, p + "shared expert gate (ffn_gate_inp_shexp)");
      matrix(L.shared_gate, {S, E}, p + "ffn_gate_shexp");
      matrix(L.shared_up, {S, E}, p + "ffn_up_shexp");
      matrix(L.shared_down, {E, S}, p + "ffn_down_shexp");
    }
    if (c.is_moe(l)) {
      const int64_t X = c.n_expert, XF = c.n_ff_expert;
      matrix(L.router, {X, E}, p + "ffn_gate_inp (router)");
      matrix(L.gate_exps, {X, XF, E}, p + "ffn_gate_exps");
      matrix(L.up_exps, {X, XF, E}, p + "ffn_up_exps");
      matrix(L.down_exps, {X, E, XF}, p + "ffn_down_exps");
      if (c.moe_bias) {
        vec(L.router_bias, X, p + "ffn_gate_inp bias");
        vecs(L.gate_exps_bias, X, XF, p + "ffn_gate_exps bias");
        vecs(L.up_exps_bias, X, XF, p + "ffn_up_exps bias");
        vecs(L.down_exps_bias, X, E, p + "ffn_down_exps bias");
      }
    } else {
      matrix(L.w_gate, {F, E}, p + "ffn_gate");
      matrix(L.w_up, {F, E}, p + "ffn_up");
      matrix(L.w_down, {E, F}, p + "ffn_down");
    }
    if (c.qkv_bias) {
      vec(L.bq, Q, p + "q bias");
      vec(L.bk, K, p + "k bias");
      vec(L.bv, K, p + "v bias");
    }
    if (c.attn_out_bias) vec(L.bo, E, p + "o bias");
    if (c.attn_sinks) vec(L.sinks, c.n_heads, p + "attention sinks");
    if (c.qk_norm && !c.is_delta(l)) {
      vec(L.q_norm, d, p + "q_norm");
      vec(L.k_norm, d, p + "k_norm");
    }
    if (c.layer_scale) vec(L.layer_scale, 1, p + "layer scalar");
  }
}

}  // namespace triattn
