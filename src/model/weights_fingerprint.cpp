#include "model/weights_fingerprint.h"

#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "model/model.h"
#include "ops/ops.h"

namespace triattn {

std::vector<float> weights_fingerprint(const Model& model) {
  const TensorView& e = model.weights().tok_embd;
  if (e.empty() || e.shape.size() != 2 || e.shape[0] <= 0 || e.shape[1] <= 0)
    fail(model.path(), ": the model has no 2-D token embedding to fingerprint");
  const int64_t rows = e.shape[0], cols = e.shape[1];
  constexpr int64_t n = kWeightsFingerprintSize;
  std::vector<float> out(static_cast<size_t>(n));
  std::vector<float> row(static_cast<size_t>(cols));
  int64_t have = -1;
  for (int64_t i = 0; i < n; ++i) {
    // Row: the middle of the i-th of n equal slices of the vocabulary. Column: a
    // multiplicative hash (odd multiplier, so distinct columns for i < cols when cols is a
    // power of two), so the samples do not line up in one column whatever the row stride.
    const int64_t r = (2 * i + 1) * rows / (2 * n);
    const int64_t c = static_cast<int64_t>((static_cast<uint64_t>(i) * 2654435761u + 7) % static_cast<uint64_t>(cols));
    if (r != have) {
      ops::dequantize_matrix_row(e, r, row.data());
      have = r;
    }
    out[static_cast<size_t>(i)] = row[static_cast<size_t>(c)];
  }
  return out;
}

double fingerprint_similarity(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size() || a.empty()) return 0;
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= static_cast<double>(a.size());
  mb /= static_cast<double>(b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] - ma, y = b[i] - mb;
    ab += x * y, aa += x * x, bb += y * y;
  }
  if (!(aa > 0) || !(bb > 0)) return 0;
  return ab / std::sqrt(aa * bb);
}

}  // namespace triattn
