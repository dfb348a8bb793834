#include "model/weight_prep.h"

#include <cstring>
#include <sstream>

#include "core/error.h"
#include "ops/ops.h"

namespace triattn {

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

LargeBuffer& own(Model& model, size_t bytes) { return model.owned_.emplace_back(bytes); }
}  // namespace

TensorView prep_f32(Model& model, const TensorView& t) {
  if (t.empty() || t.type == DType::F32) return t;
  const int64_t n = t.numel();
  LargeBuffer& buf = own(model, static_cast<size_t>(n) * sizeof(float));
  const int64_t cols = t.cols();
  for (int64_t r = 0; r < t.rows(); ++r)
    ops::dequantize_row(t.type, t.row(r), reinterpret_cast<float*>(buf.data()) + r * cols, cols);
  return TensorView{DType::F32, t.shape, buf.data()};
}

TensorView prep_unpermute_rows(Model& model, const TensorView& t, int n_heads, int head_dim) {
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
  const int64_t Q = static_cast<int64_t>(c.n_heads) * c.head_dim, K = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  auto matrix = [&](const TensorView& t, std::vector<int64_t> shape, const std::string& name) {
    check_shape(t, shape, name, what);
    if (t.type == DType::I32) fail(what, ": tensor '", name, "' has integer type; weights must be float or quantized");
  };
  auto vec = [&](const TensorView& t, int64_t n, const std::string& name) {
    check_shape(t, {n}, name, what);
    if (t.type != DType::F32) fail(what, ": internal: vector '", name, "' not converted to f32");
  };
  matrix(w.tok_embd, {V, E}, "token embedding");
  matrix(w.output, {V, E}, "output");
  vec(w.output_norm, E, "output norm");
  if (static_cast<int>(w.layers.size()) != c.n_layers) fail(what, ": expected ", c.n_layers, " layers");
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    vec(L.attn_norm, E, p + "attn_norm");
    vec(L.ffn_norm, E, p + "ffn_norm");
    matrix(L.wq, {Q, E}, p + "q");
    matrix(L.wk, {K, E}, p + "k");
    matrix(L.wv, {K, E}, p + "v");
    matrix(L.wo, {E, Q}, p + "o");
    matrix(L.w_gate, {F, E}, p + "ffn_gate");
    matrix(L.w_up, {F, E}, p + "ffn_up");
    matrix(L.w_down, {E, F}, p + "ffn_down");
    if (c.qkv_bias) {
      vec(L.bq, Q, p + "q bias");
      vec(L.bk, K, p + "k bias");
      vec(L.bv, K, p + "v bias");
    }
    if (c.qk_norm) {
      vec(L.q_norm, c.head_dim, p + "q_norm");
      vec(L.k_norm, c.head_dim, p + "k_norm");
    }
  }
}

}  // namespace triattn
