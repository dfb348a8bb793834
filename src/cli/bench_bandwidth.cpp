#include "cli/bench_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "core/error.h"
#include "core/large_buffer.h"

namespace triattn::cli {

namespace {

// Sums 64-bit words as kStreams interleaved streams (the range cut in kStreams parts read
// side by side), each with a software prefetch ahead, so the loop is limited by memory, not
// by the add chain or by how many misses one hardware-prefetched stream keeps in flight.
// Four prefetched streams read faster than one plain stream per thread (docs/benchmarks.md,
// "What the figures mean"); the decode kernels read weights the same way (ops/x86_matmul.inl),
// so the probe must too or decode would look better than "the machine". SSE2 is part of
// x86-64, so no run-time dispatch is needed.
constexpr int kStreams = 4;
constexpr int64_t kPrefetchWords = 256;  // 2 KB ahead

uint64_t sum_words(const uint64_t* p, int64_t n) {
  const int64_t part = n / kStreams / 8 * 8;
  uint64_t total = 0;
#if defined(__SSE2__)
  __m128i acc[kStreams][2];
  for (auto& a : acc) a[0] = a[1] = _mm_setzero_si128();
  for (int64_t i = 0; i < part; i += 8) {
    for (int s = 0; s < kStreams; ++s) {
      const uint64_t* q = p + s * part + i;
      _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchWords), _MM_HINT_T0);
      const __m128i* v = reinterpret_cast<const __m128i*>(q);
      acc[s][0] = _mm_add_epi64(acc[s][0], _mm_add_epi64(_mm_load_si128(v), _mm_load_si128(v + 1)));
      acc[s][1] = _mm_add_epi64(acc[s][1], _mm_add_epi64(_mm_load_si128(v + 2), _mm_load_si128(v + 3)));
    }
  }
  __m128i all = _mm_setzero_si128();
  for (auto& a : acc) all = _mm_add_epi64(all, _mm_add_epi64(a[0], a[1]));
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), all);
  total = lanes[0] + lanes[1];
#else
  for (int64_t i = 0; i < part; ++i)
    for (int s = 0; s < kStreams; ++s) total += p[s * part + i];
#endif
  for (int64_t i = kStreams * part; i < n; ++i) total += p[i];
  return total;
}

// Keeps the sums observable so the compiler cannot drop the reads.
volatile uint64_t g_sink = 0;

}  // namespace

BandwidthProbe measure_read_bandwidth(ThreadPool& pool, size_t bytes, int runs) {
  if (bytes < 4096) fail("bandwidth probe: buffer of ", bytes, " bytes is too small");
  if (runs < 1) fail("bandwidth probe: needs at least one run");
  const int64_t words = static_cast<int64_t>(bytes / sizeof(uint64_t)) / 8 * 8;
  // In huge pages where the system gives them, like the weights the decode kernels stream
  // (core/large_buffer.h): the bar is what the memory delivers, not what 4 KiB TLB misses
  // leave of it. Chunks handed to threads are multiples of 8 words (64 bytes).
  LargeBuffer storage(static_cast<size_t>(words) * sizeof(uint64_t));
  auto* buf = reinterpret_cast<uint64_t*>(storage.data());
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
        words, [&](int64_t b, int64_t e, int t) { sums[t] += sum_words(buf + b, e - b); }, grain);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) r.best_gbs = std::max(r.best_gbs, static_cast<double>(r.bytes) / s / 1e9);
  }
  uint64_t all = 0;
  for (uint64_t s : sums) all += s;
  g_sink = all;
  return r;
}

}  // namespace triattn::cli
