// matmul entry point: checks the operands, quantizes the activations once per call into the
// form the weight type's integer kernel wants, and splits the weight rows over the pool.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/act_quant.h"
#include "ops/cpu_dispatch.h"
#include "ops/ops.h"

namespace triattn::ops {

namespace {

// Below this many multiply-adds a call is too small to be worth waking the pool.
constexpr int64_t kMinParallelWork = 1 << 16;
// Rows per scheduling unit: a multiple of every ISA's row tile.
constexpr int64_t kRowGrain = 16;

}  // namespace

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  if (w.shape.size() != 2) fail("matmul: weight must be 2-D, got ", w.shape.size(), " dims");
  if (w.data == nullptr) fail("matmul: weight has no data");
  if (n_tokens <= 0) return;
  const int64_t rows = w.shape[0], cols = w.shape[1];
  const KernelTable& k = active_kernels();
  const MatmulRowsFn fn = k.matmul[static_cast<int>(w.type)];
  if (!fn) fail("matmul: weight type ", dtype_name(w.type), " is not supported");
  if (cols % block_size(w.type) != 0)
    fail("matmul: ", cols, " columns is not a whole number of ", dtype_name(w.type), " blocks");

  MatmulJob job;
  job.w = static_cast<const uint8_t*>(w.data);
  job.w_stride = w.row_stride();
  job.cols = cols;
  job.n_tokens = n_tokens;
  job.y = y;
  job.y_stride = rows;

  // Quantized activations live in a per-thread buffer reused across calls (no allocation
  // per token once warmed up).
  thread_local std::vector<uint8_t> act;
  const ActFormat fmt = act_format(w.type);
  if (fmt == ActFormat::F32) {
    job.x = reinterpret_cast<const uint8_t*>(x);
    job.x_stride = static_cast<size_t>(cols) * sizeof(float);
  } else {
    const bool k_quant = fmt == ActFormat::Q8K;
    job.x_stride = k_quant ? static_cast<size_t>(cols / kQKK) * sizeof(ActQ8K)
                           : static_cast<size_t>(cols / kQK) * sizeof(ActQ8);
    act.resize(job.x_stride * static_cast<size_t>(n_tokens));
    uint8_t* base = act.data();
    const size_t stride = job.x_stride;
    auto quantize = [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; ++t) {
        if (k_quant)
          quantize_act_q8k(x + t * cols, reinterpret_cast<ActQ8K*>(base + t * stride), cols);
        else
          quantize_act_q8(x + t * cols, reinterpret_cast<ActQ8*>(base + t * stride), cols);
      }
    };
    if (n_tokens >= 4)
      parallel_for(pool, n_tokens, quantize);
    else
      quantize(0, n_tokens, 0);
    job.x = base;
  }

  if (!pool || rows * cols * n_tokens < kMinParallelWork) {
    fn(job, 0, rows);
    return;
  }
  // Dynamic: on a shared machine one thread is often descheduled for a while; the others
  // take over its rows instead of waiting. Rows are independent, so results do not depend
  // on which thread computes them.
  parallel_for_dynamic(
      pool, rows, [&](int64_t r0, int64_t r1, int) { fn(job, r0, r1); }, kRowGrain);
}

}  // namespace triattn::ops
