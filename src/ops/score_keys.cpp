// score_keys: the active kernel table's scoring kernel where the head fits it, and the scalar
// reference it is tested against.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/cpu_dispatch.h"
#include "ops/kv_rows.h"
#include "ops/ops.h"
#include "ops/score_kernels.h"

namespace triattn {

namespace {

void check_key_type(DType type) {
  if (!is_kv_type(type))
    fail("triattention scoring: keys of type ", dtype_name(type), " are not supported (F32, F16 or Q8_0)");
}

// Band-wise dot products of one key with one head's coefficients. Four partial sums let the
// compiler keep independent accumulators (the score is a sum, order is free to choose).
inline float score_one(const HeadCoeffs& h, const float* kre, const float* kim, const float* knorm) {
  const int half = h.half;
  const float* cr = h.c_re();
  const float* ci = h.c_im();
  const float* w = h.w();
  float acc[4] = {0, 0, 0, 0};
  int f = 0;
  for (; f + 4 <= half; f += 4)
    for (int u = 0; u < 4; ++u) acc[u] += cr[f + u] * kre[f + u] + ci[f + u] * kim[f + u] + w[f + u] * knorm[f + u];
  for (; f < half; ++f) acc[0] += cr[f] * kre[f] + ci[f] * kim[f] + w[f] * knorm[f];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

void score_keys(const HeadCoeffs* heads, int n_heads, const void* keys, DType type,
                size_t row_bytes, std::span<const int32_t> rows, float* out) {
  if (n_heads <= 0) return;
  check_key_type(type);
  const ops::ScoreKernel& k = ops::active_kernels().score_keys;
  const int half = heads[0].half;
  if (k.fn && half % k.half_multiple == 0 && half <= detail::kMaxHalf) {
    k.fn(heads, n_heads, keys, type, row_bytes, rows, out);
    return;
  }
  score_keys_scalar(heads, n_heads, keys, type, row_bytes, rows, out);
}

void score_keys_scalar(const HeadCoeffs* heads, int n_heads, const void* keys, DType type,
                       size_t row_bytes, std::span<const int32_t> rows, float* out) {
  if (n_heads <= 0) return;
  const int half = heads[0].half;
  check_key_type(type);
  std::vector<float> buf(3 * static_cast<size_t>(half));
  float* kre = buf.data();
  float* kim = kre + half;
  float* knorm = kim + half;
  const auto* base = static_cast<const uint8_t*>(keys);
  const size_t n = rows.size();
  for (size_t i = 0; i < n; ++i) {
    // kre and kim are adjacent: the row's floats in one call.
    ops::dequantize_row(type, base + static_cast<size_t>(rows[i]) * row_bytes, kre, 2 * half);
    // |K_f| is shared by every query head of the group: compute it once per key.
    for (int f = 0; f < half; ++f) knorm[f] = std::sqrt(kre[f] * kre[f] + kim[f] * kim[f]);
    for (int j = 0; j < n_heads; ++j) out[j * n + i] = score_one(heads[j], kre, kim, knorm);
  }
}

}  // namespace triattn
