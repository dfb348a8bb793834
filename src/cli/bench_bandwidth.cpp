#include "cli/bench_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/error.h"

namespace triattn::cli {

namespace {

// Sums 64-bit words with independent accumulators so the loop is limited by loads, not by
// the add chain. SSE2 is part of x86-64, so no run-time dispatch is needed.
uint64_t sum_words(const uint64_t* p, int64_t n) {
  int64_t i = 0;
  uint64_t total = 0;
#if defined(__SSE2__)
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 8 <= n; i += 8) {
    a0 = _mm_add_epi64(a0, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i)));
    a1 = _mm_add_epi64(a1, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 2)));
    a2 = _mm_add_epi64(a2, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 4)));
    a3 = _mm_add_epi64(a3, _mm_load_si128(reinterpret_cast<const __m128i*>(p + i + 6)));
  }
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes),
                  _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3)));
  total = lanes[0] + lanes[1];
#else
  uint64_t a[4] = {0, 0, 0, 0};
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) a[j] += p[i + j];
  total = a[0] + a[1] + a[2] + a[3];
#endif
  for (; i < n; ++i) total += p[i];
  return total;
}

// Keeps the sums observable so the compiler cannot drop the reads.
volatile uint64_t g_sink = 0;

}  // namespace

BandwidthProbe measure_read_bandwidth(ThreadPool& pool, size_t bytes, int runs) {
  if (bytes < 4096) fail("bandwidth probe: buffer of ", bytes, " bytes is too small");
  if (runs < 1) fail("bandwidth probe: needs at least one run");
  const int64_t words = static_cast<int64_t>(bytes / sizeof(uint64_t)) / 8 * 8;
  // 64-byte aligned; chunks handed to threads are multiples of 8 words (64 bytes).
  std::unique_ptr<uint64_t[], void (*)(uint64_t*)> buf(
      static_cast<uint64_t*>(::operator new[](static_cast<size_t>(words) * sizeof(uint64_t), std::align_val_t(64))),
      [](uint64_t* p) { ::operator delete[](p, std::align_val_t(64)); });
  const int64_t grain = 8 * 1024;
  // Each thread first-touches the part it will read (matters on NUMA machines).
  pool.parallel_for(
      words, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i);
      },
      grain);

  std::vector<uint64_t> sums(static_cast<size_t>(pool.size()), 0);
  BandwidthProbe r;
  r.bytes = static_cast<size_t>(words) * sizeof(uint64_t);
  r.threads = pool.size();
  r.runs = runs;
  for (int run = 0; run < runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(
        words, [&](int64_t b, int64_t e, int t) { sums[t] += sum_words(buf.get() + b, e - b); }, grain);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) r.best_gbs = std::max(r.best_gbs, static_cast<double>(r.bytes) / s / 1e9);
  }
  uint64_t all = 0;
  for (uint64_t s : sums) all += s;
  g_sink = all;
  return r;
}

}  // namespace triattn::cli
