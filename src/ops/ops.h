#pragma once
// Kernels: pure functions over spans, dispatched at run time to the best implementation for
// this CPU (scalar, AVX2, AVX-512; NEON is a new file, not a rewrite). Every kernel has a
// slow scalar twin in ops/reference.h that the tests compare against.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace triattn::ops {

// n must be a multiple of block_size(t). t must be a type with contiguous rows (not Q8_0x4 etc.).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Row r of a 2-D weight of any type, interleaved layouts included (embedding lookups).
void dequantize_matrix_row(const TensorView& w, int64_t r, float* dst);
// Supported for F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4 (the model maker writes these).
void quantize_row(DType t, const float* src, void* dst, int64_t n);

// Load-time repacking into the internal layouts (core/dtype.h): the interleaved type a weight
// can be stored as for faster matmuls with the active kernels (Q8_0 with rows a multiple of 16
// -> KernelTable::q8_0_layout, Q8_0x16 with AVX-512, else with rows a multiple of 4 -> Q8_0x4;
// Q4_K with rows a multiple of 8 -> Q4_Kx8, Q4_0 with rows a multiple of 8 -> Q4_0x8), or
// nullopt.
std::optional<DType> interleaved_type(const TensorView& w);
// Writes rows [r0, r1) of w (r1 = -1: to the end; both multiples of interleaved_rows(to)) in
// the interleaved type `to` (one made from w's type) into dst, which holds the whole tensor in
// that type (its nbytes(); for Q4_Kx8 more than w's); ranges may be written by different
// threads. Throws if w cannot be stored as `to`.
void interleave(const TensorView& w, DType to, void* dst, int64_t r0 = 0, int64_t r1 = -1);
// The same into *interleaved_type(w); throws if w cannot be interleaved.
void interleave(const TensorView& w, void* dst, int64_t r0 = 0, int64_t r1 = -1);

// y[t * rows + r] = dot(w.row(r), x + t * cols) for t in [0, n_tokens).
// w is 2-D {rows, cols} of any weight DType; x is f32 [n_tokens, cols]; y is f32 [n_tokens, rows].
// n_tokens == 1 is matrix-vector (decode); larger is matrix-matrix (prefill).
void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool);

// One weight of a matmul_group and where its output goes (y[t * rows + r] as for matmul).
struct MatmulTarget {
  const TensorView* w;
  float* y;
  // This target's own input ([n_tokens, cols], like x), or null for the group's x (the
  // down projections of several experts, each of its own activations, share one call).
  const float* x = nullptr;
};
// Several matmuls at once, of the same input x (Q, K and V; gate and up) or of per-target
// inputs: the activations are quantized once per input and format, and the rows of all
// weights are split over the pool in one parallel call, so in decode the threads meet once
// instead of once per matrix. Every weight must have the same column count; types may differ.
// Each target's output is bit for bit that of its own matmul.
void matmul_group(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                  ThreadPool* pool);

// y = x / rms(x) * weight (weight f32; y may alias x).
void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps);
// In place, numerically stable.
void softmax(float* x, int64_t n);
// out = silu(gate) * up (out may alias gate).
void swiglu(const float* gate, const float* up, float* out, int64_t n);
// out = gelu_tanh(gate) * up (Gemma's GeGLU, tanh approximation; out may alias gate).
void geglu(const float* gate, const float* up, float* out, int64_t n);
// x -> cap * tanh(x / cap), in place (Gemma 2's logit soft-capping).
void softcap(float* x, int64_t n, float cap);
float dot_f32(const float* a, const float* b, int64_t n);
// y += a * x
void axpy_f32(float a, const float* x, float* y, int64_t n);
// RoPE in the halves layout, in place, for n_heads vectors of head_dim (even) floats: band f
// rotates (x[f], x[f + head_dim/2]) by the angle with cos[f], sin[f] (head_dim/2 of each).
// ISAs agree to rounding (the SIMD versions fuse one multiply into each add).
void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin);
// out[i] = x[i] rounded to f16 (ties to even; overflow to inf), as core/half.h's f32_to_f16.
void f32_to_f16_row(const float* x, uint16_t* out, int64_t n);
// quantize_row(DType::Q8_0, ...), bit for bit, vectorized: what the KV cache quantizes each
// appended row with (n a multiple of 32).
void f32_to_q8_0_row(const float* x, void* out, int64_t n);

// Instruction sets the kernels are written for. The best one this CPU supports is chosen at
// start-up unless the program selects another (select_isa); tests force each in turn.
enum class Isa : uint8_t { Scalar, Avx2, Avx512, Neon, NeonDotprod };
std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512", "neon", "neon_dotprod"
Isa active_isa();
std::vector<Isa> supported_isas();  // on this CPU, Scalar first
// Makes every kernel use the instruction set called `name` (isa_name's spelling) instead of the
// detected best: a way to compare kernels on one machine, or to rule them out when chasing a
// numerical difference. Throws Error, naming the ones this CPU runs, if it runs no such set.
// Call before any kernel runs: not thread-safe.
void select_isa(std::string_view name);
// Whether the active instruction set came from select_isa rather than detection.
bool isa_selected();
// Makes every kernel use `isa` (throws if this CPU lacks it), as detected rather than
// selected (isa_selected() false after). Not thread-safe: tests only.
void set_isa_for_testing(Isa isa);

}  // namespace triattn::ops
