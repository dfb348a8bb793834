#pragma once
// One table of kernel function pointers per instruction set, and one choice of table for the
// whole program. The entry points of ops.h, attention.h and score_kernels.h call through
// active_kernels(); adding a target means one more table in its own file and one more line
// in cpu_dispatch.cpp, not touching the other kernels.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/dtype.h"
#include "ops/ops.h"
#include "ops/quant_blocks.h"

namespace triattn {
struct AttentionStream;  // ops/attention.h
struct HeadCoeffs;       // ops/score_kernels.h
}  // namespace triattn

namespace triattn::ops {

// One matmul call, already validated, with the activations in the form the weight type
// wants (act_format): f32 rows, ActQ8 rows or ActQ8K rows, x_stride bytes apart.
struct MatmulJob {
  const uint8_t* w = nullptr;
  size_t w_stride = 0;  // bytes per weight row
  int64_t cols = 0;
  const uint8_t* x = nullptr;
  size_t x_stride = 0;  // bytes per activation row
  int64_t n_tokens = 0;
  float* y = nullptr;  // y[t * y_stride + r]
  int64_t y_stride = 0;
};

// Computes y for weight rows [r0, r1) and every token. For an interleaved type (Q8_0x4, Q4_Kx8, ...) r0
// and r1 are multiples of its group (matmul.cpp aligns the ranges).
using MatmulRowsFn = void (*)(const MatmulJob& job, int64_t r0, int64_t r1);

// An attention kernel (attention_detail::attend_* in attention.h) and the head_dim multiple it needs.
using AttendFn = void (*)(const float* const* q, const int32_t* q_pos, int n_q, const AttentionStream& s,
                          float scale, float* const* out, float* weights, float* state);
struct AttendKernel {
  AttendFn fn = nullptr;
  int head_dim_multiple = 1;
};

// A TriAttention scoring kernel (detail::score_keys_* in score_kernels.h) and the head_dim/2
// multiple it needs.
using ScoreKeysFn = void (*)(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                             std::span<const int32_t> rows, float* out);
struct ScoreKernel {
  ScoreKeysFn fn = nullptr;
  int half_multiple = 1;
};

enum class ActFormat { F32, Q8, Q8K };
ActFormat act_format(DType weight_type);

constexpr int kNumDTypes = static_cast<int>(DType::Q8_0x16) + 1;

struct KernelTable {
  Isa isa = Isa::Scalar;
  // Indexed by DType; null: none of its own (matmul then runs the scalar table's kernel, which
  // covers every type: a layout made for one ISA still computes after a test forces another).
  MatmulRowsFn matmul[kNumDTypes] = {};
  // The interleaved layout Q8_0 matrices are repacked into for these kernels (ops::interleaved_type):
  // Q8_0x16 where the 512-bit byte dot products take a row per lane, Q8_0x4 elsewhere.
  DType q8_0_layout = DType::Q8_0x4;
  // Set only in the table that measured choices make (kernel_variants.h), indexed by DType:
  // the kernel for more than one token where it is another table's than matmul[]'s, and the
  // layout a file type is stored in at load (the type itself: kept as it is).
  MatmulRowsFn matmul_batch[kNumDTypes] = {};
  std::optional<DType> layout[kNumDTypes] = {};
  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n) = nullptr;
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n, float eps) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n) = nullptr;
  void (*rope)(float* x, int n_heads, int head_dim, const float* cos, const float* sin) = nullptr;
  // Activation quantization (act_quant.h) and f32 -> f16 rows: bit-identical on every ISA
  // (same scale, same ties-to-even rounding), so the choice of ISA never changes results.
  void (*quantize_act_q8)(const float* x, ActQ8* out, int64_t n) = nullptr;
  void (*quantize_act_q8k)(const float* x, ActQ8K* out, int64_t n) = nullptr;
  void (*f32_to_f16_row)(const float* x, uint16_t* out, int64_t n) = nullptr;
  // f32 -> Q8_0 blocks, bit-identical to quantize_row(DType::Q8_0) (GGML's rounding).
  void (*f32_to_q8_0_row)(const float* x, void* out, int64_t n) = nullptr;
  // Attention kernels, widest first: the first whose multiple divides the stream's head_dim
  // runs, else the portable one (attention.cpp). None here: the portable one always.
  AttendKernel attend[2] = {};
  // The key-scoring kernel (score_keys.cpp); none: the scalar one.
  ScoreKernel score_keys = {};
};

const KernelTable& scalar_kernels();
#if defined(__x86_64__)
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();
#endif
#if defined(__aarch64__)
const KernelTable& neon_kernels();
const KernelTable& neon_dotprod_kernels();
#endif

// The table in use: the best for this CPU unless a test forced another.
const KernelTable& active_kernels();

}  // namespace triattn::ops
