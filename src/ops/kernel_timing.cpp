#include "ops/kernel_timing.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>

#include "core/error.h"

namespace triattn::ops {

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// A matrix copied into one variant's layout, in its own 64-byte-aligned buffer.
struct Copy {
  std::unique_ptr<void, FreeDeleter> data;
  TensorView view;
};

Copy copy_as(const TensorView& w, DType layout) {
  TensorView v{layout, w.shape, nullptr};
  const size_t bytes = (v.nbytes() + 63) / 64 * 64;
  Copy c{std::unique_ptr<void, FreeDeleter>(std::aligned_alloc(64, bytes)), v};
  if (!c.data) fail("kernel timing: out of memory for a ", bytes, "-byte copy");
  if (layout == w.type)
    std::memcpy(c.data.get(), w.data, w.nbytes());
  else
    interleave(w, layout, c.data.get());
  c.view.data = c.data.get();
  return c;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Seconds of each pass(i) for every i < n, timed in rounds (one pass of each in turn, after
// one warm-up round) until every i has 3 passes and the rounds took min_seconds * n: a
// moment when the machine is busy then slows every variant alike instead of one of them.
template <typename Pass>
std::vector<std::vector<double>> timed_rounds(size_t n, Pass&& pass, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  for (size_t i = 0; i < n; ++i) pass(i);
  std::vector<std::vector<double>> times(n);
  const auto start = Clock::now();
  for (int round = 0; round < 1000; ++round) {
    if (round >= 3 && std::chrono::duration<double>(Clock::now() - start).count() >= min_seconds * n) break;
    for (size_t i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      pass(i);
      times[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  return times;
}

bool runs(const KernelVariant& v, const TensorView& w) {
  return w.shape[0] % interleaved_rows(v.layout) == 0 && w.shape[1] % block_size(v.layout) == 0;
}

}  // namespace

std::vector<VariantTiming> time_kernel_variants(DType type, std::span<const TensorView> matrices, ThreadPool* pool,
                                                const KernelTimingOptions& options) {
  std::vector<const TensorView*> sample;
  size_t bytes = 0;
  int64_t max_cols = 0, max_rows = 0;
  for (const TensorView& w : matrices) {
    if (w.type != type || w.shape.size() != 2) fail("kernel timing: expected 2-D ", dtype_name(type), " matrices");
    if (bytes >= options.sample_bytes) break;
    sample.push_back(&w);
    bytes += w.nbytes();
    max_cols = std::max(max_cols, w.shape[1]);
    max_rows = std::max(max_rows, w.shape[0]);
  }
  if (sample.empty()) return {};

  std::vector<KernelVariant> variants = kernel_variants(type, sample[0]->shape[0], sample[0]->shape[1]);
  std::erase_if(variants, [&](const KernelVariant& v) {
    return !std::all_of(sample.begin(), sample.end(), [&](const TensorView* w) { return runs(v, *w); });
  });
  const KernelVariant before = current_variant(type, sample[0]->shape[0], sample[0]->shape[1]);
  const Isa before_batch = current_batch_isa(type, sample[0]->shape[0], sample[0]->shape[1]);

  const int n_batch = std::max(1, options.batch_tokens);
  std::vector<float> x(static_cast<size_t>(max_cols) * n_batch), y(static_cast<size_t>(max_rows) * n_batch);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng);

  std::vector<std::vector<Copy>> copies(variants.size());
  for (size_t i = 0; i < variants.size(); ++i)
    for (const TensorView* w : sample) copies[i].push_back(copy_as(*w, variants[i].layout));
  auto pass = [&](size_t i, int64_t n_tokens) {
    use_kernel_variant(type, variants[i], variants[i].isa);
    for (const Copy& c : copies[i]) matmul(c.view, x.data(), n_tokens, y.data(), pool);
  };
  const auto decode = timed_rounds(variants.size(), [&](size_t i) { pass(i, 1); }, options.min_seconds);
  const auto batch = timed_rounds(variants.size(), [&](size_t i) { pass(i, n_batch); }, options.min_seconds);
  std::vector<VariantTiming> out;
  for (size_t i = 0; i < variants.size(); ++i) out.push_back({variants[i], median(decode[i]), median(batch[i])});
  use_kernel_variant(type, before, before_batch);
  return out;
}

KernelChoice fastest(std::span<const VariantTiming> timings, double decode_margin) {
  if (timings.empty()) fail("kernel timing: no variant was timed");
  double best_decode = timings[0].decode_s;
  for (const VariantTiming& t : timings) best_decode = std::min(best_decode, t.decode_s);
  // Among the variants within the margin of the quickest token, the quickest batch: decode
  // figures that close are the same memory traffic, while prefill can differ several-fold.
  const VariantTiming* pick = nullptr;
  for (const VariantTiming& t : timings)
    if (t.decode_s <= best_decode * (1 + decode_margin) && (!pick || t.batch_s < pick->batch_s)) pick = &t;
  KernelChoice c{pick->variant, pick->variant.isa};
  double best_batch = pick->batch_s;
  for (const VariantTiming& t : timings)
    if (t.variant.layout == c.decode.layout && t.batch_s < best_batch) {
      best_batch = t.batch_s;
      c.batch_isa = t.variant.isa;
    }
  return c;
}

}  // namespace triattn::ops
