// The portable MXFP4 kernel: per block, the integer dot product of the doubled E2M1 values
// (kMxfp4Values) with the int8 activations, times the two scales.
#include "ops/mxfp4_kernels.h"
#include "ops/quant_blocks.h"

namespace triattn::ops {

namespace {

float dot_row_mxfp4(const uint8_t* w, const uint8_t* x, int64_t n) {
  const auto* wb = reinterpret_cast<const BlockMxfp4*>(w);
  const auto* xb = reinterpret_cast<const ActQ8*>(x);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int32_t s = 0;
    for (int j = 0; j < kQK / 2; ++j)
      s += kMxfp4Values[wb[b].qs[j] & 0xF] * xb[b].qs[j] + kMxfp4Values[wb[b].qs[j] >> 4] * xb[b].qs[j + kQK / 2];
    sum += mxfp4_scale(wb[b].e) * xb[b].d * static_cast<float>(s);
  }
  return sum;
}

void matmul_rows_mxfp4(const MatmulJob& j, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t t = 0; t < j.n_tokens; ++t)
      j.y[t * j.y_stride + r] = dot_row_mxfp4(j.w + r * j.w_stride, j.x + t * j.x_stride, j.cols);
}

}  // namespace

void fill_mxfp4_scalar(KernelTable& t) { t.matmul[static_cast<int>(DType::MXFP4)] = matmul_rows_mxfp4; }

}  // namespace triattn::ops
