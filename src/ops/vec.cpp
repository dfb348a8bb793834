// Element-wise and reduction kernels: forwarded to the active ISA's table.
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"

#include <cmath>

#include "core/error.h"

namespace triattn::ops {

void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  active_kernels().rmsnorm(x, weight, y, n, eps);
}
void softmax(float* x, int64_t n) { active_kernels().softmax(x, n); }
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  active_kernels().swiglu(gate, up, out, n);
}
void geglu(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    out[i] = g * up[i];
  }
}
void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}
float dot_f32(const float* a, const float* b, int64_t n) {
  return active_kernels().dot_f32(a, b, n);
}
void axpy_f32(float a, const float* x, float* y, int64_t n) {
  active_kernels().axpy_f32(a, x, y, n);
}
void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  active_kernels().rope(x, n_heads, head_dim, cos, sin);
}
void f32_to_q8_0_row(const float* x, void* out, int64_t n) {
  if (n % kQK != 0) fail("f32_to_q8_0_row: ", n, " values are not whole blocks of ", kQK);
  active_kernels().f32_to_q8_0_row(x, out, n);
}

void f32_to_f16_row(const float* x, uint16_t* out, int64_t n) {
  active_kernels().f32_to_f16_row(x, out, n);
}

}  // namespace triattn::ops
