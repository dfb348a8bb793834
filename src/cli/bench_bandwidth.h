#pragma once
// The machine's achievable memory read bandwidth, measured the way decode reads memory:
// several threads each stream through their share of a buffer far larger than the caches.
// Decode is bandwidth-bound, so this is the roofline `triattn bench` compares against.
#include <cstddef>

#include "core/thread_pool.h"

namespace triattn::cli {

struct BandwidthProbe {
  double best_gbs = 0;  // best run, 1e9 bytes per second
  size_t bytes = 0;     // buffer size read per run
  int threads = 0;
  int runs = 0;  // runs behind best_gbs (bench adds up its repeated probes)
};

// Reads a `bytes` buffer with every thread of `pool`, `runs` times; keeps the best run (the
// machine is shared, so the best run is the closest to what the hardware can do).
BandwidthProbe measure_read_bandwidth(ThreadPool& pool, size_t bytes, int runs);

}  // namespace triattn::cli
