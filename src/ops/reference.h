#pragma once
// Slow, obviously-correct scalar twins of every kernel, for tests. They decode each element
// straight from the layout description in quant_blocks.h (not sharing code with the fast
// paths) and accumulate in double.
#include <cstdint>

#include "core/tensor.h"

namespace triattn::ops::ref {

// Element i of a row stored as type t.
float element(DType t, const void* row, int64_t i);
void dequantize_row(DType t, const void* row, float* out, int64_t n);
// Element i of row r of a 2-D weight, interleaved layouts (Q8_0x4, Q8_0x16, ...) included.
float matrix_element(const TensorView& w, int64_t r, int64_t i);

// y[t * rows + r] = sum_i w[r][i] * x[t][i], in double, with x unquantized.
void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y);

double dot(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps);
void softmax(float* x, int64_t n);
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// RoPE (halves layout) from the angles themselves, in double.
void rope(float* x, int n_heads, int head_dim, const double* angles);

}  // namespace triattn::ops::ref

// The Gated DeltaNet layer's kernels (gated_delta.h), straight from the definition: the conv
// tap by tap, the delta rule token by token (decay, read, delta, write, read-out), in double.
namespace triattn::ops {
struct DeltaShape;
}
namespace triattn::ops::ref {
void causal_conv1d_silu(int64_t T, int C, int K, const float* x, int64_t x_stride,
                        const float* w, float* state, float* y, int64_t y_stride);
// Every value head; state and out as in ops::gated_delta_rule.
void gated_delta_rule(const DeltaShape& s, int64_t T, const float* qkv, int64_t qkv_stride,
                      const float* g, const float* beta, int64_t gb_stride, float* state,
                      float* out, int64_t out_stride);
void gated_rmsnorm(const float* x, const float* z, const float* w, int n, float eps, float* y);
}  // namespace triattn::ops::ref
