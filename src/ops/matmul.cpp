// matmul entry points: check the operands, quantize the activations once per call into the
// form(s) the weight types' integer kernels want, and split the weight rows over the pool.
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
// Rows per scheduling unit: a multiple of every ISA's row tile and of every interleaved
// type's group, the largest Q8_0x16's 16 (so a thread's rows never cut a group).
constexpr int64_t kRowGrain = 16;

// The active table's kernel for type t, else the scalar table's (a layout the active ISA has
// no kernel of its own for: made for another ISA's kernels before a test switched ISA); for
// several tokens the measured choice's where it differs (kernel_variants.h).
MatmulRowsFn kernel_for(DType t, int64_t n_tokens = 1) {
  const KernelTable& k = active_kernels();
  if (n_tokens > 1 && k.matmul_batch[static_cast<int>(t)]) return k.matmul_batch[static_cast<int>(t)];
  if (MatmulRowsFn f = k.matmul[static_cast<int>(t)]) return f;
  return scalar_kernels().matmul[static_cast<int>(t)];
}

void check_weight(const TensorView& w, int64_t cols) {
  if (w.shape.size() != 2) fail("matmul: weight must be 2-D, got ", w.shape.size(), " dims");
  if (w.data == nullptr) fail("matmul: weight has no data");
  if (w.shape[1] != cols)
    fail("matmul: weights of one group must share the input width (", w.shape[1], " vs ", cols, ")");
  if (!kernel_for(w.type))
    fail("matmul: weight type ", dtype_name(w.type), " is not supported");
  if (cols % block_size(w.type) != 0)
    fail("matmul: ", cols, " columns is not a whole number of ", dtype_name(w.type), " blocks");
  if (w.shape[0] % interleaved_rows(w.type) != 0)
    fail("matmul: ", w.shape[0], " rows is not a whole number of ", dtype_name(w.type), " groups of ",
         interleaved_rows(w.type));
}

// The activations of n_tokens rows of x in format fmt: x itself for F32, otherwise quantized
// into `buf` (one buffer per format and thread, reused across calls: no allocation per
// token once warmed up). Returns the rows and sets *stride to their byte stride.
const uint8_t* prepare_activations(ActFormat fmt, const float* x, int64_t cols, int64_t n_tokens,
                                   std::vector<uint8_t>& buf, size_t* stride, ThreadPool* pool) {
  if (fmt == ActFormat::F32) {
    *stride = static_cast<size_t>(cols) * sizeof(float);
    return reinterpret_cast<const uint8_t*>(x);
  }
  const bool k_quant = fmt == ActFormat::Q8K;
  *stride = k_quant ? static_cast<size_t>(cols / kQKK) * sizeof(ActQ8K)
                    : static_cast<size_t>(cols / kQK) * sizeof(ActQ8);
  buf.resize(*stride * static_cast<size_t>(n_tokens));
  uint8_t* base = buf.data();
  const size_t s = *stride;
  auto quantize = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      if (k_quant)
        quantize_act_q8k(x + t * cols, reinterpret_cast<ActQ8K*>(base + t * s), cols);
      else
        quantize_act_q8(x + t * cols, reinterpret_cast<ActQ8*>(base + t * s), cols);
    }
  };
  if (n_tokens >= 4)
    parallel_for(pool, n_tokens, quantize);
  else
    quantize(0, n_tokens, 0);
  return base;
}

}  // namespace

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  const MatmulTarget one{&w, y};
  matmul_group({&one, 1}, x, n_tokens, pool);
}

void matmul_group(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens,
                  ThreadPool* pool) {
  if (n_tokens <= 0 || targets.empty()) return;
  for (const MatmulTarget& t : targets)
    if (!t.w || !t.y) fail("matmul: a target without weight or output");
  const int64_t cols = targets[0].w->shape.size() == 2 ? targets[0].w->shape[1] : 0;
  for (const MatmulTarget& t : targets) check_weight(*t.w, cols);

  // Activations per (input, format), each quantized once (one buffer per entry, reused).
  struct Prepared {
    const float* x;
    int f;
    const uint8_t* rows;
    size_t stride;
  };
  thread_local std::vector<std::vector<uint8_t>> act_tls;
  thread_local std::vector<Prepared> prepared_tls;
  std::vector<std::vector<uint8_t>>& act = act_tls;
  std::vector<Prepared>& prepared = prepared_tls;
  prepared.clear();
  auto activations = [&](const float* in, int f) -> const Prepared& {
    for (const Prepared& p : prepared)
      if (p.x == in && p.f == f) return p;
    if (act.size() <= prepared.size()) act.resize(prepared.size() + 1);
    size_t stride = 0;
    const uint8_t* rows = prepare_activations(static_cast<ActFormat>(f), in, cols, n_tokens, act[prepared.size()],
                                              &stride, pool);
    prepared.push_back({in, f, rows, stride});
    return prepared.back();
  };

  // One job per target; row offsets place every target's rows in one shared row space, each
  // target starting at a multiple of kRowGrain so that scheduling ranges never split a group
  // of interleaved rows (the few unused rows between targets cost nothing).
  // (Thread-local storage reached through references: the pool's threads must see the
  // caller's copies, not their own.)
  thread_local std::vector<MatmulJob> jobs_tls;
  thread_local std::vector<MatmulRowsFn> fns_tls;
  thread_local std::vector<int64_t> starts_tls, offsets_tls;
  std::vector<MatmulJob>& jobs = jobs_tls;
  std::vector<MatmulRowsFn>& fns = fns_tls;
  std::vector<int64_t>& starts = starts_tls;    // target i's first row in the shared space
  std::vector<int64_t>& offsets = offsets_tls;  // offsets[i + 1]: one past target i's last
  jobs.assign(targets.size(), MatmulJob{});
  fns.assign(targets.size(), nullptr);
  starts.assign(targets.size(), 0);
  offsets.assign(targets.size() + 1, 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    const TensorView& w = *targets[i].w;
    const Prepared& in = activations(targets[i].x ? targets[i].x : x, static_cast<int>(act_format(w.type)));
    MatmulJob& job = jobs[i];
    job.w = static_cast<const uint8_t*>(w.data);
    job.w_stride = w.row_stride();
    job.cols = cols;
    job.n_tokens = n_tokens;
    job.x = in.rows;
    job.x_stride = in.stride;
    job.y = targets[i].y;
    job.y_stride = w.shape[0];
    fns[i] = kernel_for(w.type, n_tokens);
    starts[i] = i == 0 ? 0 : (offsets[i] + kRowGrain - 1) / kRowGrain * kRowGrain;
    offsets[i + 1] = starts[i] + w.shape[0];
  }
  const int64_t total_rows = offsets.back();

  // Rows [r0, r1) of the shared row space, cut at the targets' boundaries.
  auto run_rows = [&jobs, &fns, &starts, &offsets](int64_t r0, int64_t r1, int) {
    for (size_t i = 0; i < jobs.size() && r0 < r1; ++i) {
      const int64_t b = std::max(r0, starts[i]), e = std::min(r1, offsets[i + 1]);
      if (b < e) fns[i](jobs[i], b - starts[i], e - starts[i]);
    }
  };
  if (!pool || total_rows * cols * n_tokens < kMinParallelWork) {
    run_rows(0, total_rows, 0);
    return;
  }
  // Dynamic: on a shared machine one thread is often descheduled for a while; the others
  // take over its rows instead of waiting. Rows are independent, so results do not depend
  // on which thread computes them.
  parallel_for_dynamic(pool, total_rows, run_rows, kRowGrain);
}

}  // namespace triattn::ops
