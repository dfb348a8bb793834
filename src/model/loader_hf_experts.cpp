#include "model/loader_hf_experts.h"

#include <cstring>
#include <sstream>

#include "core/error.h"
#include "ops/mxfp4_layout.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn {

namespace {

void expect_shape(const TensorView& t, const std::vector<int64_t>& want, const std::string& name, const std::string& file) {
  if (t.shape != want)
    fail(file, ": tensor '", name, "' has shape ", shape_str(t.shape), ", expected ", shape_str(want));
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// MXFP4 blocks/scales of rows [E, R, cols] -> GGML blocks of the rows `row(e, r)` picks,
// giving [E, out_rows, cols]. `row` maps an output row to its source row.
TensorView mxfp4_rows(ModelBuilder& m, const TensorView& blocks, const TensorView& scales, int64_t E, int64_t out_rows,
                      int64_t cols, const std::function<int64_t(int64_t)>& row) {
  const int64_t nb = cols / ops::kQK, src_rows = blocks.shape[1];
  LargeBuffer& buf = m.own(static_cast<size_t>(E * out_rows) * row_bytes(DType::MXFP4, cols));
  auto* out = reinterpret_cast<ops::BlockMxfp4*>(buf.data());
  const auto* b = static_cast<const uint8_t*>(blocks.data);
  const auto* s = static_cast<const uint8_t*>(scales.data);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < out_rows; ++r) {
      const int64_t src = e * src_rows + row(r);
      ops::mxfp4_from_hf(b + src * nb * 16, s + src * nb, nb, out + (e * out_rows + r) * nb);
    }
  return TensorView{DType::MXFP4, {E, out_rows, cols}, buf.data()};
}

// Dense [E, in, n] input-major -> [E, out_rows, in] in the same type, out[e][r][i] = w[e][i][col(r)].
TensorView transpose_rows(ModelBuilder& m, const TensorView& w, int64_t out_rows, const std::function<int64_t(int64_t)>& col) {
  const int64_t E = w.shape[0], in = w.shape[1], n = w.shape[2];
  const size_t es = row_bytes(w.type, 1);
  LargeBuffer& buf = m.own(static_cast<size_t>(E * out_rows * in) * es);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < out_rows; ++r) {
      const int64_t c = col(r);
      uint8_t* dst = buf.data() + static_cast<size_t>((e * out_rows + r) * in) * es;
      for (int64_t i = 0; i < in; ++i) std::memcpy(dst + i * es, src + static_cast<size_t>((e * in + i) * n + c) * es, es);
    }
  return TensorView{w.type, {E, out_rows, in}, buf.data()};
}

}  // namespace

TensorView hf_fused_expert_tensor(ModelBuilder& m, const ArchTensor& t, int layer, const TensorLookup& find,
                                  const TensorLookup& required) {
  const ModelConfig& c = m.config();
  const int64_t E = c.n_expert, F = c.n_ff_expert, D = c.n_embd;
  const std::string name = tensor_name(t, TensorFormat::Hf, layer);
  const std::string& file = m.path();
  const bool down = t.role == TensorRole::DownExps || t.role == TensorRole::DownExpsBias;
  const int64_t up = t.role == TensorRole::UpExps || t.role == TensorRole::UpExpsBias ? 1 : 0;
  auto split = [up](int64_t r) { return 2 * r + up; };  // gate: even rows/columns, up: odd

  if (role_is_expert_bias(t.role)) {
    const TensorView b = required(name);
    expect_shape(b, {E, down ? D : 2 * F}, name, file);
    const int64_t n = down ? D : F, src_n = b.shape[1];
    LargeBuffer& buf = m.own(static_cast<size_t>(E * n) * sizeof(float));
    auto* dst = reinterpret_cast<float*>(buf.data());
    std::vector<float> row(static_cast<size_t>(src_n));
    for (int64_t e = 0; e < E; ++e) {
      ops::dequantize_row(b.type, static_cast<const uint8_t*>(b.data) + e * row_bytes(b.type, src_n), row.data(), src_n);
      for (int64_t i = 0; i < n; ++i) dst[e * n + i] = row[static_cast<size_t>(down ? i : split(i))];
    }
    return TensorView{DType::F32, {E, n}, buf.data()};
  }

  const int64_t in = down ? F : D, out_rows = down ? D : F;
  if (const TensorView blocks = find(name + "_blocks"); !blocks.empty()) {
    const TensorView scales = required(name + "_scales");
    if (in % ops::kQK != 0) fail(file, ": '", name, "_blocks' covers ", in, " inputs, not a whole number of MXFP4 blocks");
    const int64_t src_rows = down ? D : 2 * F;
    expect_shape(blocks, {E, src_rows, in / ops::kQK, 16}, name + "_blocks", file);
    expect_shape(scales, {E, src_rows, in / ops::kQK}, name + "_scales", file);
    if (blocks.type != DType::U8 || scales.type != DType::U8)
      fail(file, ": '", name, "_blocks' and '_scales' must be U8 (MXFP4 as transformers stores it)");
    return mxfp4_rows(m, blocks, scales, E, out_rows, in, down ? std::function<int64_t(int64_t)>([](int64_t r) { return r; })
                                                                 : std::function<int64_t(int64_t)>(split));
  }
  const TensorView w = required(name);
  expect_shape(w, {E, in, down ? D : 2 * F}, name, file);
  if (!is_float_type(w.type)) fail(file, ": tensor '", name, "' is ", dtype_name(w.type), "; expected f32, f16 or bf16");
  return transpose_rows(m, w, out_rows, down ? std::function<int64_t(int64_t)>([](int64_t r) { return r; })
                                             : std::function<int64_t(int64_t)>(split));
}

}  // namespace triattn
